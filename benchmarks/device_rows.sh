#!/usr/bin/env bash
# Device call of session 15: nodes per thread along y in the 3D single-step LW-ACM kernel
# (issue #19, the 16-bit single-step bar; NOTES run 47).
#   THELMA_COMMIT=<short hash> bash benchmarks/device_rows.sh tests bench
# tests: the thread-rows GPU tests, then the other single-step GPU files (GPU ≡ NumPy).
# bench: thelma bench, lwacm-fused D3Q19 fp32 256³, fp32 records (1, 2 nodes a thread) and
#   fp16s records staged by cp.async (1, 2, 4; MIN_BLOCKS=0,4 sweeps the __launch_bounds__
#   minimum), periodic and cavity; LBM pull periodic beside.
. "$(dirname "$0")/device_setup.sh"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests gpu_tests_rows 150 4 tests/test_lwacm_thread_rows.py
      gpu_tests gpu_tests_fused 300 4 tests/test_lwacm_rec16.py tests/test_lwacm_store16.py \
        tests/test_gpu_lwacm.py tests/test_lwacm_cubic.py;;
    bench)
      timeout 240 thelma bench --compute lwacm-fused --precision float32 --store fp16s \
        --staging async --thread-rows 1,2,4 --min-blocks ${MIN_BLOCKS:-0} --sizes 256 \
        --cases periodic,cavity --json "$out/bench_rows16.json" 2>&1 | grep -v Warning \
        | tail -n 14
      timeout 150 thelma bench --compute lwacm-fused --precision float32 --store fp32 \
        --thread-rows 1,2 --sizes 256 --cases periodic,cavity \
        --json "$out/bench_rows32.json" 2>&1 | grep -v Warning | tail -n 6
      timeout 100 thelma bench --compute lbm --collision bgk --precision float32 \
        --streaming pull --sizes 256 --cases periodic --json "$out/bench_lbm.json" 2>&1 \
        | grep -v Warning | tail -n 3;;
  esac
done

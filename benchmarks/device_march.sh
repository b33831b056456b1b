#!/usr/bin/env bash
# One device call (session 12): the single-step kernel whose march advances its indices by one
# plane per step. GPU tests of the single step, then the bench of the new kernels and, with
# old_fused_kernels.py (the previous generator, an untracked copy) swapped in, the old ones.
#   bash benchmarks/device_march.sh tests bench before
out=${OUT:-/tmp/thelma-out}
. "$(dirname "$0")/device_setup.sh"
bench="python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull --sizes 256"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      THELMA_REQUIRE_GPU=1 timeout 420 python3 -m pytest -q -m "gpu and not gpus" -p no:cacheprovider \
        tests/test_gpu_lwacm.py tests/test_gpu_lwacm_open.py tests/test_gpu_lwacm_curved.py \
        tests/test_lwacm_store16.py tests/test_lwacm_rec16.py tests/test_lwacm_les.py \
        tests/test_gpu_parallel.py tests/test_gpu_run_management.py > "$out/gpu_tests_march.log" 2>&1
      echo "gpu tests status $?"; tail -n 6 "$out/gpu_tests_march.log";;
    bench)
      timeout 200 $bench --compute lbm,lwacm-fused --cases periodic,cavity --store fp32,fp16s \
        --staging registers,async --json "$out/bench_march.json" | tail -n 12
      timeout 100 $bench --compute lwacm-fused --cases periodic --les none,smagorinsky \
        --json "$out/bench_march_les.json" | tail -n 4;;
    before)
      cp old_fused_kernels.py modules/compute/lwacm/fused_kernels.py
      THELMA_COMMIT="$THELMA_COMMIT-before" timeout 200 $bench --compute lwacm-fused \
        --cases periodic,cavity --store fp32,fp16s --staging registers,async \
        --json "$out/bench_march_before.json" | tail -n 8
      git checkout modules/compute/lwacm/fused_kernels.py 2>/dev/null;;
  esac
done

#!/usr/bin/env bash
# LW-ACM open boundaries and forces (issue #18) on the device, from the repo root:
#   bash benchmarks/device_lwopen.sh [tests] [bench] [st]           (default: all three)
# tests: the GPU = NumPy tests of the open arms (tests/test_gpu_lwacm_open.py, D2Q9 and D3Q19:
#        16 cases, ~1 min; D3Q27 too with: pytest -m gpu tests/test_gpu_lwacm_open.py)
# bench: thelma bench D3Q19 fp32, 256^3, lbm (bgk pull, aa; free slip refuses aa) and lwacm-fused on periodic, obstacles and
#        slip-obstacles (inlet -z, outlet +z, free-slip sides, sphere D = 64), then the single
#        step again with __launch_bounds__(256, 4) on periodic and slip-obstacles (~90 s);
# st:    Schaefer-Turek 2D-1 at 40 nodes per diameter: lbm (interpolated and staircase cylinder),
#        lwacm and lwacm-fused (staircase): c_D, c_L, dp, steps, MLUPS (80 s budget, 20 s a run: the JSON says whether each reached steady).
# Expected total: about 4 minutes (the timeouts cap it at 7). Results in $OUT (fallback ./out): lwopen_gpu_tests.log,
# bench_lwopen.json, st_lwopen.json, lwopen_summary.json. No plot needed (tables); the summary
# can be printed again on a CPU: python benchmarks/lwopen_summary.py OUT
. "$(dirname "$0")/device_setup.sh"
parts=("$@"); [ ${#parts[@]} -gt 0 ] || parts=(tests bench st)
for part in "${parts[@]}"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests lwopen_gpu_tests 150 5 -k "not D3Q27" tests/test_gpu_lwacm_open.py;;
    bench)
      timeout 120 python3 -m thelma_py.tools.bench --compute lbm,lwacm-fused --lattice D3Q19 \
        --collision bgk --streaming pull,aa --precision float32 --sizes 256 \
        --cases periodic,obstacles,slip-obstacles --json "$out/bench_lwopen.json" \
        > "$out/bench_lwopen.log" 2>&1
      echo "bench status $?"; tail -n 12 "$out/bench_lwopen.log"
      # the open arms raise the single step from 58 to 78 registers (ptxas, sm_90): 4 blocks
      # per SM fit with __launch_bounds__(256, 4) at 64 registers, 76 B of spills
      timeout 60 python3 -m thelma_py.tools.bench --compute lwacm-fused --lattice D3Q19 \
        --precision float32 --sizes 256 --cases periodic,slip-obstacles --min-blocks 4 \
        --json "$out/bench_lwopen_mb4.json" > "$out/bench_lwopen_mb4.log" 2>&1
      echo "bench min-blocks 4 status $?"; tail -n 4 "$out/bench_lwopen_mb4.log";;
    st)
      timeout 110 python3 benchmarks/lwopen_st.py --n 40 --budget 80 --out "$out/st_lwopen.json"
      echo "st status $?";;
    *) echo "unknown part $part (tests, bench, st)";;
  esac
done
echo "=== summary"
python3 benchmarks/lwopen_summary.py "$out"

#!/usr/bin/env bash
# LW-ACM curved walls (issue #18 item 2) on the device, from the repo root:
#   bash benchmarks/device_curved.sh [tests] [st]                      (default: both)
# tests: GPU = NumPy of both LW-ACM schemes with interpolated bodies (moving and at rest, with
#        and without inlet/outlet), D2Q9, D3Q19 and D3Q27, fp32 and fp64, forces included
#        (tests/test_gpu_lwacm_curved.py: 24 cases, ~1 min; cap 90 s);
# st:    Schäfer–Turek 2D-1 at n = 20 and 40, fp64: lbm (TRT, Bouzidi), lwacm and lwacm-fused
#        with curved walls, lwacm-fused with the staircase: c_D, c_L, dp against LBM, steps,
#        MLUPS (budget 130 s shared ∝ n², cap 160 s; the JSON says whether each run reached
#        steady). Earlier GPU reference, LBM TRT interpolated: c_D 5.6397 (n 20), 5.5942 (n 40).
# Expected total: under 4 minutes (timeouts cap it at 4.5). Results in $OUT (fallback ./out):
# curved_gpu_tests.log, st_curved.json, device_curved.log. No plot (a table); print it again
# on a CPU:  python benchmarks/curved_st.py --summary OUT/st_curved.json
. "$(dirname "$0")/device_setup.sh"
parts=("$@"); [ ${#parts[@]} -gt 0 ] || parts=(tests st)
start=$SECONDS
for part in "${parts[@]}"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests curved_gpu_tests 90 5 tests/test_gpu_lwacm_curved.py;;
    st)
      timeout 160 python3 benchmarks/curved_st.py --n 20 40 --budget 130 \
        --out "$out/st_curved.json"
      echo "st status $?";;
    *) echo "unknown part $part (tests, st)";;
  esac
done 2>&1 | tee -a "$out/device_curved.log"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_curved.log"

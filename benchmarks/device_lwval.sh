#!/usr/bin/env bash
# LW-ACM validation (issue #18 item 4) on one H100, from the repository root:
#   bash benchmarks/device_lwval.sh [cyl40] [cyl20] [mach] [sphere]     (default: all four)
# cyl40:  Schäfer–Turek 2D-2 at n = 40, fp64, curved cylinder: LBM TRT (u_max 0.05) and both
#         LW-ACM schemes (u_max = n/800 = 0.05), 36 nominal periods (144 000 steps) each,
#         c_D, c_L sampled 100 times a period; each run capped at 33 s (it keeps its samples
#         and says stopped_at); the part at 110 s.
# cyl20:  the same at n = 20 (LBM u_max 0.05: 72 000 steps; LW-ACM u_max 0.025: 144 000),
#         capped at 18 s a run, 60 s the part.
# mach:   LW-ACM single step at n = 40 with u_max 0.025 and 0.0125 (u_max / c_a 0.22, 0.15;
#         8000 and 16 000 steps a period) and at n = 20 with u_max 0.05 (0.43): what LW-ACM's
#         u / c_a does to St (on the CPU at n = 10: St 0.2796 / 0.2916 / 0.2995 at u_max / c_a
#         0.61 / 0.43 / 0.31). Capped at 24, 24, 12 s a run, 72 s the part.
# sphere: the sphere of docs/validation/flows.md (d = 16, 15d x 7d x 7d, periodic sides,
#         equilibrium faces), fp32, 15 + 5 d/U, Re 20 and 100: LBM TRT (interpolated), LW-ACM
#         single step and two-step with the curved sphere; at Re 100 also the single step at
#         U = 0.025 (u/c_a 0.28 instead of 0.40). Capped at 16 s a run (compiles
#         included), 48 + 48 + 20 s.
# Expected: ~4-5 min; the timeouts cap it at 6 min. Results in $OUT (fallback ./out):
# lwval_2d2*.json, flows_sphere*_lwval*.json, device_lwval.log, and the tables of
#   python benchmarks/lwval.py summary "$out"
# printed at the end (run it again on a CPU). Figure of c_L on a CPU (needs matplotlib):
#   python benchmarks/lwval.py plot OUT_DIR        -> OUT_DIR/lwval_2d2.png
set -o pipefail
export PYTHONUNBUFFERED=1
out=${OUT:-./out}; mkdir -p "$out"
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 \
  || python3 -m pip install --no-build-isolation --no-deps -e .
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
parts=("$@"); [ ${#parts[@]} -gt 0 ] || parts=(cyl40 cyl20 mach sphere)
cyl="python3 benchmarks/lwval.py cylinder --device cuda --precision float64 --out $out"
flows="python3 -m thelma_py.tools.flows sphere --d 16 --transient 15 --average 5"
on="--device cuda --precision float32 --max-seconds 16 --out $out"
start=$SECONDS
for part in "${parts[@]}"; do
  echo "=== $part $(date +%T)"
  case $part in
    cyl40) timeout 110 $cyl --n 40 --max-seconds 33 --tag _n40;;
    cyl20) timeout 60 $cyl --n 20 --max-seconds 18 --tag _n20;;
    mach)
      timeout 28 $cyl --n 40 --schemes lwacm-fused --u-max 0.025 --max-seconds 24 \
        --tag _n40u025
      timeout 28 $cyl --n 40 --schemes lwacm-fused --u-max 0.0125 --max-seconds 24 \
        --tag _n40u0125
      timeout 16 $cyl --n 20 --schemes lwacm-fused --u-max 0.05 --max-seconds 12 --tag _n20u05;;
    sphere)
      timeout 48 $flows --reynolds 20 --schemes trt,lwacm-fused-curved,lwacm-curved \
        --tag _lwval $on
      timeout 48 $flows --reynolds 100 --schemes trt,lwacm-fused-curved,lwacm-curved \
        --tag _lwval $on
      timeout 20 $flows --reynolds 100 --u 0.025 --schemes lwacm-fused-curved \
        --tag _lwval_u025 $on;;
    *) echo "unknown part $part (cyl40, cyl20, mach, sphere)";;
  esac
  echo "$part status $?"
done 2>&1 | grep -v Warning | tee -a "$out/device_lwval.log"
python3 benchmarks/lwval.py summary "$out" | tee "$out/lwval_summary.md"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_lwval.log"

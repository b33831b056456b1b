#!/usr/bin/env bash
# LW-ACM validation (issue #18 item 4) on one H100, from the repository root:
#   bash benchmarks/device_lwval.sh [cyl40] [cyl20] [mach] [sphere]     (default: all four)
# Schäfer–Turek 2D-2, fp64, curved cylinder, c_D and c_L 100 times a nominal period, measured
# over the second half of each run; each run stops itself after --max-seconds (compile
# included) at a whole period, keeping its samples (the JSON says stopped_at), and each
# command is also capped by `timeout`. LW-ACM's u_max is n / 3200 (u_max / c_a = 0.153;
# cylinder_2d2.lwacm_u_max: its St falls by ~28 % (u_max / c_a)², measured on the CPU).
# cyl40:  n = 40: LBM TRT, u_max 0.05, 36 periods (144 000 steps), cap 30 s; LW-ACM two-step
#         and single step, u_max 0.0125, 30 periods (480 000 steps), caps 40 and 35 s.
# cyl20:  n = 20: LBM 0.05 (72 000 steps, cap 15 s); LW-ACM single step and two-step at
#         u_max 0.00625 (480 000 steps of 36 000 nodes, caps 18 and 20 s; the CPU gave St
#         0.2993 for the single step over 20 periods).
# mach:   n = 40, single step at u_max 0.05 and 0.025 (u_max / c_a 0.31, 0.22; caps 14, 22 s):
#         with cyl40's 0.0125, St against (u_max / c_a)² and its extrapolation to 0 (CPU at
#         n = 20: 0.2929, 0.2969, 0.2993 at 0.025, 0.0125, 0.00625 -> 0.3013; LBM 0.3011).
# sphere: the sphere of docs/validation/flows.md (d = 16, 15d x 7d x 7d, periodic sides,
#         equilibrium faces), fp32, 15 + 5 d/U: Re 20, LBM TRT (interpolated) and LW-ACM single
#         step (curved); Re 100, the same and the two-step (curved), then the single step at
#         U = 0.025 and 0.0125 (u / c_a 0.40 at U = 0.05, 0.28, 0.20). Caps 16 s a run.
# Expected: ~4-5 min; the timeouts cap it at 6 min. Results in $OUT (fallback ./out):
# lwval_2d2*.json, flows_sphere*_lwval*.json, device_lwval.log, and the tables of
#   python benchmarks/lwval.py summary "$out"
# printed at the end (run it again on a CPU). Figure of c_L on a CPU (needs matplotlib):
#   python benchmarks/lwval.py plot OUT_DIR        -> OUT_DIR/lwval_2d2.png
. "$(dirname "$0")/device_setup.sh"
parts=("$@"); [ ${#parts[@]} -gt 0 ] || parts=(cyl40 cyl20 mach sphere)
cyl="python3 benchmarks/lwval.py cylinder --device cuda --precision float64 --out $out"
flows="python3 -m thelma_py.tools.flows sphere --d 16 --transient 15 --average 5"
on="--device cuda --precision float32 --max-seconds 16 --out $out"
start=$SECONDS
for part in "${parts[@]}"; do
  echo "=== $part $(date +%T)"
  case $part in
    cyl40)
      timeout 34 $cyl --n 40 --schemes lbm --max-seconds 30 --tag _n40_lbm
      timeout 39 $cyl --n 40 --schemes lwacm-fused --max-seconds 35 --tag _n40_fused
      timeout 44 $cyl --n 40 --schemes lwacm --max-seconds 40 --tag _n40_lwacm;;
    cyl20)
      timeout 19 $cyl --n 20 --schemes lbm --max-seconds 15 --tag _n20_lbm
      timeout 22 $cyl --n 20 --schemes lwacm-fused --max-seconds 18 --tag _n20_fused
      timeout 24 $cyl --n 20 --schemes lwacm --max-seconds 20 --tag _n20_lwacm;;
    mach)
      timeout 18 $cyl --n 40 --schemes lwacm-fused --u-max 0.05 --periods 36 \
        --max-seconds 14 --tag _n40_u05
      timeout 26 $cyl --n 40 --schemes lwacm-fused --u-max 0.025 --periods 30 \
        --max-seconds 22 --tag _n40_u025;;
    sphere)
      timeout 36 $flows --reynolds 20 --schemes trt,lwacm-fused-curved --tag _lwval $on
      timeout 50 $flows --reynolds 100 --schemes trt,lwacm-fused-curved,lwacm-curved \
        --tag _lwval $on
      timeout 20 $flows --reynolds 100 --u 0.025 --schemes lwacm-fused-curved \
        --tag _lwval_u025 $on
      timeout 20 $flows --reynolds 100 --u 0.0125 --schemes lwacm-fused-curved \
        --tag _lwval_u0125 $on;;
    *) echo "unknown part $part (cyl40, cyl20, mach, sphere)";;
  esac
  echo "$part status $?"
done 2>&1 | grep -v Warning | tee -a "$out/device_lwval.log"
python3 benchmarks/lwval.py summary "$out" | tee "$out/lwval_summary.md"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_lwval.log"

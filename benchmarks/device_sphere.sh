#!/usr/bin/env bash
# Device runs of the sphere cases (issue #17 item 5, issue #18 item 4), one H100, fp32:
#   bash benchmarks/device_sphere.sh            # from the repository root; JSON into $OUT
# Estimated ~6 min in all (compiles included; each part is capped by `timeout`, total caps
# 465 s). Every run uses the case's equilibrium inlet and outlet (the Zou-He faces grow
# disturbances below tau 0.54 / 0.52: docs/DESIGN.md, "Sphere cases: the Zou-He faces").
# 1. Re 20 and 100, d = 16 (240 x 112 x 112 = 3.0 M nodes), 20 d/U (6400 steps) each: LBM MRT
#    (interpolated sphere, and staircase) and both LW-ACM schemes (staircase): c_D against
#    Schiller-Naumann (Re 20: 2.61) and Johnson & Patel 1999 (Re 100: 1.087). ~1e11 updates.
# 2. Re 300, MRT, d = 24 (360 x 168 x 168 = 10.2 M nodes, tau 0.512), 110 d/U (52 800 steps,
#    5.4e11 updates: ~60 s at 9 000 MLUPS) with a side kick at the start so that the shedding
#    need not grow from round-off; c_D, St over the last 60 d/U (Johnson & Patel: 0.656, 0.137).
# 3. Re 3700, cumulant D3Q27, d = 32 (480 x 224 x 224 = 24 M nodes), 8 + 16 d/U (15 360 steps,
#    3.7e11 updates: ~60 s at 6 000 MLUPS); Rodriguez et al. 2011: c_D 0.394, St 0.215.
# 4. Re 10 000, cumulant, same box, 8 + 12 d/U if time is left (Achenbach 1972 c_D ~0.40).
# Results: $OUT/flows_sphere<Re>*.json, one line per run in $OUT/sphere_summary.txt. Plot on
# the CPU afterwards: python benchmarks/sphere_plot.py $OUT (PNG of c_D(t) and side forces).
set -o pipefail
export PYTHONUNBUFFERED=1
out=${OUT:-out}; mkdir -p "$out"
flows() { python3 -m thelma_py.tools.flows "$@" --device cuda --precision float32 --out "$out"; }
{
timeout 90 flows sphere --reynolds 20 --d 16 --schemes mrt,mrt-staircase,lwacm,lwacm-fused \
  --transient 15 --average 5
timeout 90 flows sphere --reynolds 100 --d 16 --schemes mrt,mrt-staircase,lwacm,lwacm-fused \
  --transient 15 --average 5
timeout 120 flows sphere --reynolds 300 --d 24 --schemes mrt --kick 0.2 --transient 50 \
  --average 60
timeout 105 flows sphere3700 --d 32 --schemes cumulant --transient 8 --average 16
timeout 60 flows sphere10000 --d 32 --schemes cumulant --transient 8 --average 12
} 2>&1 | grep -v Warning | tee "$out/sphere_summary.txt"
echo "summary: $out/sphere_summary.txt; JSON $out/flows_sphere*.json"

#!/usr/bin/env bash
# Device runs of the sphere cases (issue #17 item 5, issue #18 item 4), one H100, fp32:
#   bash benchmarks/device_sphere.sh            # from the repository root; JSON into $OUT
# At most ~7.5 min: each run stops itself after --max-seconds (keeping its samples; the JSON
# says stopped_at; compiles count), each part is also capped by `timeout` (450 s in all). ~6 min
# (estimates: D3Q19 ~9 000 MLUPS with open x faces and forces, cumulant D3Q27 ~6 000, plus
# compiles). Every run uses the case's equilibrium inlet and outlet (Zou-He faces grow
# disturbances below tau 0.54 / 0.52: docs/DESIGN.md, "Sphere cases: the Zou-He faces").
# 1. Re 20 and 100, d = 16 (240 x 112 x 112 = 3.0 M nodes), 15 + 5 d/U (6400 steps) each: LBM
#    TRT (interpolated sphere, and staircase) and both LW-ACM schemes (staircase): c_D against
#    Schiller-Naumann (Re 20: 2.61) and Johnson & Patel 1999 (Re 100: 1.087); at Re 100 also
#    MRT (TRT diverged there at d = 6 on the CPU, tau 0.509; at d = 16 tau is 0.524).
# 2. Re 300, d = 24 (360 x 168 x 168 = 10.2 M nodes, tau 0.512), MRT and TRT, 40 + 60 d/U
#    (48 000 steps, ~55 s each; capped at 50 s: ~70 d/U) with a side kick at the start so
#    that the shedding need not grow from round-off; c_D, St over the last 60 d/U (Johnson &
#    Patel: 0.656, 0.137). Then MRT at d = 16 over 50 + 100 d/U (~20 s): the resolution's
#    effect and a longer record.
# 3. Re 3700, cumulant D3Q27, d = 32 (480 x 224 x 224 = 24 M nodes), 6 + 16 d/U (14 080
#    steps, ~60 s), with the side kick (a symmetric fp64 start at d = 6 kept c_y = 0 to 1e-14
#    for 8 d/U); Rodriguez et al. 2011: c_D 0.394, St 0.215. (Re 10 000 does not fit.)
# Results: $OUT/flows_sphere<Re>*.json, the printed lines in $OUT/sphere_summary.txt. Plot and
# table on the CPU afterwards: python benchmarks/sphere_plot.py $OUT
. "$(dirname "$0")/device_setup.sh"
# `timeout` runs commands, not shell functions: the common options go last on each line
flows="python3 -m thelma_py.tools.flows"
on="--device cuda --precision float32 --out $out"
low=trt,trt-staircase,lwacm,lwacm-fused
{
timeout 90 $flows sphere --reynolds 20 --d 16 --schemes $low --transient 15 --average 5 \
  --max-seconds 18 $on
timeout 95 $flows sphere --reynolds 100 --d 16 --schemes $low,mrt --transient 15 --average 5 \
  --max-seconds 16 $on
timeout 120 $flows sphere --reynolds 300 --d 24 --schemes mrt,trt --kick 0.2 --transient 40 \
  --average 60 --max-seconds 50 $on
timeout 35 $flows sphere --reynolds 300 --d 16 --schemes mrt --kick 0.2 --transient 50 \
  --average 100 --max-seconds 22 --tag _d16 $on
timeout 110 $flows sphere3700 --d 32 --schemes cumulant --kick 0.2 --transient 6 --average 16 \
  --max-seconds 95 $on
} 2>&1 | grep -v Warning | tee "$out/sphere_summary.txt"
echo "summary: $out/sphere_summary.txt; JSON $out/flows_sphere*.json"

#!/usr/bin/env bash
# Device runs for the sphere cases' stability (issue #17 item 5), at most ~6 min on an H100:
#   bash benchmarks/device_sphere.sh            # from the repository root
# 1. sphere_wake at Re = 300 (d = 32, u = 0.05, fp32) with trt, regularized and mrt, 4000 steps each
#    (~6 d/U), the README 3D Q-criterion picture at the end, max |u| every 1000 steps:
#    shows which collision survives the impulsive start (CPU finding: bgk/mrt blow up at the
#    inlet x = 1..3 near the sphere's shadow within ~1 d/U at tau = 0.503, trt later).
# 2. flows sphere3700 with the cumulant (D3Q27) and cumulant-k17 if flows knows it, capped.
# Results: $OUT/sphere_re300_<collision>.log and images, $OUT/flows_sphere3700*.json, summary.
set -o pipefail
export PYTHONUNBUFFERED=1
out=${OUT:-out}; mkdir -p "$out"; export OUT="$out"
for coll in trt regularized mrt; do
  timeout 70 thelma run cases/sphere_wake.py --device cuda --precision float32 --quiet \
    --out "$out/re300_$coll" --every 1000 --set d=32 --set reynolds=300 --set u=0.05 \
    --set collision=$coll --steps 4000 \
    --image "view=3d field=q_criterion colour_field=speed azimuth=-60 elevation=25 distance=0.8" \
    > "$out/sphere_re300_$coll.log" 2>&1
  echo "re300 $coll rc=$? : $(tail -n 2 "$out/sphere_re300_$coll.log" | tr '\n' ' ')"
done
schemes=cumulant
python3 -c "import thelma_py.tools.flows as f, sys; sys.exit('cumulant-k17' not in f.SPHERE_SCHEMES)" \
  && schemes=cumulant,cumulant-k17
timeout 150 python3 -m thelma_py.tools.flows sphere3700 --device cuda --precision float32 \
  --out "$out" --d 32 --schemes "$schemes" --transient 8 --average 12 2>&1 \
  | tee "$out/flows_sphere3700.log" | tail -n 4
echo "summary: logs and JSON in $out (flows_sphere3700*.json); images under $out/re300_*/images"

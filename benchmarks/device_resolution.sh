#!/usr/bin/env bash
# Device calls of session 14: the sphere's St against resolution, with both faces
# characteristic (docs/validation/flows.md, section 3, session 14).
#   bash benchmarks/device_resolution.sh re3700_d40_320 re10000_d32_185 re3700_d48_520_60
# reRE_dD[_SECONDS[_AVERAGE]]: cumulant D3Q27, diameter D nodes (box 15d x 7d x 7d), side
#   kick, 10 + AVERAGE d/U (default 100), stepping capped at SECONDS (default 330; the build
#   of the box comes on top: 0.5-1 s per million nodes, hence the timeout of SECONDS + 180).
# A seventh field names the outlet kind (default characteristic; the runs before it was added
#   carry no such suffix), e.g. outflow (zero
#   gradient): re3700_d32_185_80_15,7,4_outflow.
# A sixth field, L,W,U (box length, width, upstream in d), sizes the box, e.g.
#   re3700_d32_190_80_20,7,4 (outlet 16 d behind the centre) and re3700_d32_270_80_15,10,4.
# scheme=NAME (environment; default cumulant) runs another of flows.SPHERE_SCHEMES, e.g.
#   scheme=mrt-les bash benchmarks/device_resolution.sh re3700_d40_260 (session 17); its name
#   joins the file's tag; c_s=VALUE sets its Smagorinsky constant (tag _csVALUE);
#   stations=1,2,3,5,7,9 places the wake rings (d behind the centre; tag _rings1-2-3-5-7-9).
# store=fp16s (or fp16c) keeps the populations in 16 bits (tag _fp16s), u=0.08 sets the
#   lattice velocity (default 0.05; tag _u0.08): a finer sphere in the same time (session 20).
. "$(dirname "$0")/device_setup.sh"
on="--device cuda --precision float32 --out $out"
scheme=${scheme:-cumulant}
named=$([ "$scheme" = cumulant ] || echo "_$scheme")${c_s:+_cs$c_s}${stations:+_rings${stations//,/-}}
named=$named${store:+_$store}${u:+_u$u}
for part in "$@"; do
  echo "=== $part $(date +%T)"
  IFS=_ read -r re d cap average box outlet <<< "$part"
  re=${re#re}; d=${d#d}; cap=${cap:-330}; average=${average:-100}; outlet=${outlet:-characteristic}
  timeout $((cap + 180)) python3 -m thelma_py.tools.flows sphere$re --d "$d" --schemes "$scheme" \
    --kick 0.2 --transient 10 --average "$average" --max-seconds "$cap" --inlet characteristic \
    --outlet "$outlet" --tag "${named}_char_d$d${box:+_box${box//,/x}}_$outlet" \
    ${box:+--box "$box"} ${c_s:+--c-s "$c_s"} ${stations:+--stations "$stations"} \
    ${store:+--store "$store"} ${u:+--u "$u"} $on 2>&1 | grep -v Warning
done

#!/usr/bin/env bash
# Schaefer-Turek 2D-1 (Re 20, D2Q9, fp64) on the device, issue #18 (stacc), from the repo root:
#   bash benchmarks/device_stacc.sh
# At n = 20 and 40: lbm (TRT, Bouzidi), lwacm and lwacm-fused (curved walls) on the benchmark's
# geometry (LW-ACM: 22 n nodes, cylinder at 2 n - 1/2, since its inlet and outlet lie half a
# spacing beyond the end nodes), and lwacm-fused on LBM's grid (same_grid: the cylinder half a
# spacing further from the inlet, the comparison of the last session). Then, at n = 40, the
# cylinder's place on the grid (--placement): lbm with the cylinder between nodes, as
# LW-ACM's, half a spacing further from / closer to the inlet, and lwacm-fused on LBM's grid
# one spacing closer (their means: each scheme on the other's placement, inlet 2 n away).
# Each run stops when its drag is steady (spread 1e-6 over 40 samples) or after 24 s (n = 20)
# / 33 s (n = 40), building included; the JSON says which, and is written after every run.
# Expected: about 3.3 minutes (n = 40 runs reached steady in 10-25 s on the H100 last
# session); timeout 235 s bounds it (the last placement run is the one cut, if any).
# Results in $OUT (fallback ./out): st_stacc.json, device_stacc.log. No plot (a table); print
# it again on a CPU:  python benchmarks/curved_st.py --summary OUT/st_stacc.json
. "$(dirname "$0")/device_setup.sh"
start=$SECONDS
{
  timeout 235 python3 benchmarks/curved_st.py --n 20 40 --seconds 24 33 --placement 40 \
    --out "$out/st_stacc.json"
  echo "st status $?"
} 2>&1 | tee -a "$out/device_stacc.log"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_stacc.log"

#!/usr/bin/env bash
# Schaefer-Turek 2D-1 (Re 20, D2Q9, fp64, curved cylinder) on the device, issue #18: is LW-ACM's
# c_L offset from LBM (-1.19 % at n = 40, u_max = 1/n) a compressibility error or a grid error?
#   bash benchmarks/device_stu.sh
# n = 40 at u_max = 0.0125 and 0.00625 (LBM TRT and the single step, benchmark geometry), then
# n = 80 at its diffusive u_max = 0.0125. Each run stops when its drag is steady (spread 1e-6
# over 40 samples) or at its cap; the JSON says which and is written after every run.
# Expected: ~7 min (n = 40 at 0.025 took 8 s LBM, 19 s single step last session).
# Results in $OUT: st_u40.json, st_n80.json, device_stu.log; the tables again on a CPU with
#   python benchmarks/curved_st.py --summary OUT/st_u40.json
. "$(dirname "$0")/device_setup.sh"
start=$SECONDS
{
  timeout 250 python3 benchmarks/curved_st.py --n 40 --u-max 0.0125 0.00625 --seconds 85 \
    --out "$out/st_u40.json"
  echo "u40 status $?"
  timeout 330 python3 benchmarks/curved_st.py --n 80 --u-max 0.0125 --seconds 190 \
    --out "$out/st_n80.json"
  echo "n80 status $?"
} 2>&1 | tee -a "$out/device_stu.log"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_stu.log"

#!/usr/bin/env bash
# One device call (session 13): the sphere's shedding from rings of wake probes, and where the
# 16-bit AA kernel loses against 16-bit pull.
#   bash benchmarks/device_shedding.sh sphere3700 sphere10000 ncu16
# sphere*: cumulant D3Q27, d = 32 (480 x 224 x 224), side kick, 10 + 100 d/U, capped at 200 s
#   each; the JSON keeps every probe's series (32 probes: rings of 8 at 1, 2, 3, 5 d behind
#   the centre, 0.6 d off the axis) for the spectra (benchmarks/sphere_spectra.py).
# ncu16: Nsight Compute of fp16s AA (even and odd kernel) and fp16s pull, D3Q19 BGK periodic
#   256^3: throughput, occupancy, registers and warp stall reasons, into $out/ncu_*.txt.
. "$(dirname "$0")/device_setup.sh"
flows="python3 -m thelma_py.tools.flows"
on="--device cuda --precision float32 --out $out"
sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
  --section Occupancy --section LaunchStats --section SchedulerStats"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    sphere3700|sphere10000)
      timeout 260 $flows $part --d 32 --schemes cumulant --kick 0.2 --transient 10 \
        --average 100 --max-seconds 200 --tag _rings $on 2>&1 | grep -v Warning;;
    ncu16)
      for streaming in aa pull; do
        timeout 120 ncu --clock-control none -k regex:lbm_step --launch-skip 8 \
          --launch-count 2 $sections python3 benchmarks/profile_kernel.py --case periodic \
          --size 256 --streaming $streaming --store fp16s --collision bgk \
          --precision float32 > "$out/ncu_${streaming}_fp16s.txt" 2>&1
        echo "ncu $streaming status $?"
        grep -E "lbm_step|DRAM Throughput|Achieved Occupancy|Registers Per|Duration" \
          "$out/ncu_${streaming}_fp16s.txt" | head -n 16
      done;;
  esac
done

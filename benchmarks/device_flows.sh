#!/usr/bin/env bash
# Turbulent validation runs of issue #17 on one GPU (H100), one part per device call
# (each part stays under the 10-minute limit of a call):
#   bash benchmarks/device_flows.sh tgv              # ~4 min: 5 schemes x 64^3,128^3,256^3 to t*=20
#   bash benchmarks/device_flows.sh channel          # ~2 min: Re_tau 180, h = 32, cumulant D3Q27
#   bash benchmarks/device_flows.sh sphere3700       # ~3 min: d = 32, 75 d/U, cumulant D3Q27
#   bash benchmarks/device_flows.sh sphere10000      # ~3 min: the same at Re = 10 000
#   bash benchmarks/device_flows.sh tgv-nosgs        # ~2 min: LBM BGK/MRT without LES (runs before the merge)
# Writes flows_<part>.json (and a log) into $OUT (default ./out); plots on a CPU afterwards:
#   python benchmarks/flows_plot.py OUT_DIR   (writes docs/validation/flows_*.png)
# The LES ("les=") and cumulant schemes need the les, lwacm and cumulant branches merged; a
# scheme that cannot be built is recorded with its error and the others still run.
. "$(dirname "$0")/device_setup.sh"
flows="python3 -m thelma_py.tools.flows --device cuda --precision float32 --out $out"
[ $# -gt 0 ] || set -- tgv
for part in "$@"; do
  echo "=== $part $(date +%T)"; start=$SECONDS
  case $part in
    tgv) timeout 560 $flows tgv --sizes 64,128,256 2>&1 | tee "$out/flows_tgv.log";;
    tgv-nosgs) timeout 560 $flows tgv --sizes 64,128,256 --schemes lbm-bgk,lbm-mrt \
                 --tag _nosgs 2>&1 | tee "$out/flows_tgv_nosgs.log";;
    channel) timeout 560 $flows channel --h 32 --transient 50 --average 30 \
               2>&1 | tee "$out/flows_channel.log";;
    sphere3700|sphere10000) timeout 560 $flows "$part" --d 32 --transient 25 --average 50 \
               2>&1 | tee "$out/flows_$part.log";;
    *) echo "unknown part $part (tgv, tgv-nosgs, channel, sphere3700, sphere10000)";;
  esac
  echo "=== $part done in $((SECONDS - start)) s"
done

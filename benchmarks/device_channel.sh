#!/usr/bin/env bash
# Issue #17, channel at Re_tau 180 on one H100: h = 32 (64 nodes across, 201 x 64 x 101),
# fp32, runs of 50 eddy turnovers h/u_tau (30 transient + 20 averaged; at u_tau 0.0035
# 25 + 15 to keep the steps alike). Session 5's cumulant run had reached its final profile
# within ~1 % by turnover 30. Variants, most likely first:
#   k17          cumulant-k17: Geier et al. 2017's parametrized cumulant, limiter 0.01,
#                u_tau 0.005 (centre Mach 0.16), 320,000 steps                     ~50 s
#   k17-lowma    the same at u_tau 0.0035 (Mach 0.11), 365,700 steps               ~55 s
#   k17-strong   cumulant-k17-strong: limiter 0.001 (more third-order damping)      ~50 s
#   cum-lowma    (not in the default set) plain cumulant, u_tau 0.0035: Mach alone  ~45 s
# Expected ~3 min for the default set with start-up and kernel compilation (the plain
# cumulant ran at 9.7 GLUPS at this size; K17 assumed 8-9). Each run is capped at
# --max-seconds 80 (it then stops and keeps the samples it has, and says so), so the
# default set cannot exceed ~5 min. Each variant writes flows_channel_<variant>.json (U+(y+),
# measured Re_tau, history) into $OUT (default ./out) and prints one line; a failed or
# diverged variant is recorded and the others still run; the last lines are the summary (U+
# at y+ 5, 14, 30, 100 and the centre against MKM, and whether each run meets the bar).
# On a CPU afterwards:
#   python -m thelma_py.tools.flows channel-summary --out OUT_DIR   (the same summary)
#   python benchmarks/flows_plot.py OUT_DIR    (table; docs/validation/flows_channel.png)
# Run:  bash benchmarks/device_channel.sh [variant ...]
. "$(dirname "$0")/device_setup.sh"
export PYTHONWARNINGS=ignore
flows="python3 -m thelma_py.tools.flows channel --device cuda --precision float32 --h 32"
flows="$flows --max-seconds 80 --out $out"
long="--u-tau 0.005 --transient 30 --average 20"
low="--u-tau 0.0035 --transient 25 --average 15"
[ $# -gt 0 ] || set -- k17 k17-lowma k17-strong
start=$SECONDS
for variant in "$@"; do
  case $variant in
    k17) args="--schemes cumulant-k17 $long";;
    k17-lowma) args="--schemes cumulant-k17 $low";;
    k17-strong) args="--schemes cumulant-k17-strong $long";;
    cum-lowma) args="--schemes cumulant $low";;
    *) echo "unknown variant $variant (k17, k17-lowma, k17-strong, cum-lowma)"; continue;;
  esac
  echo "=== $variant $(date +%T)"
  timeout 120 $flows $args --tag "_$variant" 2>&1 | tee -a "$out/device_channel.log"
done
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_channel.log"
python3 -m thelma_py.tools.flows channel-summary --out "$out" 2>&1 \
  | tee -a "$out/device_channel.log"

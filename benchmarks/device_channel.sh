#!/usr/bin/env bash
# Issue #17, channel at Re_tau 180 on one H100: h = 32 (64 nodes across, 201 x 64 x 101),
# fp32, 30 eddy turnovers h/u_tau of transient then 20 of averaging (session 5's cumulant run
# had reached its final profile within ~1 % by turnover 30). Variants, most likely first:
#   k17          cumulant-k17: Geier et al. 2017's parametrized cumulant, limiter 0.01,
#                u_tau 0.005 (centre Mach 0.16)                                       ~55 s
#   k17-lowma    the same at u_tau 0.0035 (Mach 0.11; 1.43 x the steps)              ~75 s
#   k17-strong   cumulant-k17-strong: limiter 0.001 (more third-order damping)       ~55 s
#   cum-lowma    (not in the default set) plain cumulant at u_tau 0.0035: Mach alone  ~65 s
# Default set ~3.5 min with start-up and kernel compilation (estimate: cumulant measured
# 9.7 GLUPS at this size in session 5, K17 assumed 7-9). Each variant writes
# flows_channel_<variant>.json (U+(y+), measured Re_tau, its history) into $OUT (default
# ./out) and prints one line; a failed or diverged variant is recorded, the others still run;
# the last lines are the summary (U+ at y+ 5, 14, 30, 100 and the centre against MKM, and
# whether each run meets the bar). On a CPU afterwards:
#   python -m thelma_py.tools.flows channel-summary --out OUT_DIR   (the same table)
#   python benchmarks/flows_plot.py OUT_DIR    (docs/validation/flows_channel.png, all runs)
# Run:  bash benchmarks/device_channel.sh [variant ...]
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
out=${OUT:-./out}; mkdir -p "$out"
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 \
  || python3 -m pip install --no-build-isolation --no-deps -e .
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
flows="python3 -m thelma_py.tools.flows channel --device cuda --precision float32 --h 32"
flows="$flows --transient 30 --average 20 --out $out"
[ $# -gt 0 ] || set -- k17 k17-lowma k17-strong
start=$SECONDS
for variant in "$@"; do
  case $variant in
    k17) args="--schemes cumulant-k17 --u-tau 0.005";;
    k17-lowma) args="--schemes cumulant-k17 --u-tau 0.0035";;
    k17-strong) args="--schemes cumulant-k17-strong --u-tau 0.005";;
    cum-lowma) args="--schemes cumulant --u-tau 0.0035";;
    *) echo "unknown variant $variant (k17, k17-lowma, k17-strong, cum-lowma)"; continue;;
  esac
  echo "=== $variant $(date +%T)"
  timeout 150 $flows $args --tag "_$variant" 2>&1 \
    | tee -a "$out/device_channel.log"
done
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_channel.log"
python3 -m thelma_py.tools.flows channel-summary --out "$out" 2>&1 \
  | tee -a "$out/device_channel.log"

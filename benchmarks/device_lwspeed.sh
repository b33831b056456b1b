#!/usr/bin/env bash
# One device call: where the single-step LW-ACM loses speed with open boundaries (issue #18's
# slip-obstacle bar), and ncu sections of its kernel in that case and the periodic box.
#   bash benchmarks/device_lwspeed.sh            (about 4 minutes on an H100)
out=${OUT:-/tmp/thelma-out}
. "$(dirname "$0")/device_setup.sh"
timeout 300 python3 benchmarks/lwopen_speed.py --min-blocks 0 ${LWSPEED_ARGS:-} \
  --json "$out/lwopen_speed.json"
if [ -z "${LWSPEED_NO_NCU:-}" ] && command -v ncu >/dev/null; then
  for case in slip-obstacles periodic; do
    timeout 120 ncu --clock-control none -k regex:lwacm_fused_step --launch-skip 6 \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section InstructionStats --section LaunchStats --section SchedulerStats \
      python3 benchmarks/profile_kernel.py --compute lwacm-fused --case $case --size 256 \
      > "$out/ncu_$case.txt" 2>&1
    grep -E "Registers|Achieved Occupancy|Theoretical Occupancy|Executed Ipc|Issued Warp|Warp Cycles Per Issued|Duration|DRAM Throughput|Executed Instructions  " "$out/ncu_$case.txt"
  done
fi

# Sourced first by every benchmarks/device_*.sh (`. "$(dirname "$0")/device_setup.sh"`):
# strict pipelines, unbuffered Python, the output folder $out (a preset $out, else the device
# machine's $OUT, else ./out), this tree installed into the device's Python (no dependencies:
# CuPy and NumPy are there) and the GPU named with its clocks.
set -o pipefail
export PYTHONUNBUFFERED=1
out=${out:-${OUT:-./out}}; mkdir -p "$out"
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 \
  || python3 -m pip install --no-build-isolation --no-deps -e .
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader

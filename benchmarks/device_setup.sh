# Sourced first by every benchmarks/device_*.sh (`. "$(dirname "$0")/device_setup.sh"`):
# strict pipelines, unbuffered Python, the output folder $out (a preset $out, else the device
# machine's $OUT, else ./out), THELMA_COMMIT, this tree installed into the device's Python
# (no dependencies: CuPy and NumPy are there) and the GPU named with its clocks.
set -o pipefail
export PYTHONUNBUFFERED=1
out=${out:-${OUT:-./out}}; mkdir -p "$out"
# the commit this tree is a copy of, for the data files (the device's .git can be older): a
# preset THELMA_COMMIT, else .commit (written before the call: git rev-parse --short HEAD).
# .commit is an ignored file: session 14 found a stale one on the device (a bench recorded
# 61adfb6 for a tree of 979f0a8), so give the commit in the command instead:
#   THELMA_COMMIT=<short hash> bash benchmarks/device_....sh ...
[ -n "${THELMA_COMMIT:-}" ] || [ ! -f .commit ] || export THELMA_COMMIT=$(cat .commit)
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 \
  || python3 -m pip install --no-build-isolation --no-deps -e .
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader

# gpu_tests LOG SECONDS LINES PYTEST_ARGS...: the GPU tests named by PYTEST_ARGS (a GPU
# required, at most SECONDS) into $out/LOG.log, then their exit status and the log's last LINES
# lines. Usage: gpu_tests curved_gpu_tests 90 5 tests/test_gpu_lwacm_curved.py
gpu_tests() {
  local log=$1 seconds=$2 lines=$3
  shift 3
  THELMA_REQUIRE_GPU=1 timeout "$seconds" python3 -m pytest -q -m gpu -p no:cacheprovider "$@" \
    > "$out/$log.log" 2>&1
  echo "gpu tests status $? ($log)"; tail -n "$lines" "$out/$log.log"
}

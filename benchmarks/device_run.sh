#!/usr/bin/env bash
# One device call: install, GPU tests, benchmark. Usage on the device machine (repo root):
#   bash benchmarks/device_run.sh [tests|bench|all] [extra bench args...]
# (vtk and matplotlib are not needed there: GPU tests and the bench import neither.)
set -o pipefail
export PYTHONUNBUFFERED=1
what=${1:-all}; shift || true
out=${OUT:-/tmp/thelma-out}; mkdir -p "$out"
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || python3 -m pip install --no-build-isolation --no-deps -e .
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
if [ "$what" = tests ] || [ "$what" = all ]; then
  THELMA_REQUIRE_GPU=1 python3 -m pytest -q -m gpu -p no:cacheprovider tests/ 2>&1 | tee "$out/gpu_tests.log" | tail -n 40
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 -m thelma_py.bench --json "$out/bench.json" "$@" 2>&1 | tee "$out/bench.log"
fi

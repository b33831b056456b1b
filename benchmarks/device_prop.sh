#!/usr/bin/env bash
# Issue #19 items 3-4 on one GPU (about 5 minutes on an H100): propagation variants and the
# closed box. Results: $OUT/prop.json (default ./out); table: python3 benchmarks/prop_table.py
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out}"
mkdir -p "$OUT"
python3 -m pytest -q -m gpu tests/test_propagation.py tests/test_wall_launch.py 2>&1 | tail -3 | tee "$OUT/prop_tests.txt"
python3 benchmarks/device_prop.py --out "$OUT/prop.json" --budget "${PROP_BUDGET:-290}"
python3 benchmarks/prop_table.py "$OUT/prop.json" > "$OUT/prop.md"

#!/usr/bin/env bash
# Issue #19 items 3-4 on one GPU (about 6 minutes on an H100): the propagation variants and the
# closed-box options, then their GPU tests. Results: $OUT/prop.json, $OUT/prop.md (tables),
# $OUT/prop_tests.txt (default OUT: ./out). The sweep stops starting configurations after
# PROP_BUDGET seconds (default 240; its plan runs by priority).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out}"
mkdir -p "$OUT"
python3 benchmarks/device_prop.py --out "$OUT/prop.json" --budget "${PROP_BUDGET:-240}"
python3 benchmarks/prop_table.py "$OUT/prop.json" > "$OUT/prop.md"
python3 -m pytest -q -m gpu tests/test_propagation.py tests/test_wall_launch.py 2>&1 \
    | tail -15 | tee "$OUT/prop_tests.txt"

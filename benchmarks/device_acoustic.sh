#!/usr/bin/env bash
# One device call (session 13): the sphere with a characteristic inlet, which lets the box's
# sound out (docs/validation/flows.md, section 3, session 13), and the GPU tests of the new
# inlet.   bash benchmarks/device_acoustic.sh tests sphere3700 sphere10000
. "$(dirname "$0")/device_setup.sh"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests gpu_tests_characteristic 120 4 tests/test_gpu_boundaries.py tests/test_gpu_sparse.py -k characteristic;;
    sphere3700|sphere10000)
      timeout 250 python3 -m thelma_py.tools.flows $part --d 32 --schemes cumulant --kick 0.2 \
        --transient 10 --average 100 --max-seconds 200 --inlet characteristic \
        --tag _rings_char --device cuda --precision float32 --out "$out" 2>&1 | grep -v Warning;;
  esac
done

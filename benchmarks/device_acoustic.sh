#!/usr/bin/env bash
# Device calls of session 13: the sphere with characteristic faces, which let the box's sound
# out (docs/validation/flows.md, section 3, session 13), and the GPU tests of the new inlet.
#   bash benchmarks/device_acoustic.sh tests sphere3700 sphere10000
# The first call ran a characteristic inlet with the equilibrium outlet (tag _rings_char);
# the script now runs both faces characteristic (_rings_char2).
. "$(dirname "$0")/device_setup.sh"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests gpu_tests_characteristic 120 4 tests/test_gpu_boundaries.py tests/test_gpu_sparse.py -k characteristic;;
    sphere3700|sphere10000)
      timeout 250 python3 -m thelma_py.tools.flows $part --d 32 --schemes cumulant --kick 0.2 \
        --transient 10 --average 100 --max-seconds 185 --inlet characteristic --outlet characteristic \
        --tag _rings_char2 --device cuda --precision float32 --out "$out" 2>&1 | grep -v Warning;;
  esac
done

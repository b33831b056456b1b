#!/usr/bin/env bash
# Device call of session 15: LBM fp16s storage collided in shifted populations (NOTES run 50).
#   THELMA_COMMIT=<short hash> bash benchmarks/device_shifted.sh bench tests
# bench: thelma bench, D3Q19 BGK 256³, pull and AA, fp32 and fp16s, periodic and cavity.
# tests: the 16-bit LBM GPU tests (GPU ≡ NumPy) and the dense GPU engine file.
. "$(dirname "$0")/device_setup.sh"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    bench)
      timeout 300 thelma bench --compute lbm --collision bgk --precision float32 \
        --streaming pull,aa --store fp32,fp16s --sizes 256 --cases periodic,cavity \
        --json "$out/bench_shifted.json" 2>&1 | grep -v Warning | tail -n 12;;
    tests)
      gpu_tests gpu_tests_shifted 240 4 tests/test_store16.py tests/test_shifted_collision.py;;
  esac
done

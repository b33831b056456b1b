#!/usr/bin/env bash
# Device call of session 14: LW-ACM with the third-order equilibrium (issue #17 item 0;
# docs/validation/lwacm_energy.md section 8, flows.md section 1).
#   bash benchmarks/device_cubic.sh tests tgv
# tests: GPU ≡ NumPy of the cubic kernels and the LW-ACM GPU file (a GPU required).
# tgv: the Re 1600 vortex with LES and the cubic part, both schemes, D3Q19 and D3Q27,
#   64³, 128³, 256³ to t* = 20 (u0/c_a = ½), fp32.
# plain: the single step without LES at 128³, second- against third-order equilibrium, at
#   u0/c_a = ½ and 0.35 (the second-order one diverged at both in session 11).
# bench: thelma bench, D3Q19 BGK fp32 256³, pull and AA, fp32 and fp16s storage.
. "$(dirname "$0")/device_setup.sh"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests gpu_tests_cubic 200 4 tests/test_lwacm_cubic.py tests/test_gpu_lwacm.py \
        tests/test_lwacm_les.py -k "gpu or cuda";;
    tgv)
      timeout 420 python3 -m thelma_py.tools.flows tgv --sizes 64,128,256 --schemes \
        lwacm-les-cubic,lwacm-fused-les-cubic,lwacm-les-cubic-q27,lwacm-fused-les-cubic-q27 \
        --tag _cubic --device cuda --precision float32 --out "$out" 2>&1 | grep -v Warning;;
    plain)
      for ratio in 0.5 0.35; do
        timeout 120 python3 -m thelma_py.tools.flows tgv --sizes 128 --schemes \
          lwacm-fused,lwacm-fused-cubic --speed-ratio $ratio --tag "_plain_cubic_$ratio" \
          --device cuda --precision float32 --out "$out" 2>&1 | grep -v Warning
      done;;
    bench)
      timeout 300 thelma bench --compute lbm --collision bgk --precision float32 \
        --streaming pull,aa --store fp32,fp16s --sizes 256 --cases periodic,cavity \
        --json "$out/bench.json" 2>&1 | grep -v Warning | tail -n 14;;
  esac
done

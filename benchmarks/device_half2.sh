#!/usr/bin/env bash
# Issue #19, the missing 16-bit pieces, on one H100 (expected: ~4 min in all):
#   tests    GPU = NumPy: lwacm-fused 16-bit records (16 cases, 8 kernels) and 16-bit LBM AA,
#            whose rho, u are now computed when asked (8 dense cases)              ~1 min
#   fused    thelma bench lwacm-fused D3Q19 256^3, periodic and cavity, fp32/fp16s/fp16c,
#            16-bit rounded to nearest and stochastically
#            (bar: >= 90,000 MLUPS periodic with 16-bit records)                   ~60 s
#   tuning   lwacm-fused fp16s, periodic 256^3: rows 8/12 x min_blocks 0/4 x chunk 8/16
#                                                                                  ~45 s
#   aa       thelma bench LBM BGK AA 256^3 periodic fp16s/fp16c (bar >= 33,000 MLUPS at
#            <= 42 B/node), then --largest: the largest fp16s AA cube for 80 GB, run ~1 min
# Parts can be run alone: bash benchmarks/device_half2.sh fused aa
# Writes JSON and logs into $OUT (default ./out) and prints a short summary. Tables on the CPU
# afterwards: python -m thelma_py.tools.bench --report OUT/half2_fused.json (and half2_aa.json)
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests fused tuning aa}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests half2_gpu_tests 150 8 tests/test_lwacm_store16.py tests/test_store16.py \
        -k "records or (gpu_16bit_equals and aa)";;
    fused)
      timeout 150 python3 -m thelma_py.tools.bench --compute lwacm-fused --precision float32 \
        --sizes 256 --cases periodic,cavity --store fp32,fp16s,fp16c \
        --rounding nearest,stochastic --json "$out/half2_fused.json" \
        | tee "$out/half2_fused.log" | tail -n 12;;
    tuning)
      timeout 90 python3 benchmarks/fused_tuning.py --size 256 --cases periodic --store fp16s \
        --rows 8,12 --min-blocks 0,4 --chunks 8,16 --out "$out/half2_fused_tuning.json" \
        | tee "$out/half2_fused_tuning.log";;
    aa)
      timeout 100 python3 -m thelma_py.tools.bench --collision bgk --precision float32 \
        --streaming aa --sizes 256 --cases periodic --store fp16s,fp16c \
        --json "$out/half2_aa.json" | tee "$out/half2_aa.log" | tail -n 4
      timeout 150 python3 -m thelma_py.tools.bench --collision bgk --precision float32 \
        --streaming aa --sizes 64 --cases periodic --store fp16s --largest \
        --memory-limit-gb 80 --json "$out/half2_largest.json" \
        | tee "$out/half2_largest.log" | tail -n 3;;
    *) echo "unknown part $part (tests fused tuning aa)";;
  esac
done

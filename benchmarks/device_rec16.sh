#!/usr/bin/env bash
# Issue #19, 16-bit single-step LW-ACM records staged by cp.async (staging=async), on one
# H100 (expected: ~4 min in all):
#   tests    GPU = NumPy with staging=async (16 cases), and async = registers staging codes
#            (6 cases, >= 99.9 % equal)                                            ~80 s
#   fused    thelma bench lwacm-fused D3Q19 256^3, periodic and cavity: fp32, and fp16s/fp16c
#            x staging registers/async x rounding nearest/stochastic (18 runs; bar: >= 90,000
#            MLUPS periodic with 16-bit records)                                   ~120 s
#   tuning   fp16s async, periodic 256^3: min_blocks 0/6 x chunk 8/16 (48 registers today:
#            5 blocks of 32 x 8 per SM; 6 would need <= 42)                        ~30 s
# Parts can be run alone: bash benchmarks/device_rec16.sh fused
# Writes JSON and logs into $OUT (default ./out) and prints a short summary. Table on the CPU
# afterwards: python -m thelma_py.tools.bench --report OUT/rec16_fused.json
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests fused tuning}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests rec16_gpu_tests 100 8 tests/test_lwacm_rec16.py;;
    fused)
      timeout 150 python3 -m thelma_py.tools.bench --compute lwacm-fused --precision float32 \
        --sizes 256 --cases periodic,cavity --store fp32,fp16s,fp16c \
        --rounding nearest,stochastic --staging registers,async \
        --json "$out/rec16_fused.json" | tee "$out/rec16_fused.log" | tail -n 20;;
    tuning)
      timeout 45 python3 benchmarks/fused_tuning.py --size 256 --cases periodic --store fp16s \
        --staging async --rows 8 --min-blocks 0,6 --chunks 8,16 \
        --out "$out/rec16_tuning.json" | tee "$out/rec16_tuning.log";;
    *) echo "unknown part $part (tests fused tuning)";;
  esac
done

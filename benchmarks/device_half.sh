#!/usr/bin/env bash
# 16-bit population storage (issue #19 items 1-2) on one GPU; expected on an H100: tests 1-2 min,
# bench ~3 min (12 configurations and three largest cubes), accuracy ~2 min. The parts can be
# run in separate calls:
#   bash benchmarks/device_half.sh            # all parts
#   bash benchmarks/device_half.sh tests bench accuracy
#   bash benchmarks/device_half.sh probe tune   # the 16-bit pull's gap to a plain kernel (~4 min)
# Writes JSON and logs into $OUT (default ./out) and prints a short summary. Plots, on the CPU
# afterwards: python benchmarks/half_plot.py OUT/half_accuracy.json --out docs/validation
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests bench accuracy}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)  # GPU ≡ NumPy for every 16-bit variant (36 cases, 1-2 min: kernel compilation)
      gpu_tests half_gpu_tests 180 15 tests/test_store16.py;;
    bench)  # D3Q19 BGK 256^3, pull and AA, periodic and closed box with lid, each store in the
      # same run; then the largest cube of each store (AA, sized for 80 GB) run for real
      timeout 270 python3 -m thelma_py.tools.bench --collision bgk --precision float32 \
        --streaming pull,aa --sizes 256 --cases periodic,cavity --store fp32,fp16s,fp16c \
        --largest --memory-limit-gb 80 --json "$out/half_bench.json" \
        | tee "$out/half_bench.log" | tail -n 20;;
    accuracy)  # format study, cavity Re 100/400/1000 at 256^2, Poiseuille order, TGV 256^3
      timeout 200 python3 benchmarks/half_accuracy.py formats cavity poiseuille tgv \
        --device cuda --out "$out/half_accuracy.json" 2>&1 | grep -v Warning \
        | tee "$out/half_accuracy.log" | tail -n 20;;
    probe)  # why fp16s pull reaches 80 % of copy and a plain kernel 91 %: variants in one run
      timeout 150 python3 benchmarks/half_probe.py --sizes 256,288 --json "$out/half_probe.json";;
    tune)  # __launch_bounds__ min-blocks for the 16-bit pull and AA kernels, 256^3
      timeout 150 python3 -m thelma_py.tools.bench --collision bgk --precision float32 \
        --streaming pull --sizes 256 --cases periodic,cavity --store fp16s --min-blocks 0,10,12 \
        --json "$out/half_tune_pull.json" | tail -n 8
      timeout 120 python3 -m thelma_py.tools.bench --collision bgk --precision float32 \
        --streaming aa --sizes 256 --cases periodic,cavity --store fp16s --min-blocks 0,6,8 \
        --json "$out/half_tune_aa.json" | tail -n 8;;
    *) echo "unknown part $part (tests bench accuracy probe tune)";;
  esac
done

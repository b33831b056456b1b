#!/usr/bin/env bash
# Cumulant D3Q27 (issue #17) on the device, from the repo root:
#   bash benchmarks/device_cumulant.sh [tests] [bench] [tgv]      (default: bench tgv)
# bench: thelma bench D3Q27 bgk/cumulant, fp32/fp64, pull/aa, 256^3 periodic and cavity (~80 s);
# tgv: cumulant TGV Re 1600, fp32, to t* = 20 at TGV_SIZES (default 64,128: ~30 s; add 256 for
# the 5 % bar, ~+40 s); tests: the GPU tests that name the cumulant model (GPU = NumPy, ~2 min).
# Results in $OUT (fallback ./out): bench_cumulant.json, tgv_cumulant.json, cumulant_summary.json.
# Plot afterwards on a CPU with matplotlib:
#   python benchmarks/tgv3d_plot.py OUT/tgv_cumulant.json docs/validation
. "$(dirname "$0")/device_setup.sh"
parts=("$@"); [ ${#parts[@]} -gt 0 ] || parts=(bench tgv)
for part in "${parts[@]}"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests cumulant_gpu_tests 300 5 -k cumulant tests;;
    bench)
      timeout 240 python3 -m thelma_py.tools.bench --lattice D3Q27 --collision bgk,cumulant \
        --precision float32,float64 --streaming pull,aa --sizes 256 --cases periodic,cavity \
        --json "$out/bench_cumulant.json" > "$out/bench_cumulant.log" 2>&1
      echo "bench status $?"; tail -n 20 "$out/bench_cumulant.log";;
    tgv)
      timeout 300 python3 benchmarks/tgv3d_gpu.py --schemes lbm-cumulant \
        --sizes "${TGV_SIZES:-64,128}" --t-end 20 --samples 200 --precision float32 \
        --out "$out/tgv_cumulant.json"
      echo "tgv status $?";;
    *) echo "unknown part $part (tests, bench, tgv)";;
  esac
done
echo "=== summary"
python3 benchmarks/cumulant_summary.py "$out/tgv_cumulant.json" "$out/bench_cumulant.json" \
  "$out/cumulant_summary.json"

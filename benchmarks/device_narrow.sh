#!/usr/bin/env bash
# Device calls of session 13: 32-bit population indices (NOTES run 44) and the sphere's box as
# an acoustic resonator.
#   bash benchmarks/device_narrow.sh bench sphere20     # one call
#   bash benchmarks/device_narrow.sh tests              # the GPU suite, another call
# bench: D3Q19 BGK 256^3, pull and AA, fp32 and fp16s, periodic and cavity, 64-bit against
#   32-bit indices, then 16-bit AA with 8 blocks per SM (64 registers).
# sphere20: Re 3700 as in device_shedding.sh in a box 20 d long instead of 15 d: the standing
#   sound waves between inlet and outlet move from St 0.192 (2m + 1) to 0.144 (2m + 1).
. "$(dirname "$0")/device_setup.sh"
bench="python3 -m thelma_py.tools.bench --compute lbm --collision bgk --precision float32 --sizes 256"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    bench)
      timeout 330 $bench --streaming pull,aa --store fp32,fp16s --cases periodic,cavity \
        --narrow 0,1 --json "$out/bench_narrow.json" | tail -n 18
      timeout 90 $bench --streaming aa --store fp16s --cases periodic,cavity --min-blocks 8 \
        --json "$out/bench_narrow_m8.json" | tail -n 3;;
    sphere20)
      timeout 280 python3 -m thelma_py.tools.flows sphere3700 --d 32 --schemes cumulant \
        --kick 0.2 --transient 10 --average 100 --max-seconds 215 --box 20,7,4 --tag _rings_l20 \
        --device cuda --precision float32 --out "$out" 2>&1 | grep -v Warning;;
    tests)
      gpu_tests gpu_tests 560 8 tests;;
  esac
done

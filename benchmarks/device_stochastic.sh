#!/usr/bin/env bash
# Stochastic rounding of 16-bit LBM populations (session 30, `Lbm(rounding='stochastic')`) on
# one H100, what the CPU could not show (expected: ~8 min in all, under the 10-minute call):
#   tests    GPU = NumPy for the option (3 cases, 120 steps) and its GPU restart case  ~1 min
#   bench    thelma bench LBM BGK D3Q19 pull 256^3, periodic and cavity, fp16s/fp16c, to
#            nearest and stochastically (NOTES run 67 predicts about -20 % on fp16s)  ~1 min
#   sphere   the Re 3700 sphere, K17, d = 40, fp16s rounded stochastically, from the validate
#            start (25 + 100 d/U, stepping capped at 295 s): does the 5-8 % drag that fp16s
#            rounded to nearest adds (flows.md, section 3, session 30) go?        ~5.5 min
#   sphere48 d = 48 in fp16s rounded stochastically, from kick 0.1 (the start of the d = 48
#            runs in fp32, St -2.4 %, and in fp16s to nearest, c_D +7.9 %): stepping for
#            what is left of 545 s since the script began (SPHERE_SECONDS to set it), at a
#            predicted ~14.5 GLUPS ~65 d/U after `tests bench`, ~100 d/U alone     the rest
# Parts can be run alone: bash benchmarks/device_stochastic.sh bench sphere
# Always give the commit: THELMA_COMMIT=<short hash> bash benchmarks/device_stochastic.sh
# Writes JSON and logs into $OUT (default ./out). Tables on the CPU afterwards:
#   python -m thelma_py.tools.bench --report OUT/stochastic_bench.json
#   python benchmarks/sphere_validate_windows.py OUT/flows_sphere3700_fp16s_sr_char_d40.json \
#       --length 47 --from 25 --every 100
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests bench sphere}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests stochastic_gpu_tests 120 6 tests/test_store16.py \
        tests/test_checkpoint_schemes.py -k stochastic;;
    bench)
      timeout 120 python3 -m thelma_py.tools.bench --compute lbm --collision bgk \
        --streaming pull --precision float32 --sizes 256 --cases periodic,cavity \
        --store fp16s,fp16c \
        --rounding nearest,stochastic --json "$out/stochastic_bench.json" \
        | tee "$out/stochastic_bench.log" | tail -n 12;;
    sphere)
      timeout 345 python3 -m thelma_py.tools.flows --device cuda --schemes cumulant-k17 \
        --d 40 --reynolds 3700 --inlet characteristic --outlet characteristic --kick 0.2 \
        --transient 25 --average 100 --store fp16s --rounding stochastic --max-seconds 295 \
        --out "$out" --tag _fp16s_sr_char_d40 sphere 2>&1 | grep -v Warning;;
    sphere48)
      timeout $((590 - SECONDS)) python3 -m thelma_py.tools.flows --device cuda \
        --schemes cumulant-k17 --d 48 --reynolds 3700 --inlet characteristic \
        --outlet characteristic --kick 0.1 --transient 25 --average 100 --store fp16s \
        --rounding stochastic --stations 1,2,3,5,7,9 \
        --max-seconds "${SPHERE_SECONDS:-$((545 - SECONDS))}" --out "$out" \
        --tag _fp16s_sr_char_d48 \
        sphere 2>&1 | grep -v Warning;;
    *) echo "unknown part $part (tests, bench, sphere, sphere48)"; exit 2;;
  esac
done

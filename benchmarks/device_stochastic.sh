#!/usr/bin/env bash
# Stochastic rounding of 16-bit LBM populations (`Lbm(rounding='stochastic')`) on one GPU, in
# calls of at most 10 minutes (sessions 31-32 ran tests, bench and sphere48; lwacm and
# sphere10000 are owed: session 33 got no device machine):
#   tests    GPU = NumPy for the option (3 cases, 120 steps) and its GPU restart case  ~1 min
#   bench    thelma bench LBM BGK D3Q19 pull 256^3, periodic and cavity, fp32 and fp16s/fp16c
#            to nearest and stochastically                                           ~1.5 min
#   sphere48 the Re 3700 sphere, K17, d = 48, fp16s rounded stochastically, from kick KICK
#            (0.1; session 32 ran 0.3: the two starts of the d = 48 fp32 runs), stepping for
#            what is left of 545 s since the script began (SPHERE_SECONDS to set it): ~65 d/U
#            after `tests bench`, ~100 d/U alone (12.7-12.8 GLUPS on an H100 or H200)  the rest
#   sphere10000  the Re 10 000 sphere, K17, d = 64, U = 0.1 (session 22's set-up, whose c_D
#            +4.0 % was rounded to nearest), rounded stochastically: ~9.7 s a d/U, 25 + 30 d/U
#            in the 535 s of stepping it is given; alone in a call. Compare its c_D over
#            25-36 d/U with the nearest run's 0.4211 (flows.md, section 3, session 32)
#   lwacm    the single-step LW-ACM records rounded stochastically since the seed words became
#            launch arguments (session 33): their GPU = NumPy and restart tests (16),
#            then thelma bench fp16s/fp16c nearest and stochastic, both stagings, periodic ~3 min
# Parts can be run alone: bash benchmarks/device_stochastic.sh sphere10000
# Always give the commit: THELMA_COMMIT=<short hash> bash benchmarks/device_stochastic.sh
# Writes JSON and logs into $OUT (default ./out). Tables on the CPU afterwards:
#   python -m thelma_py.tools.bench --report OUT/stochastic_bench.json
#   python benchmarks/sphere_validate_windows.py OUT/flows_sphere3700_fp16s_sr_char_d48.json \
#       --length 40 --from 25 --every 100
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests bench sphere48}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests stochastic_gpu_tests 120 6 tests/test_store16.py \
        tests/test_checkpoint_schemes.py -k stochastic;;
    bench)
      timeout 150 python3 -m thelma_py.tools.bench --compute lbm --collision bgk \
        --streaming pull --precision float32 --sizes 256 --cases periodic,cavity \
        --store fp32,fp16s,fp16c \
        --rounding nearest,stochastic --json "$out/stochastic_bench.json" \
        | tee "$out/stochastic_bench.log" | tail -n 12;;
    sphere48)
      timeout $((590 - SECONDS)) python3 -m thelma_py.tools.flows --device cuda \
        --schemes cumulant-k17 --d 48 --reynolds 3700 --inlet characteristic \
        --outlet characteristic --kick "${KICK:-0.1}" --transient 25 --average 100 --store fp16s \
        --rounding stochastic --stations 1,2,3,5,7,9 \
        --max-seconds "${SPHERE_SECONDS:-$((545 - SECONDS))}" --out "$out" \
        --tag "_kick${KICK:-0.1}_fp16s_sr_char_d48" \
        sphere 2>&1 | grep -v Warning;;
    lwacm)
      gpu_tests lwacm_stochastic_gpu_tests 150 8 tests/test_lwacm_rec16.py \
        tests/test_lwacm_store16.py tests/test_checkpoint_schemes.py -k stochastic
      timeout 120 python3 -m thelma_py.tools.bench --compute lwacm-fused --precision float32 \
        --sizes 256 --cases periodic --store fp32,fp16s,fp16c \
        --rounding nearest,stochastic --staging registers,async \
        --json "$out/lwacm_stochastic_bench.json" | tee "$out/lwacm_stochastic_bench.log" \
        | tail -n 20;;
    sphere10000)
      timeout 585 python3 -m thelma_py.tools.flows sphere10000 --device cuda \
        --schemes cumulant-k17 --d 64 --u 0.1 --kick 0.2 --transient 25 --average 100 \
        --max-seconds "${SPHERE_SECONDS:-535}" --inlet characteristic --outlet characteristic \
        --stations 1,2,3,5,7,9 --store fp16s --rounding stochastic --out "$out" \
        --tag _fp16s_sr_u0.1_char_d64 2>&1 | grep -v Warning;;
    *) echo "unknown part $part (tests, bench, lwacm, sphere48, sphere10000)"; exit 2;;
  esac
done

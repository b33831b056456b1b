#!/usr/bin/env bash
# Schaefer-Turek 2D-1 (Re 20, fp64) on the device, issue #18: the single step's curved-wall ghost
# weights varied (benchmarks/curved_variants.py) against LBM TRT Bouzidi.
#   bash benchmarks/device_stvar.sh places   n = 40, the cylinder at three places (shift -1/2, 0,
#                                            +1/2), then 2D-2 (Re 100, tau 0.5025 / 0.51) runs
#                                            of each new variant at n = 20, 40: ~8 min
#   bash benchmarks/device_stvar.sh final    the shipped rule (q0 = max(0.1, 3.5 nu)): n = 20, 40,
#                                            80, n = 40 at the other two places, the two-step
#                                            scheme at n = 40, then the curved GPU tests: ~6 min
# (The first call, session 10, was n = 20 and 40 at shift 0: st_variants.json.) Results in
# $OUT: st_variants_<part>.json, st_shedding.json, device_stvar.log.
. "$(dirname "$0")/device_setup.sh"
start=$SECONDS
# quadratic-0.5: the rule before session 10 (the places part ran it as "shipped" then)
variants="quadratic-0.5 quadratic-0.2 quadratic-0.1 quadratic-0.05"
{
  case "${1:-places}" in
    places)
      timeout 330 python3 benchmarks/curved_variants.py --n 40 --seconds 30 \
        --shifts -0.5 0 0.5 --variants $variants --out "$out/st_variants_places.json"
      echo "places status $?"
      timeout 200 python3 benchmarks/curved_variants.py --n 20 40 --seconds 0 0 --shifts \
        --shedding 25 30 --variants $variants --out "$out/st_shedding.json"
      echo "shedding status $?" ;;
    final)
      timeout 250 python3 benchmarks/curved_variants.py --n 20 40 80 --seconds 25 40 100 \
        --variants shipped --out "$out/st_final.json"
      echo "final status $?"
      timeout 120 python3 benchmarks/curved_variants.py --n 40 --seconds 40 --shifts -0.5 0.5 \
        --variants shipped --out "$out/st_final_places.json"
      echo "places status $?"
      timeout 60 python3 benchmarks/curved_variants.py --n 40 --seconds 45 --compute lwacm \
        --variants shipped --out "$out/st_final_two_step.json"
      echo "two-step status $?"
      gpu_tests stvar_gpu_tests 150 3 tests/test_gpu_lwacm_curved.py;;
  esac
} 2>&1 | tee -a "$out/device_stvar.log"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_stvar.log"

#!/usr/bin/env bash
# Taylor-Green Re 1600 with LW-ACM + LES at a smaller u0/c_a (issue #17, session 11): is the
# two schemes' peak-dissipation gap (−10 to −17 % at u0/c_a = ½) the artificial
# compressibility of LW-ACM (c_a = √(2ν); the 2D vortex's error is 0.37 (u0/c_a)²)?
#   bash benchmarks/device_tgvratio.sh first     # ~5 min
#   bash benchmarks/device_tgvratio.sh two256    # ~7 min: two-step scheme, 256³, fp64 (not run)
#   bash benchmarks/device_tgvratio.sh cs        # ~6 min: C_s = 0.2, 0.25 (u0/c_a = ½), no LES
#   bash benchmarks/device_tgvratio.sh fine      # ~8 min: single step 512³, two-step 384³
#   bash benchmarks/device_tgvratio.sh dil       # ~4 min: the dilatation to t* = 10
#   bash benchmarks/device_tgvratio.sh fine025   # ~4 min: single step 384³ at 0.25 to t* = 10
#   bash benchmarks/device_tgvratio.sh work      # ~3 min: 256³ with the pressure work p div u
# first: the single step (fp32, records of ρ − 1) at 64³, 128³, 256³ with u0/c_a = 0.25 and
# at 128³, 256³ with 0.35; the two-step scheme in fp64 (fp32 f* cannot hold the per-step
# change at these ν: a 32³ CPU run gains energy) at 64³, 128³ with 0.25 and 128³ with 0.35.
# Results in $OUT: flows_tgv_<part>*.json and device_tgvratio.log; tables and figure on a CPU
# with python benchmarks/flows_plot.py. What the session-11 runs found: docs/validation/flows.md.
. "$(dirname "$0")/device_setup.sh"
flows="python3 -m thelma_py.tools.flows tgv --device cuda --out $out"
start=$SECONDS
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    first)
      timeout 200 $flows --schemes lwacm-fused-les --sizes 64,128,256 --speed-ratio 0.25 \
        --tag _fused025
      timeout 100 $flows --schemes lwacm-fused-les --sizes 128,256 --speed-ratio 0.35 \
        --tag _fused035
      timeout 200 $flows --schemes lwacm-les --sizes 64,128 --speed-ratio 0.25 \
        --precision float64 --tag _two025
      timeout 100 $flows --schemes lwacm-les --sizes 128 --speed-ratio 0.35 \
        --precision float64 --tag _two035;;
    two256)
      timeout 540 $flows --schemes lwacm-les --sizes 256 --speed-ratio 0.3 \
        --precision float64 --tag _two256;;
    cs)  # LW-ACM's viscous term is the FTCS Laplacian (under-dissipates high k): does a
         # larger C_s make up for it? And the single step without LES at 0.35.
      for cs in 0.2 0.25; do
        timeout 100 $flows --schemes lwacm-fused-les --sizes 64,128,256 --c-s $cs \
          --tag _fused_cs$cs
        timeout 150 $flows --schemes lwacm-les --sizes 128,256 --c-s $cs --tag _two_cs$cs
      done
      timeout 100 $flows --schemes lwacm-fused-shifted --sizes 128,256 --speed-ratio 0.35 \
        --tag _plain035;;
    fine)  # were the gap at 256³ a resolution error, it would shrink with n (it grew)
      timeout 290 $flows --schemes lwacm-fused-les --sizes 512 --tag _fused512
      timeout 290 $flows --schemes lwacm-les --sizes 384 --tag _two384;;
    dil)  # how compressible each run is (the runs record mean (div u)^2/2 beside enstrophy)
      timeout 60 $flows --schemes lbm-bgk-les,lwacm-les,lwacm-fused-les --sizes 256 \
        --t-end 10 --tag _dil256
      timeout 100 $flows --schemes lwacm-fused-les --sizes 256 --t-end 10 --speed-ratio 0.25 \
        --tag _dil256_025
      timeout 100 $flows --schemes lwacm-fused-les --sizes 384 --t-end 10 --tag _dil384;;
    fine025)  # does the gap at 384³ depend on u0/c_a?
      timeout 300 $flows --schemes lwacm-fused-les --sizes 384 --t-end 10 --speed-ratio 0.25 \
        --tag _dil384_025;;
    work)  # does pressure work account for the excess dissipation around t* = 5?
      timeout 40 $flows --schemes lbm-bgk-les --sizes 256 --t-end 10 --tag _work_lbm
      timeout 60 $flows --schemes lwacm-fused-les --sizes 256 --t-end 10 --tag _work050
      timeout 100 $flows --schemes lwacm-fused-les --sizes 256 --t-end 10 --speed-ratio 0.25 \
        --tag _work025;;
    *) echo "unknown part $part (first, two256, cs, fine, dil, fine025, work)";;
  esac
done 2>&1 | tee -a "$out/device_tgvratio.log"
echo "=== all done in $((SECONDS - start)) s" | tee -a "$out/device_tgvratio.log"

#!/usr/bin/env bash
# Single-step LW-ACM with Smagorinsky LES, speed (issue #17: LES within 10 % of the MLUPS
# without) on one H100; expected 5-7 minutes (NVRTC compilation of the LES kernels included):
#   bash benchmarks/device_fusedles.sh                 # all parts
#   bash benchmarks/device_fusedles.sh bench speed     # or any of: tests bench speed tgv
#                                                      # spectrum ratio quick blocks
# 1. tests: GPU ≡ NumPy of the LES kernel (D2Q9, D3Q19, D3Q27; fp32, fp64; walls, moving walls),
#    the LBM LES tests and several nodes a thread (with and without LES).
# 2. bench: the lead's command, thelma bench --les none,smagorinsky, periodic and cavity.
# 3. speed: benchmarks/lwacm_les_speed.py, D3Q19 fp32 256^3 periodic and cavity: plain, LES as
#    shipped (64 registers), LES at 80 and 128 registers (3, 2 blocks per SM), LES in 32 x 4
#    blocks (64, 72 registers); D3Q19 fp64 and D3Q27 fp32 periodic, plain against LES.
#    Registers as the driver reports them.
# 4. tgv: the Taylor-Green vortex at Re 1600, single step + LES, 64^3, 128^3, 256^3 to t* = 20;
#    ratio: the same at 256^3 with u0/c_a = 0.25; spectrum: benchmarks/tgv_spectrum.py at 256^3
#    (LBM BGK, both LW-ACM schemes, with LES); quick: lwacm_les_speed.py --quick.
# Writes JSON and logs into $OUT (default ./out) and prints a short summary. Plot on the CPU
# afterwards: python benchmarks/lwacm_les_speed_plot.py OUT/fusedles_speed.json lwacm_les_speed.png
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests bench speed}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests fusedles_gpu_tests 300 6 tests/test_lwacm_les.py tests/test_gpu_les.py \
        tests/test_lwacm_thread_rows.py;;
    tgv)
      timeout 300 python3 -m thelma_py.tools.flows tgv --sizes 64,128,256 \
        --schemes lwacm-fused-les --out "$out/fusedles_tgv.json" 2>&1 | tee "$out/fusedles_tgv.log" \
        | grep -v '^ *t\*';;
    spectrum)
      timeout 240 python3 benchmarks/tgv_spectrum.py --out "$out/tgv_spectrum.json" --n 256 \
        --times 3,5,7,9 2>&1 | tee "$out/tgv_spectrum.log";;
    ratio)
      timeout 200 python3 -m thelma_py.tools.flows tgv --sizes 256 --schemes lwacm-fused-les \
        --speed-ratio 0.25 --out "$out/fusedles_tgv_ratio.json" 2>&1 \
        | tee "$out/fusedles_tgv_ratio.log";;
    blocks)  # 2 nodes a thread in 32 x 4 blocks, 4 to 6 per SM (ptxas: 4: ~110 registers,
      # no spill; 5: 96; 6, as shipped: 80), D3Q19 and D3Q27 fp32 periodic
      for lattice in D3Q19 D3Q27; do
        timeout 150 python3 benchmarks/lwacm_les_speed.py --json "$out/fusedles_blocks_$lattice.json" \
          --only "$lattice:float32:periodic:plain,les,les r2 rows4 m4,les r2 rows4 m5" 2>&1 \
          | tee "$out/fusedles_blocks_$lattice.log"
      done;;
    quick)
      timeout 120 python3 benchmarks/lwacm_les_speed.py --quick --json "$out/fusedles_quick.json" \
        2>&1 | tee "$out/fusedles_quick.log";;
    speed)
      timeout 300 python3 benchmarks/lwacm_les_speed.py --json "$out/fusedles_speed.json" \
        2>&1 | tee "$out/fusedles_speed.log";;
    bench)
      timeout 120 python3 -m thelma_py.tools.bench --compute lwacm-fused --precision float32 \
        --sizes 256 --cases periodic,cavity --les none,smagorinsky \
        --json "$out/fusedles_bench.json" | tee "$out/fusedles_bench.log" | tail -n 8;;
    *) echo "unknown part $part (tests speed bench tgv spectrum ratio quick blocks)";;
  esac
done
echo "=== done $(date +%T)"

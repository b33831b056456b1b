#!/usr/bin/env bash
# Two-step LW-ACM with Smagorinsky LES on one H100, about 3 minutes (JSON/logs in $OUT, default
# ./out):   bash benchmarks/device_lwacm2.sh
# 1. GPU = NumPy tests of the two-step LES kernel (tests/test_lwacm2_les.py -m gpu, ~20 s).
# 2. thelma bench: two-step LW-ACM D3Q19 fp32 256^3 periodic, without and with LES (the LES
#    kernel reads and writes what the plain one does: expect within ~10 % of its MLUPS).
# 3. TGV Re 1600 to t* = 20, two-step + LES, fp32: u0 = 0.05 at 64^3, 128^3, 256^3 (the single
#    step's set-up) and u0 = L/3200 at 64^3 (with and without LES) and 128^3.
# Plot on the CPU afterwards:
#   python benchmarks/tgv3d_plot.py OUT/lwacm2_les_tgv.json docs/validation
. "$(dirname "$0")/device_setup.sh"
echo "=== gpu tests $(date +%T)"
timeout 120 python3 -m pytest -q -m gpu tests/test_lwacm2_les.py 2>&1 | tee "$out/lwacm2_gpu_tests.log" | tail -n 3
echo "=== bench $(date +%T)"
timeout 90 python3 -m thelma_py.tools.bench --compute lwacm --precision float32 \
  --sizes 256 --cases periodic --les none,smagorinsky --json "$out/lwacm2_les_bench.json" \
  | tee "$out/lwacm2_les_bench.log" | tail -n 4
echo "=== tgv $(date +%T)"
timeout 150 python3 benchmarks/lwacm_les_tgv.py --out "$out/lwacm2_les_tgv.json" \
  --runs 64:0.05:smagorinsky:lwacm,128:0.05:smagorinsky:lwacm,256:0.05:smagorinsky:lwacm,64:auto:smagorinsky:lwacm,64:auto:none:lwacm,128:auto:smagorinsky:lwacm \
  2>&1 | tee "$out/lwacm2_les_tgv.log"
echo "=== done $(date +%T)"

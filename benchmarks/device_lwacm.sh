#!/usr/bin/env bash
# LW-ACM energy / LES on one H100, about 4 minutes (results as JSON in $OUT, default ./out):
#   bash benchmarks/device_lwacm.sh
# 1. thelma bench: single-step LW-ACM D3Q19 fp32 256^3 periodic, without and with Smagorinsky
#    LES (bar: LES within 10 % of the MLUPS without).
# 2. TGV Re 1600 to t* = 20, single step + LES, fp32: u0 = 0.05 at 64^3, 128^3, 256^3 (artificial
#    Mach u0/c_a 2.0, 1.4, 1.0: the issue's set-up) and u0 = L/3200 (u0/c_a = 0.5) at 64^3,
#    128^3 and 256^3, with and without LES at 64^3 (256^3 auto: 64 000 steps, ~40 s).
# Plot on the CPU afterwards: python benchmarks/tgv3d_plot.py OUT/lwacm_les_tgv.json docs/validation
. "$(dirname "$0")/device_setup.sh"
echo "=== bench $(date +%T)"
timeout 90 python3 -m thelma_py.tools.bench --compute lwacm-fused --precision float32 \
  --sizes 256 --cases periodic --les none,smagorinsky --json "$out/lwacm_les_bench.json" \
  | tee "$out/lwacm_les_bench.log" | tail -n 4
echo "=== tgv $(date +%T)"
timeout 240 python3 benchmarks/lwacm_les_tgv.py --out "$out/lwacm_les_tgv.json" \
  --runs 64:0.05:smagorinsky,128:0.05:smagorinsky,256:0.05:smagorinsky,64:auto:smagorinsky,64:auto:none,128:auto:smagorinsky,256:auto:smagorinsky \
  2>&1 | tee "$out/lwacm_les_tgv.log"
echo "=== done $(date +%T)"

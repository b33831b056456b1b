#!/usr/bin/env bash
# Issue #17 (helper lesfix): the single-step LW-ACM's records of ρ − 1 (density='shifted')
# against records of ρ, on one H100; expected about 4 minutes for the default parts (NVRTC
# compilation included), big adds ~45 s:
#   bash benchmarks/device_lesfix.sh                 # tests tgv speed
#   bash benchmarks/device_lesfix.sh tgv big speed   # or any of: tests tgv big speed
# 1. tests: GPU ≡ NumPy of the single step with LES, records of ρ and of ρ − 1 (D2Q9, D3Q19,
#    D3Q27; fp32, fp64; walls, moving walls).
# 2. tgv: Re 1600 Taylor-Green vortex, fp32, to t* = 20 (u0 = L / 3200): at 64³ the single
#    step with and without LES, records of ρ and of ρ − 1, and the two-step scheme with LES;
#    at 128³ the LES schemes. Expected: the shifted runs lose no energy early (E_k(t* = 1)
#    within ~0.1 % of the DNS's 0.1245, against 0.1216 (64³) / 0.1229 (128³) with records of
#    ρ), do not diverge at 64³, and put the peak of −dE/dt near t* = 9, not at t* = 1.5.
# 3. big (not by default): the same at 256³, single step with LES, records of ρ − 1 only.
# 4. speed: benchmarks/lwacm_les_speed.py --quick, D3Q19 fp32 256³ periodic: plain and LES
#    (session 9 measured records of ρ − 1 against ρ with a script since folded into it: LES
#    40,040 against 38,219 MLUPS, plain 58,153 against 60,513).
# Writes JSON and logs into $OUT (default ./out) and prints a short summary. Plot on the CPU
# afterwards (matplotlib; writes tgv3d.png and tgv3d.md into the last argument):
#   python benchmarks/tgv3d_plot.py OUT/flows_tgv_lesfix.json OUT/flows_tgv_lesfix128.json \
#       OUT/flows_tgv_lesfix256.json /tmp/lesfix_plots
. "$(dirname "$0")/device_setup.sh"
parts=${*:-tests tgv speed}
summary() {  # E_k at t* = 1, 3, 5 of every run (the DNS: 0.12452, 0.12302, 0.11844)
  python3 - "$out" <<'PY'
import json, sys, pathlib, numpy as np
for path in sorted(pathlib.Path(sys.argv[1]).glob("flows_tgv_lesfix*.json")):
    for r in json.loads(path.read_text())["runs"]:
        if "error" in r or len(r["t"]) < 3:
            continue
        e = [float(np.interp(t, r["t"], r["E_k"])) if r["t"][-1] >= t else float("nan")
             for t in (1, 3, 5)]
        print(f"{r['scheme']:24s} n={r['n']:4d} E_k(1,3,5) = {e[0]:.5f} {e[1]:.5f} {e[2]:.5f}"
              f"  peak {r['peak']:.5f} at t*={r['peak_time']:.2f} ({r['peak_error']:+.1%})"
              f"  diverged at {r['diverged_at']}")
PY
}
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)
      gpu_tests lesfix_gpu_tests 200 6 tests/test_lwacm_les.py;;
    tgv)
      timeout 240 python3 -m thelma_py.tools.flows tgv --sizes 64 --out "$out" --tag _lesfix \
        --schemes lwacm-fused-les-absolute,lwacm-fused-les,lwacm-fused,lwacm-fused-shifted,lwacm-les \
        2>&1 | grep "^tgv" | tee "$out/lesfix_tgv.log"
      timeout 200 python3 -m thelma_py.tools.flows tgv --sizes 128 --out "$out" \
        --tag _lesfix128 --schemes lwacm-fused-les-absolute,lwacm-fused-les,lwacm-les \
        2>&1 | grep "^tgv" | tee -a "$out/lesfix_tgv.log"
      summary;;
    big)
      timeout 150 python3 -m thelma_py.tools.flows tgv --sizes 256 --out "$out" \
        --tag _lesfix256 --schemes lwacm-fused-les \
        2>&1 | grep "^tgv" | tee -a "$out/lesfix_tgv.log"
      summary;;
    speed)  # plain against LES (records of ρ − 1, the default with LES), D3Q19 fp32 256³
      timeout 150 python3 benchmarks/lwacm_les_speed.py --quick --json "$out/lesfix_speed.json" \
        2>&1 | tee "$out/lesfix_speed.log";;
    *) echo "unknown part $part (tests tgv big speed)";;
  esac
done
echo "=== done $(date +%T)"

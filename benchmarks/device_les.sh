#!/usr/bin/env bash
# Helper les (#17): LBM Smagorinsky LES and the recursive regularized model on one GPU.
#   bash benchmarks/device_les.sh            # bench (~1 min) + TGV Re 1600 to t* = 20 (~2-3 min)
#   bash benchmarks/device_les.sh bench      # the bench only
# Writes $OUT/les_bench.json, $OUT/les_tgv.json (fallback ./out) and prints MLUPS, % of copy,
# the LES cost against plain BGK, and whether each TGV run stayed bounded. Expected: bench
# 12 configurations ~1.5 min (kernel compiles included), TGV 6 runs ~2 min (256^3: ~16 300
# steps each). Plot afterwards on a CPU with matplotlib:
#   python benchmarks/les_plot.py OUT/les_tgv.json les_tgv.png
. "$(dirname "$0")/device_setup.sh"
parts=${*:-bench tgv}
bench="python3 -m thelma_py.tools.bench --precision float32 --streaming pull --sizes 256"
for part in $parts; do
  echo "=== $part $(date +%T)"
  case $part in
    bench)
      # BGK with and without LES, MRT with and without; periodic 256^3 (the 5 % bar)
      $bench --lattice D3Q19 --collision bgk,mrt --les none,smagorinsky --cases periodic \
        --json "$out/les_bench_lbm.json"
      # regularized and recursive D3Q19, periodic and cavity (the 90 % of copy bar), D3Q27
      $bench --lattice D3Q19 --collision regularized,recursive --cases periodic,cavity \
        --json "$out/les_bench_models.json"
      $bench --lattice D3Q27 --collision bgk,recursive --les none,smagorinsky --cases periodic \
        --json "$out/les_bench_d3q27.json"
      python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
rows = [r for name in ("lbm", "models", "d3q27") if (out / f"les_bench_{name}.json").exists()
        for r in json.loads((out / f"les_bench_{name}.json").read_text())["results"] if "mlups" in r]
(out / "les_bench.json").write_text(json.dumps(rows, indent=1))
key = lambda r: (r["lattice"], r["collision"], r["case"])
plain = {key(r): r["mlups"] for r in rows if r.get("les", "none") == "none"}
for r in rows:
    base = plain.get(key(r))
    extra = (f"  LES cost {1 - r['mlups'] / base:+.1%}" if r.get("les", "none") != "none" and base
             else "")
    print(f"{r['lattice']} {r['collision']:12s} les={r.get('les', 'none'):12s} {r['case']:9s} "
          f"{r['mlups']:7.0f} MLUPS {r['fraction_of_copy']:6.1%} of copy{extra}")
PY
      ;;
    tgv)
      python3 benchmarks/les_tgv.py --sizes 64,128,256 --collisions bgk,mrt --out "$out/les_tgv.json"
      ;;
    *) echo "unknown part $part (bench, tgv)"; exit 2 ;;
  esac
done
echo "=== done $(date +%T)"

"""Summary of benchmarks/device_cumulant.sh: TGV Re 1600 peak dissipation against the spectral
DNS, and the D3Q27 bench rows (MLUPS, fraction of the copy bandwidth). CPU only, no matplotlib.

    python benchmarks/cumulant_summary.py TGV.json BENCH.json [SUMMARY.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from tgv3d_plot import BLOW_UP_MARGIN  # noqa: E402

from thelma_py.tools import validation as v  # noqa: E402

START = 2.0
"""t* before which the dissipation is left out of the comparison: the equilibrium initial state
rings acoustically for the first steps (the DNS peak is near t* = 9)."""


def tgv_rows(path: Path) -> list[dict]:
    ref = v.load_tgv_reference(None)
    peak_ref = float(ref["minus_dEk_dt"].max())
    rows = []
    for run in json.loads(path.read_text())["runs"]:
        t, energy = np.asarray(run["t"]), np.asarray(run["E_k"])
        keep = np.isfinite(energy)
        if run["diverged_at"] is not None:
            keep &= t < run["diverged_at"] - BLOW_UP_MARGIN
        rate = v.dissipation_rate(t[keep], energy[keep])
        late = t[keep] >= START
        k = int(np.argmax(np.where(late, rate, -np.inf))) if late.any() else 0
        compared = v.compare_dissipation(t[keep][late], rate[late]) if late.any() else {}
        rows.append({"scheme": run["scheme"], "n": run["n"], "precision": run["precision"],
                     "t_end": run["t"][-1], "diverged_at": run["diverged_at"],
                     "peak": float(rate[k]), "peak_time": float(t[keep][k]),
                     "reference_peak": peak_ref, "peak_error": float(rate[k]) / peak_ref - 1.0,
                     "max_deviation_of_peak": compared.get("max_deviation_of_peak", np.nan),
                     "mlups": run["mlups"], "wall_seconds": run["wall_seconds"]})
    return rows


def bench_rows(path: Path) -> list[dict]:
    keys = ("lattice", "collision", "precision", "streaming", "case", "size", "mlups",
            "bandwidth_GBs", "fraction_of_copy", "error")
    return [{k: r.get(k) for k in keys} for r in json.loads(path.read_text())["results"]]


def main(argv: list[str]) -> None:
    summary = {}
    if len(argv) > 0 and Path(argv[0]).exists():
        summary["tgv"] = tgv_rows(Path(argv[0]))
        for r in summary["tgv"]:
            state = (f"diverged at t*={r['diverged_at']:.2f}" if r["diverged_at"] is not None
                     else f"finite to t*={r['t_end']:.1f}")
            print(f"TGV {r['scheme']} {r['n']}^3 {r['precision']}: {state}; peak -dE/dt "
                  f"{r['peak']:.5f} at t*={r['peak_time']:.2f} (DNS {r['reference_peak']:.5f}: "
                  f"{r['peak_error']:+.1%}), max deviation {r['max_deviation_of_peak']:.1%} of "
                  f"the DNS peak, {r['mlups']:.0f} MLUPS")
    if len(argv) > 1 and Path(argv[1]).exists():
        summary["bench"] = bench_rows(Path(argv[1]))
        for r in summary["bench"]:
            if r["error"] is not None:
                print(f"bench {r['lattice']} {r['collision']} {r['precision']} {r['streaming']} "
                      f"{r['case']}: {r['error']}")
                continue
            print(f"bench {r['lattice']} {r['collision']:9s} {r['precision']} {r['streaming']:4s} "
                  f"{r['case']:8s} {r['size']}^3: {r['mlups']:7.0f} MLUPS, "
                  f"{r['fraction_of_copy']:.1%} of copy")
    if len(argv) > 2:
        Path(argv[2]).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])

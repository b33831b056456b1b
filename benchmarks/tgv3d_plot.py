"""Plot and tabulate tgv3d_gpu.py results against the spectral DNS reference.

    python benchmarks/tgv3d_plot.py benchmarks/data/<tgv3d>.json [more.json ...] docs/validation

writes ``tgv3d.png`` and ``tgv3d.md`` in the output folder (needs matplotlib: the plot extra).
A run (scheme, size) in a later file replaces the same run of an earlier one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from thelma_py.tools import validation as v

BLOW_UP_MARGIN = 0.5
"""Time (t*) before the first non-finite energy from which a diverged run's samples are left
out: the blow-up grows over the last few samples."""


def summarise(run: dict) -> dict:
    """Peak of −dE/dt (from the energy curve) and of 2 ε/Re (from the enstrophy); a diverged
    run is summarised up to :data:`BLOW_UP_MARGIN` before it diverged, and ``peak_seen`` says
    whether its dissipation rate had passed its maximum by then."""
    t = np.asarray(run["t"])
    keep = np.ones(len(t), dtype=bool)
    if run["diverged_at"] is not None:
        keep = t < run["diverged_at"] - BLOW_UP_MARGIN
    t = t[keep]
    rate = v.dissipation_rate(t, np.asarray(run["E_k"])[keep])
    from_enstrophy = 2.0 * np.asarray(run["enstrophy"])[keep] / run["reynolds"]
    k = int(np.argmax(rate))
    comparison = v.compare_dissipation(t, rate)
    return {"peak": float(rate[k]), "peak_time": float(t[k]), "t": t,
            "peak_seen": bool(k < len(t) - 3 and rate[-1] < 0.95 * rate[k]),
            "peak_enstrophy_based": float(from_enstrophy.max()),
            "max_deviation_of_peak": comparison["max_deviation_of_peak"], "rate": rate}


def main(sources: list[Path], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest = {}
    for source in sources:
        for run in json.loads(source.read_text())["runs"]:
            latest[(run["scheme"], run["n"])] = {**run, "source": source.name}
    runs = list(latest.values())
    ref = v.load_tgv_reference()
    k = int(np.argmax(ref["minus_dEk_dt"]))
    sizes = sorted({r["n"] for r in runs})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.2), squeeze=False)
    rows = []
    for ax, n in zip(axes[0], sizes, strict=True):
        ax.plot(ref["t"], ref["minus_dEk_dt"], "k-", lw=2, label="spectral DNS 512³")
        for run in (r for r in runs if r["n"] == n):
            if len(run["t"]) < 3:
                continue
            s = summarise(run)
            if run["diverged_at"] is not None:  # the last samples before NaN are blow-up
                ax.plot(s["t"], s["rate"], "--",
                        label=f"{run['scheme']} (diverged at t* = {run['diverged_at']:.2f})")
                status = f"diverged at t* = {run['diverged_at']:.2f}"
                if not s["peak_seen"]:
                    rows.append(f"| {run['scheme']} | {n}³ | — | — | — | — | "
                                f"{run['mlups']:.0f} | {status}, before its peak |")
                    continue
                rows.append(f"| {run['scheme']} | {n}³ | {s['peak']:.5f} | "
                            f"{s['peak_time']:.2f} | {s['peak_enstrophy_based']:.5f} | "
                            f"{s['max_deviation_of_peak']:.2f} | {run['mlups']:.0f} | "
                            f"{status}, after its peak (values up to t* = "
                            f"{s['t'][-1]:.2f}) |")
                continue
            ax.plot(run["t"], s["rate"], label=run["scheme"])
            rows.append(f"| {run['scheme']} | {n}³ | {s['peak']:.5f} | {s['peak_time']:.2f} | "
                        f"{s['peak_enstrophy_based']:.5f} | {s['max_deviation_of_peak']:.2f} | "
                        f"{run['mlups']:.0f} | ran |")
        ax.set(title=f"Re = 1600, {n}³, D3Q19 fp32", xlabel="t V0 / L", ylabel="−dE/dt",
               xlim=(0, max(r["t"][-1] for r in runs if r["t"])),
               ylim=(0, 1.6 * ref["minus_dEk_dt"].max()))
        ax.legend(fontsize=8)
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / "tgv3d.png", dpi=110)
    text = [
        "# 3D Taylor-Green vortex at Re = 1600 (GPU)",
        "",
        f"Data: {', '.join(f'`{s.as_posix()}`' for s in sources)}; plot: `tgv3d.png`. "
        "Reference: spectral DNS 512³, peak "
        f"−dE/dt = {ref['minus_dEk_dt'][k]:.5f} at t* = {ref['t'][k]:.2f}. u0 = 0.05 (Mach 0.087); "
        "−dE/dt is differentiated from the sampled energy; the enstrophy-based column is 2ε/Re, "
        "which differs from it by the numerical and bulk dissipation (the reference README asks "
        "for both). Deviation: max |Δ(−dE/dt)| over the run, relative to the reference peak.",
        "",
        "| scheme | size | peak −dE/dt | at t* | peak 2ε/Re | max deviation / peak | MLUPS "
        "(incl. sampling) | status |",
        "|---|---|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        "![dissipation rate](tgv3d.png)",
        "",
    ]
    (out / "tgv3d.md").write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:-1]], Path(sys.argv[-1]))

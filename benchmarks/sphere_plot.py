"""Table and figure of the sphere runs (benchmarks/device_sphere.sh, or CPU runs of
``python -m thelma_py.tools.flows sphere``), on a CPU with matplotlib:

    python benchmarks/sphere_plot.py OUT_DIR
    python benchmarks/sphere_plot.py --transient 25 --no-figure RUN.json ...

Reads every flows_sphere*.json in OUT_DIR (or the runs named), prints one Markdown row per run
(c_D, St, the references, the errors) and writes OUT_DIR/sphere_forces.png: c_D(t) and the
side-force coefficients of each run against t U / d. ``--transient T`` measures every run again
after its first T d/U (:func:`thelma_py.tools.flows.sphere_measures`, from the series the JSON
keeps), so runs made with different transients compare alike; the rings' own peaks join the row.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from thelma_py.tools import flows


def remeasured(run: dict, transient: float) -> dict:
    """``run`` with c_D, St (and the rings' St) measured after ``transient`` d/U."""
    series = {k: np.asarray(v, dtype=float) for k, v in run["series"].items()}
    probes = run.get("probes")
    probes = None if probes is None else {k: np.asarray(v, dtype=float)
                                          for k, v in probes.items()}
    measures = flows.sphere_measures(series, probes, run["d"], run["u"], transient,
                                     run.get("options") or {})
    return {**run, **measures}


def label(run: dict) -> str:
    """The scheme, with its Smagorinsky constant if it has one."""
    les = (run.get("params") or {}).get("les")
    return run["scheme"] + (f", C_s = {les['c_s']:g}" if les else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", type=Path, nargs="+",
                        help="a folder of flows_sphere*.json, or run files")
    parser.add_argument("--transient", type=float, default=None,
                        help="measure every run after this many d/U")
    parser.add_argument("--no-figure", action="store_true")
    args = parser.parse_args()
    files = [f for p in args.paths
             for f in (sorted(p.glob("flows_sphere*.json*")) if p.is_dir() else [p])]
    runs = [r for path in files for r in flows.sphere_records(path)]
    if args.transient is not None:
        runs = [r if "error" in r else remeasured(r, args.transient) for r in runs]
    print("| Re | scheme | d | c_D | ref | St | halves | ref | rings (d behind the centre) | "
          "averaged (d/U) | MLUPS | wall s | diverged at d/U |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---|")
    for r in runs:
        if "error" in r:
            print(f"| {r['reynolds']:g} | {r['scheme']} | | not built: {r['error']} |||||||||")
            continue
        ref = {k: f"{v:.3f}" if v else "—" for k, v in (r.get("reference") or {}).items()
               if k in ("c_D", "St")}
        rings = " / ".join(f"{float(a):g}: {st:.3f}"
                           for a, st in (r.get("St_stations") or {}).items())
        print(f"| {r['reynolds']:g} | {label(r)} | {r['d']} | {r['c_D']:.3f} | "
              f"{ref.get('c_D', '—')} | {r['St']:.3f} ± {r['resolution'] / 2:.3f} | "
              f"{flows.halves_text(r)} | {ref.get('St', '—')} | {rings} | "
              f"{r['convective_times']:.0f} | {r['mlups']:.0f} | {r.get('wall_seconds', 0):.0f} | "
              f"{r['diverged_at']} |")
    if args.no_figure:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in runs if "series" in r]
    if not ok:
        return
    fig, axes = plt.subplots(len(ok), 1, figsize=(8, 2.2 * len(ok)), squeeze=False)
    for ax, r in zip(axes[:, 0], ok, strict=True):
        s = r["series"]
        t = [v * r["u"] / r["d"] for v in s["step"]]
        ax.plot(t, s["c_D"], label="c_D")
        ax.plot(t, s["c_y"], lw=0.7, label="c_y")
        ax.plot(t, s["c_z"], lw=0.7, label="c_z")
        late = [v for name in ("c_D", "c_y", "c_z") for tv, v in zip(t, s[name], strict=True)
                if tv > 2 and v == v]  # after the start's spike; NaN left out
        if late:
            span = max(late) - min(late)
            ax.set_ylim(min(late) - 0.1 * span - 0.05, max(late) + 0.1 * span + 0.05)
        ax.set(title=f"Re {r['reynolds']:g} {label(r)} d={r['d']}", xlabel="t U / d")
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    folder = args.paths[0] if args.paths[0].is_dir() else args.paths[0].parent
    fig.savefig(folder / "sphere_forces.png", dpi=110)
    print(f"wrote {folder / 'sphere_forces.png'}")


if __name__ == "__main__":
    main()

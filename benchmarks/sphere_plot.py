"""Table and figure of the sphere runs (benchmarks/device_sphere.sh, or CPU runs of
``python -m thelma_py.tools.flows sphere``), on a CPU with matplotlib:

    python benchmarks/sphere_plot.py OUT_DIR

Reads every flows_sphere*.json in OUT_DIR, prints one Markdown row per run (c_D, St, the
references, the errors) and writes OUT_DIR/sphere_forces.png: c_D(t) and the side-force
coefficients of each run against t U / d.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    runs = [r for path in sorted(args.folder.glob("flows_sphere*.json"))
            for r in json.loads(path.read_text())["runs"]]
    print("| Re | scheme | d | c_D | ref | St | ref | MLUPS | diverged at d/U |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        if "error" in r:
            print(f"| {r['reynolds']:g} | {r['scheme']} | | not built: {r['error']} |||||")
            continue
        ref = {k: f"{v:.3f}" if v else "—" for k, v in (r.get("reference") or {}).items()
               if k in ("c_D", "St")}
        print(f"| {r['reynolds']:g} | {r['scheme']} | {r['d']} | {r['c_D']:.3f} | "
              f"{ref.get('c_D', '—')} | {r['St']:.3f} ± {r['resolution'] / 2:.3f} | "
              f"{ref.get('St', '—')} | {r['mlups']:.0f} | {r['diverged_at']} |")
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
        ax.set(title=f"Re {r['reynolds']:g} {r['scheme']} d={r['d']}", xlabel="t U / d")
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(args.folder / "sphere_forces.png", dpi=110)
    print(f"wrote {args.folder / 'sphere_forces.png'}")


if __name__ == "__main__":
    main()

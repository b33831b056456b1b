"""Table and figure of benchmarks/cavity_re2000.py's JSON (on a CPU, with matplotlib).

    python benchmarks/cavity_re2000_plot.py DATA.json [--png docs/validation/cavity_re2000.png]

With a reference run: the ℓ² discrepancy against resolution (as the seed paper's Fig. 4), time
to solution, and the discrepancy |u − u_ref| / U on the plane x = ½ at n = 128 (as its Figs.
5–7). Without one (``--reference none``): each LW-ACM scheme's largest centre-line difference
to LBM MRT at the same resolution.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from thelma_py.files import read_json

COLOURS = {"lbm-mrt": "tab:blue", "lwacm": "tab:orange", "lwacm-fused": "tab:green"}
LABELS = {"lbm-mrt": "LBM MRT", "lwacm": "LW-ACM two-step", "lwacm-fused": "LW-ACM single-step"}


def table(data: dict) -> str:
    lines = ["| scheme | n | ℓ² discrepancy | max / U | centre lines max / U | seconds | MLUPS |",
             "|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        if r["diverged"]:
            lines.append(f"| {LABELS[r['scheme']]} | {r['n']} | diverged | | | "
                         f"{r['seconds']:.1f} | |")
            continue
        lines.append(f"| {LABELS[r['scheme']]} | {r['n']} | {r.get('l2', float('nan')):.4f} | "
                     f"{r.get('max', float('nan')):.3f} | "
                     f"{r.get('centre_line_max', float('nan')):.4f} | {r['seconds']:.1f} | "
                     f"{r['mlups']:.0f} |")
    return "\n".join(lines)


def against_mrt(data: dict) -> str:
    """Largest centre-line difference (u_x along z, u_z along x) of each scheme to MRT at the
    same n, in units of U."""
    mrt = {r["n"]: r["centre_lines"] for r in data["runs"]
           if r["scheme"] == "lbm-mrt" and not r["diverged"]}
    lines = ["| scheme | n | max centre-line difference to MRT / U |", "|---|---|---|"]
    for r in data["runs"]:
        if r["scheme"] == "lbm-mrt" or r["n"] not in mrt:
            continue
        if r["diverged"]:
            lines.append(f"| {LABELS[r['scheme']]} | {r['n']} | diverged |")
            continue
        line = r["centre_lines"]
        worst = max(float(np.max(np.abs(np.subtract(line[k], mrt[r["n"]][k]))))
                    for k in ("u_x", "u_z"))
        lines.append(f"| {LABELS[r['scheme']]} | {r['n']} | {worst:.4f} |")
    return "\n".join(lines)


def figure(data: dict, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(20, 4.2), width_ratios=[1.2, 1.2, 1, 1, 1])
    for scheme, colour in COLOURS.items():
        runs = [r for r in data["runs"] if r["scheme"] == scheme and not r["diverged"]]
        if not runs:
            continue
        n = [r["n"] for r in runs]
        axes[0].loglog(n, [r["l2"] for r in runs], "o-", color=colour, label=LABELS[scheme])
        axes[1].loglog(n, [r["seconds"] for r in runs], "o-", color=colour,
                       label=LABELS[scheme])
    n = np.array([64, 256])
    axes[0].loglog(n, 0.16 * (n / 64.0) ** -2, "k:", label="second order")
    axes[0].set(xlabel="n (nodes per side)", ylabel="‖u − u_ref‖ / ‖u_ref‖",
                title=f"Re {data['reynolds']:.0f}, t = {data['t_end']}: "
                      f"against {data['reference']}")
    axes[1].set(xlabel="n", ylabel="time to solution (s, H100)")
    for ax in axes[:2]:
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax, scheme in zip(axes[2:], COLOURS, strict=True):
        runs = [r for r in data["runs"] if r["scheme"] == scheme and r["n"] == 128
                and "plane_x" in r]
        if not runs:
            ax.set_title(f"{LABELS[scheme]}, n = 128: diverged")
            ax.axis("off")
            continue
        plane = np.array(runs[0]["plane_x"])  # (z, y)
        image = ax.imshow(plane, origin="lower", extent=(0, 1, 0, 1), vmin=0, vmax=0.2,
                          cmap="magma")
        ax.set(title=f"{LABELS[scheme]}\nn = 128, plane x = ½", xlabel="y", ylabel="z (lid at top)")
    fig.colorbar(image, ax=axes[2:], label="|u − u_ref| / U", shrink=0.9)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110, bbox_inches="tight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--png", type=Path)
    args = parser.parse_args()
    data = read_json(args.data)
    if "reference_run" in data:
        ref = data["reference_run"]
        print(f"reference {data['reference']}: {ref['seconds']:.1f} s, {ref['mlups']:.0f} MLUPS")
        print(table(data))
        if args.png:
            figure(data, args.png)
    print(against_mrt(data))


if __name__ == "__main__":
    main()

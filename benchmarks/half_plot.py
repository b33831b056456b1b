"""Figures of ``benchmarks/half_accuracy.py`` results (CPU, matplotlib):

    python benchmarks/half_plot.py out/half_accuracy.json --out docs/validation

Writes half_cavity.png (centre lines of each store and their difference from fp32),
half_tgv.png (dissipation −dE/dt) and half_poiseuille.png (L2 error against width).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

STYLE = {"fp32": ("k", "-"), "fp16s": ("tab:red", "--"), "fp16c": ("tab:blue", ":")}


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    data = json.loads(args.results.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    if "cavity" in data:
        runs = data["cavity"]
        fig, axes = plt.subplots(2, len(runs), figsize=(4 * len(runs), 7), squeeze=False)
        for k, run in enumerate(runs):
            ref = run["stores"]["fp32"]
            for store, s in run["stores"].items():
                color, line = STYLE[store]
                axes[0, k].plot(s["u"], s["y"], color=color, ls=line, label=f"{store} u")
                axes[0, k].plot(s["x"], s["v"], color=color, ls=line)
                if store != "fp32":
                    axes[1, k].plot(s["y"], np.subtract(s["u"], ref["u"]), color=color,
                                    label=f"{store} Δu(y)")
                    axes[1, k].plot(s["x"], np.subtract(s["v"], ref["v"]), color=color,
                                    ls="--", label=f"{store} Δv(x)")
            axes[0, k].set_title(f"cavity {run['n']}², Re {run['reynolds']:.0f}")
            axes[1, k].axhline(0.002, color="grey", lw=0.5)
            axes[1, k].axhline(-0.002, color="grey", lw=0.5)
            axes[1, k].set_ylabel("difference from fp32 / U")
        axes[0, 0].legend()
        axes[1, 0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.out / "half_cavity.png", dpi=120)
    if "tgv" in data:
        fig, ax = plt.subplots(figsize=(6, 4))
        for store, s in data["tgv"]["stores"].items():
            color, line = STYLE[store]
            ax.plot(s["t"], s["dissipation"], color=color, ls=line, label=store)
        ax.set_xlabel("t*")
        ax.set_ylabel("−dE/dt*")
        ax.set_title(f"TGV Re 1600, {data['tgv']['n']}³")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out / "half_tgv.png", dpi=120)
    if "poiseuille" in data:
        fig, ax = plt.subplots(figsize=(5, 4))
        widths = data["poiseuille"]["widths"]
        for store, s in data["poiseuille"]["stores"].items():
            color, line = STYLE[store]
            ax.loglog(widths, s["errors"], color=color, ls=line, marker="o", label=store)
        ax.set_xlabel("channel width N")
        ax.set_ylabel("relative L2 error")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out / "half_poiseuille.png", dpi=120)
    print(f"figures in {args.out}")


if __name__ == "__main__":
    main()

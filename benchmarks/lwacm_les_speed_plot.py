"""Plot benchmarks/lwacm_les_speed.py results (on the CPU, with matplotlib): MLUPS of each
variant per configuration, the plain kernel's rate and 90 % of it (the issue #17 bar) marked.

    python benchmarks/lwacm_les_speed_plot.py out/fusedles_speed.json lwacm_les_speed.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(source: str, target: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = json.loads(Path(source).read_text())["variants"]
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(f"{row['lattice']} {row['precision']} {row['case']}", []).append(row)
    fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3.6), squeeze=False)
    for ax, (title, group) in zip(axes[0], groups.items(), strict=True):
        labels = [f"{r['variant']}\n{r['num_regs']} regs" for r in group]
        ax.bar(range(len(group)), [r["mlups"] / 1e3 for r in group], color="tab:blue")
        plain = next((r["mlups"] for r in group if r["variant"] == "plain"), None)
        if plain:
            ax.axhline(plain / 1e3, color="k", lw=1)
            ax.axhline(0.9 * plain / 1e3, color="k", lw=1, ls="--")
        ax.set_xticks(range(len(group)), labels, fontsize=7)
        ax.set(title=title, ylabel="GLUPS")
    fig.tight_layout()
    fig.savefig(target, dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""Plot benchmarks/les_tgv.py results (on the CPU, with matplotlib): kinetic energy and
−dE_k/dt of each LES run against the spectral DNS reference of thelma_py/reference.

    python benchmarks/les_plot.py out/les_tgv.json les_tgv.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from thelma_py.tools import validation as v


def main(source: str, target: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = json.loads(Path(source).read_text())["runs"]
    ref = v.load_tgv_reference()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    bottom.plot(ref["t"], ref["minus_dEk_dt"], "k-", lw=2, label="spectral DNS 512³")
    for run in runs:
        t, e = np.array(run["t"]), np.array(run["E_k"])
        label = f"{run['collision']}+{run['les']} {run['n']}³" + (
            f" (diverged t*={run['diverged_at']:.1f})" if run["diverged_at"] is not None else "")
        top.plot(t, e, label=label)
        if len(t) > 2:
            bottom.plot(t, -np.gradient(e, t), label=label)
    top.set(ylabel="E_k / u0²")
    bottom.set(xlabel="t*", ylabel="−dE_k/dt*")
    top.legend(fontsize=8)
    bottom.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=120)
    print(f"wrote {target}")


if __name__ == "__main__":
    main(*sys.argv[1:3])

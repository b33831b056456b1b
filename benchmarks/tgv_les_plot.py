"""Plot the single step's Smagorinsky LES on the Re 1600 vortex (CPU, matplotlib): −dE/dt
against the spectral DNS with the central-difference |S| and with the norm that sees the grid
scale, and the energy spectra of LBM and both LW-ACM schemes at 256³.

    python benchmarks/tgv_les_plot.py CENTRAL.json GRID.json SPECTRUM.json OUT.png

CENTRAL / GRID: ``flows tgv`` data (``benchmarks/data/..._0cb6337_flows_tgv_les_node.json``,
``..._c326e08_flows_tgv_les_grid.json``); SPECTRUM: ``benchmarks/tgv_spectrum.py`` data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from thelma_py.cases.reference import load_tgv_reference  # noqa: E402

COLOURS = {64: "tab:blue", 128: "tab:orange", 256: "tab:green"}


def main(argv: list[str]) -> int:
    central, grid, spectrum, out = (Path(a) for a in argv)
    reference = load_tgv_reference()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    left.plot(reference["t"], reference["minus_dEk_dt"], "k-", lw=2, label="spectral DNS")
    for path, style, what in ((central, "--", "central |S|"), (grid, "-", "grid-scale |S|")):
        for run in json.loads(path.read_text())["runs"]:
            t = run["t"][: len(run["minus_dEk_dt"])]
            end = " (diverged)" if run["diverged_at"] is not None else (
                f" ({run['peak_error']:+.1%})")
            left.plot(t, run["minus_dEk_dt"], style, color=COLOURS.get(run["n"], "grey"),
                      label=f"{run['n']}³ {what}{end}")
    left.set(xlabel="t*", ylabel="−dE_k/dt", xlim=(0, 20), ylim=(0, 0.016),
             title="Single-step LW-ACM + Smagorinsky (C_s 0.16), fp32")
    left.legend(fontsize=7)
    for run in json.loads(spectrum.read_text())["runs"]:
        last = run["samples"][-1]
        k = range(1, len(last["E"]))
        right.loglog(list(k), last["E"][1:], label=f"{run['scheme']} (Ω = "
                     f"{last['enstrophy_spectral']:.2f})")
    right.set(xlabel="k (2π / n)", ylabel="E(k) / V0²",
              title=f"Energy spectra at t* = {last['t']:.0f}, 256³")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

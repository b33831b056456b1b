"""The sphere's St by window of the record (docs/validation/flows.md, section 3, session 23),
on a CPU with matplotlib:

    python benchmarks/sphere_st_windows.py OUT.png RUN.json[:LABEL] ... [--window 36]
        [--stations 3,5,7] [--reference 0.195]

For each run, the peak St of the single points' spectra (the "points" reading of
``sphere_st_check.py``) at each of ``--stations`` (d behind the centre), in windows of
``--window`` d/U that start every half window after 25 d/U, and over the whole record from
25 d/U on (printed). The figure puts each window's median over the stations at the window's
centre, the spread of the stations as a bar, against the reference and its ±5 % band.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from thelma_py.tools.flows import sphere_records

sys.path.insert(0, str(Path(__file__).parent))
from sphere_st_check import ring_readings  # noqa: E402

START = 25.0
"""Left out of every record (d/U): the measure of flows.md, section 3, session 17."""


def points_at(run: dict, start: float, end: float, stations: tuple[float, ...]) -> np.ndarray:
    """The single points' peak St at ``stations`` over ``start``–``end`` d/U."""
    readings = ring_readings(run, start, end)
    return np.array([readings[s]["points"] for s in stations if s in readings])


def windows(run: dict, window: float, stations: tuple[float, ...]):
    """(centres, medians, lows, highs) of the windows of one run."""
    last = float(run["probes"]["step"][-1]) * run["u"] / run["d"]
    rows = []
    start = START
    while start + window <= last + 1e-9:
        values = points_at(run, start, start + window, stations)
        rows.append((start + window / 2, np.median(values), values.min(), values.max()))
        start += window / 2
    return tuple(np.array(column) for column in zip(*rows, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("runs", nargs="+", help="RUN.json[:LABEL]")
    parser.add_argument("--window", type=float, default=36.0)
    parser.add_argument("--stations", default="3,5,7")
    parser.add_argument("--reference", type=float, default=0.195)
    args = parser.parse_args()
    stations = tuple(float(v) for v in args.stations.split(","))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.axhspan(0.95 * args.reference, 1.05 * args.reference, color="0.9",
               label=f"reference {args.reference} ± 5 %")
    for k, item in enumerate(args.runs):
        path, _, label = item.partition(":")
        run = sphere_records(path)[0]
        last = float(run["probes"]["step"][-1]) * run["u"] / run["d"]
        whole = points_at(run, START, last, stations)
        label = label or Path(path).name
        print(f"{label}: {START:g}-{last:.0f} d/U, points at {args.stations} d: "
              + " / ".join(f"{v:.3f}" for v in whole))
        centres, medians, lows, highs = windows(run, args.window, stations)
        shift = 0.6 * (k - (len(args.runs) - 1) / 2)
        ax.errorbar(centres + shift, medians, yerr=(medians - lows, highs - medians), fmt="o-",
                    capsize=3, label=f"{label} (whole record: {np.median(whole):.3f})")
    ax.set_xlabel(f"window centre (d/U), windows of {args.window:g} d/U")
    ax.set_ylabel(f"St, single points at {args.stations} d")
    ax.set_ylim(0.1, 0.4)
    ax.legend(fontsize=8)
    ax.set_title("K17 sphere at Re 10 000: the shedding peak by window of the record")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()

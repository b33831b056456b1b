"""Spectra of the sphere's wake rings (docs/validation/flows.md, section 3, session 13), on a
CPU with matplotlib:

    python benchmarks/sphere_spectra.py OUT.png RUN.json[:LABEL] ... [--transient T] [--title …]

For each run (a flows sphere JSON with probe series), one panel's curve per ring against
St = f d / U: the rings' side-to-side motion (azimuthal mode 1, :func:`sphere_wake.ring_motion`)
at 1 d, 3 d and 5 d behind the centre (``--rings``: others the runs hold, e.g. 1,3,5,7,9), and
the rings' mean streamwise velocity at 3 d (mode 0: the box's
standing sound waves show there as sharp lines at (2m + 1) c_s d / (4 L U)). Welch averages of
25 d/U segments (half overlapping, Hann window) after the run's first T d/U (default 10).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from thelma_py.cases import sphere_wake
from thelma_py.tools.flows import sphere_records

SEGMENT = 25.0
"""Welch segment length, in d/U."""


def welch(times: np.ndarray, columns, d: float, u: float) -> tuple[np.ndarray, np.ndarray]:
    """St (≥ 0) and the summed Welch power of ``columns`` sampled at ``times`` (steps)."""
    dt = float(times[1] - times[0])
    frequency, power = sphere_wake.power_spectrum(
        columns, dt, segment=int(round(SEGMENT * d / u / dt)), pad=4)
    ahead = frequency >= 0
    return frequency[ahead] * d / u, power[ahead]


def panels(run: dict, transient: float = 10.0,
           rings: tuple[int, ...] = (1, 3, 5)) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The spectra of one run after ``transient`` d/U (the side motion of each of ``rings``, d
    behind the centre, then the mean u_x at 3 d), each scaled to its largest value above
    St = 0.1."""
    d, u = run["d"], run["u"]
    centre = run["options"].get("upstream", 4.0) * d
    probes = {k: np.asarray(v) for k, v in run["probes"].items()}
    late = probes["step"] >= transient * d / u
    times = probes["step"][late]
    columns = {k: v[late] for k, v in probes.items() if k != "step"}
    motion = sphere_wake.ring_motion(columns)
    at = {round((x - centre) / d): x for x in motion}
    missing = sorted(set(rings) - set(at))
    if missing:
        raise SystemExit(f"no ring at {missing} d in this run (it has {sorted(at)}): pass "
                         "--rings from those")
    streamwise = np.mean([v for k, v in columns.items() if k.startswith("ux_")
                          and sphere_wake._station(k) == at[3]], axis=0)
    out = {f"side motion, {r} d": welch(times, motion[at[r]], d, u) for r in rings}
    out["mean u_x, 3 d"] = welch(times, [streamwise], d, u)
    for key, (st, power) in out.items():
        out[key] = (st, power / power[st > 0.1].max())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("runs", nargs="+", help="JSON files, each optionally :label")
    parser.add_argument("--transient", type=float, default=10.0,
                        help="d/U left out at the start of each run")
    parser.add_argument("--title", default="Sphere, Re 3700, d = 32, cumulant")
    parser.add_argument("--reference", default="0.215:DNS",
                        help="ST[:SOURCE] of the dashed line (Re 10 000: 0.195:LES)")
    parser.add_argument("--rings", default="1,3,5",
                        help="rings (d behind the centre) whose side motion gets a panel")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rings = tuple(int(r) for r in args.rings.split(","))
    value, _, source = args.reference.partition(":")
    reference = float(value)
    count = len(rings) + 1
    columns = count if count <= 4 else (count + 1) // 2
    rows = -(-count // columns)
    fig, grid = plt.subplots(rows, columns, figsize=(4.25 * columns, 4.2 * rows), sharey=True,
                             squeeze=False)
    axes = grid.ravel()[:count]
    for spare in grid.ravel()[count:]:
        spare.remove()
    for item in args.runs:
        path, _, label = item.partition(":")
        run = sphere_records(path)[0]
        spectra = panels(run, args.transient, rings)
        for ax, (title, (st, power)) in zip(axes, spectra.items(), strict=True):
            ax.semilogy(st, power, lw=1, label=label or Path(path).stem)
            ax.set_title(title)
    for ax in axes:
        ax.axvline(reference, color="k", ls="--", lw=0.8)
        ax.set_xlim(0.1, 1.2)
        ax.set_ylim(1e-3, 1.5)
        ax.set_xlabel("St = f d / U")
    for ax in grid[:, 0]:
        ax.set_ylabel("power (largest above St 0.1 = 1)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{args.title}: wake rings 0.6 d off the axis, after {args.transient:g} d/U "
                 f"(dashed: {source or 'reference'} shedding St {reference:g})")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

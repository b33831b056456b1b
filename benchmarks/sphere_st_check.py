"""The sphere's St read five ways from each wake ring (docs/validation/flows.md, section 3,
session 17), on a CPU:

    python benchmarks/sphere_st_check.py [--transient T] RUN.json ...

Per ring (by its distance behind the centre, in d): the peak in St 0.1–1 of the rings' side
motion (the measure of :func:`sphere_wake.wake_measures`), of the eight single points' u_y and
u_z summed (what a probe of a DNS sees), of the same by Welch averages of half-length segments,
and of the rotating signal u_y + i u_z of the ring mean, by the sense of rotation (+ and −). A
line the wake really has shows in all of them; a peak picked from a broad spectrum moves.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from thelma_py.cases import sphere_wake
from thelma_py.tools.flows import sphere_records

BAND = sphere_wake.SHEDDING_BAND


def peak(st: np.ndarray, power: np.ndarray) -> float:
    """St of the largest ``power`` inside :data:`BAND`."""
    inside = (st >= BAND[0]) & (st <= BAND[1])
    return float(st[inside][np.argmax(power[inside])])


def ring_readings(run: dict, transient: float, end: float = np.inf
                  ) -> dict[float, dict[str, float]]:
    """The five St readings of every ring of ``run`` from ``transient`` to ``end`` d/U."""
    d, u = run["d"], run["u"]
    centre = (run.get("options") or {}).get("upstream", 4.0) * d
    probes = {k: np.asarray(v, dtype=float) for k, v in run["probes"].items()}
    late = (probes["step"] >= transient * d / u) & (probes["step"] <= end * d / u)
    columns = {k: v[late] for k, v in probes.items() if k != "step"}
    dt = float(np.mean(np.diff(probes["step"][late]))) * u / d  # in d/U: f is St
    out = {}
    for x, (uy, uz) in sphere_wake.ring_motion(columns).items():
        points = [v for k, v in columns.items()
                  if k.startswith(("uy_", "uz_")) and sphere_wake._station(k) == x]
        f, ring = sphere_wake.power_spectrum([uy, uz], dt)
        _, single = sphere_wake.power_spectrum(points, dt)
        fw, welch = sphere_wake.power_spectrum(points, dt, segment=len(uy) // 2)
        fc, rotating = sphere_wake.power_spectrum([uy + 1j * uz], dt)
        out[(x - centre) / d] = {"ring": peak(f, ring), "points": peak(f, single),
                                 "points Welch": peak(fw, welch),
                                 "rotating +": peak(fc, rotating),
                                 "rotating −": peak(-fc, rotating)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--transient", type=float, default=25.0)
    parser.add_argument("--end", type=float, default=np.inf, help="end of the record (d/U)")
    args = parser.parse_args()
    for path in args.runs:
        for run in sphere_records(path):
            print(f"{path.name}: Re {run['reynolds']:g} {run['scheme']} d={run['d']}")
            for at, readings in ring_readings(run, args.transient, args.end).items():
                print(f"  {at:4.1f} d: " + ", ".join(f"{k} {v:.3f}" for k, v in readings.items()))


if __name__ == "__main__":
    main()

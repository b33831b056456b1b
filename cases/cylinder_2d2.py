"""Schäfer & Turek (1996) benchmark 2D-2: flow around a cylinder at Re = 100 (vortex shedding).

The geometry of :mod:`cases.cylinder` (``n`` nodes per diameter, interpolated bounce-back on
the cylinder, parabolic Zou-He inflow, pressure outlet). The forces plug-in records c_D and c_L
every n/4 steps; the report gives the Strouhal number from the lift period and the maximum c_D
and c_L over the second half of the run, against the published intervals (St 0.295-0.305,
c_D,max 3.22-3.24, c_L,max 0.99-1.01).

Run::

    thelma run cases/cylinder_2d2.py --device cuda --set n=40 --steps 160000
"""

from __future__ import annotations

import sys

import thelma_py as tp
from thelma_py.tools.cli import run_case
from thelma_py.tools.validation import (
    CYLINDER_ID,
    SCHAEFER_TUREK_2D2,
    schaefer_turek,
    shedding_measures,
)

DEFAULT_STEPS = 80_000
"""4000 n at n = 20: the shedding grows from round-off and is periodic over the second half."""

__all__ = ["build", "main", "report"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 20,
          u_max: float = 0.1, collision: str = "trt", interpolated: bool = True) -> tp.Solver:
    """See :func:`thelma_py.tools.validation.schaefer_turek` (here at Re = 100)."""
    u_mean = 2.0 * u_max / 3.0
    history = tp.plugin("results", "forces", every=max(1, n // 4), bodies=[CYLINDER_ID],
                        velocity=u_mean, area=float(n))
    return schaefer_turek(device=device, precision=precision, n=n, reynolds=100.0,
                          u_max=u_max, collision=collision, interpolated=interpolated,
                          results=[history])


def report(solver: tp.Solver, *, n: int = 20, u_max: float = 0.1, **_) -> str:
    history = next(r for r in solver.results if getattr(r, "history", None) is not None).history
    m = shedding_measures([r["step"] for r in history],
                          [r[CYLINDER_ID]["cD"] for r in history],
                          [r[CYLINDER_ID]["cL"] for r in history], n, 2.0 * u_max / 3.0)
    return ", ".join(f"{k} = {m[k]:.4f} (published {lo}-{hi})"
                     for k, (lo, hi) in SCHAEFER_TUREK_2D2.items()) + \
        f" over {m['periods']} periods"


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/cylinder_2d2.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

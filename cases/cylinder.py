"""Flow around a cylinder in a channel: the Schäfer & Turek (1996) benchmarks 2D-1 and 2D-2.

Channel H = 0.41 x L = 2.2, cylinder of diameter D = 0.1 centred at (0.2, 0.2), parabolic
Zou-He inflow, Zou-He pressure outlet, no-slip walls (halfway bounce-back). The resolution is
``n`` nodes per diameter. Re = 20 (2D-1) is steady: the report gives c_D, c_L and Δp against
the published intervals. Re = 100 (2D-2) sheds vortices: use
:func:`thelma_py.tools.validation.schaefer_turek_2d2` for the Strouhal number.

Run::

    thelma run cases/cylinder.py                        # n = 20, Re = 20
    thelma validate --only schaefer-turek               # three resolutions, in the report
"""

from __future__ import annotations

import sys

import thelma_py as tp
from thelma_py.tools.cli import run_case
from thelma_py.tools.validation import SCHAEFER_TUREK, schaefer_turek, schaefer_turek_measures

DEFAULT_STEPS = 80_000
"""Enough for c_D to settle to 1e-6 at n = 20 (73 000 steps measured)."""

__all__ = ["build", "main", "report"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 20,
          reynolds: float = 20.0, u_max: float = 0.1, collision: str = "trt",
          radius_offset: float = 0.0) -> tp.Solver:
    """See :func:`thelma_py.tools.validation.schaefer_turek`."""
    return schaefer_turek(device=device, precision=precision, n=n, reynolds=reynolds,
                          u_max=u_max, collision=collision, radius_offset=radius_offset)


def report(solver: tp.Solver, *, u_max: float = 0.1, **_) -> str:
    m = schaefer_turek_measures(solver, u_max)
    return ", ".join(f"{k} = {m[k]:.4f} (published {lo}-{hi})"
                     for k, (lo, hi) in SCHAEFER_TUREK.items())


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/cylinder.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

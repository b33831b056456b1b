"""2D Taylor-Green vortex in a periodic square: the decay of an exact Navier-Stokes solution.

u = u0 e^{−ν (kx² + ky²) t} (sin kx x cos ky y, −cos kx x sin ky y), k = 2π / n, one period in
each direction, started from the "taylor-green" init plug-in (velocity and its pressure field).
Reynolds number Re = u0 L / ν with L = n / (2π) (the convention of the 3D reference data).

Run::

    thelma run cases/taylor_green.py                     # n = 64, Re = 50, MRT; prints the decay
    thelma run cases/taylor_green.py --set collision=bgk --set n=128
"""

from __future__ import annotations

import math
import sys

import thelma_py as tp
from thelma_py.tools.cli import run_case
from thelma_py.tools.validation import amplitude, decay_rate
from thelma_py.tools.validation import tgv_viscosity as viscosity

DEFAULT_STEPS = 5_000
"""About one e-folding time 1 / (ν (kx² + ky²)) of the velocity at the defaults."""

__all__ = ["amplitude", "build", "decay_rate", "main", "report", "viscosity"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 64, u0: float = 0.05,
          reynolds: float | None = None, nu: float | None = None,
          collision: str = "mrt") -> tp.Solver:
    """An n x n periodic box holding one Taylor-Green period. Give ``nu`` (lattice units) or
    ``reynolds`` (Re = u0 n / (2π ν)); with neither, Re = 50. See
    :func:`thelma_py.tools.validation.taylor_green`."""
    return tp.tools.validation.taylor_green(device=device, precision=precision, n=n, u0=u0,
                                      reynolds=reynolds, nu=nu, collision=collision)


def report(solver: tp.Solver, *, n: int, u0: float, **_) -> str:
    """Measured against exact decay of the velocity amplitude since step 0."""
    steps = solver.time_step
    measured = -math.log(amplitude(solver) / u0) / steps
    exact = decay_rate(n, solver.compute.nu)
    return (f"decay rate {measured:.6e} per step (exact {exact:.6e}, "
            f"relative error {measured / exact - 1:+.2e})")


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/taylor_green.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

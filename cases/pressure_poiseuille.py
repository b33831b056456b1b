"""Pressure-driven Poiseuille flow: Zou-He pressure inlet and outlet, no body force.

2D (D2Q9): a channel of n rows between walls half a spacing beyond ±y. 3D (D3Q19): a square
duct of n x n nodes, walls beyond ±y and ±z, compared with the series solution. The density
difference between the −x and +x faces is chosen so that the centre-line velocity is u_max.

Run::

    thelma run cases/pressure_poiseuille.py                    # 2D, n = 16
    thelma run cases/pressure_poiseuille.py --set dim=3 --set n=12
"""

from __future__ import annotations

import sys

import thelma_py as tp
from thelma_py.tools.cli import run_case
from thelma_py.tools.validation import pressure_poiseuille, pressure_poiseuille_error

DEFAULT_STEPS = 8_000
"""About 3 diffusion times n²/ν at the defaults (n = 16, τ = 0.8)."""

__all__ = ["build", "main", "report"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 16,
          length: int | None = None, tau: float = 0.8, u_max: float = 0.02,
          collision: str = "trt", dim: int = 2) -> tp.Solver:
    """See :func:`thelma_py.tools.validation.pressure_poiseuille`."""
    return pressure_poiseuille(device=device, precision=precision, n=n, length=length,
                               tau=tau, u_max=u_max, collision=collision, dim=dim)


def report(solver: tp.Solver, *, u_max: float, **_) -> str:
    error = pressure_poiseuille_error(solver, u_max)
    shape = "duct series" if solver.lattice.d == 3 else "parabola"
    return f"relative L2 error of u_x against the {shape}: {error:.3e}"


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/pressure_poiseuille.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

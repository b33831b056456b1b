"""Plane Poiseuille flow driven by a uniform body force (D2Q9).

The channel is periodic in x; its walls lie half a spacing beyond the -y and +y faces of the
stored nodes (halfway bounce-back), so a channel of ``n`` nodes has width H = n and node j sits
at y = j + 1/2 from the lower wall. The force g = 8 ν u_max / H² (Guo forcing) gives the steady
profile u(y) = 4 u_max (y / H)(1 − y / H).

With BGK the halfway wall is off by an amount that depends on τ, a second-order error that
vanishes only at τ = 1/2 + √(3/16); with TRT and the magic parameter Λ = 3/16 the profile is
exact to rounding for every τ.

Run::

    thelma run cases/poiseuille.py                      # n = 32, τ = 0.8, BGK; prints the error
    thelma run cases/poiseuille.py --set collision=trt  # exact up to the transient
"""

from __future__ import annotations

import sys

import thelma_py as tp
from thelma_py.tools.cli import run_case
from thelma_py.tools.validation import (
    analytic_profile,
    body_force,
    relative_l2_error,
    steps_to_steady,
)
from thelma_py.tools.validation import channel_profile as profile

DEFAULT_STEPS = 20_000
"""About 2 diffusion times H²/ν at the defaults (n = 32, τ = 0.8): the start-up transient,
which decays as exp(−π² ν t / H²), is then below 1e-8 of u_max."""

__all__ = ["analytic_profile", "body_force", "build", "main", "profile", "relative_l2_error",
           "report",
           "steps_to_steady"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 32,
          u_max: float = 0.05, tau: float = 0.8, collision: str = "bgk",
          length: int = 4) -> tp.Solver:
    """A channel of ``length`` x ``n`` nodes (x periodic, walls beyond ±y) at rest, driven by
    the body force of :func:`body_force`; see :func:`thelma_py.tools.validation.poiseuille`."""
    return tp.tools.validation.poiseuille(device=device, precision=precision, n=n, u_max=u_max,
                                    tau=tau, collision=collision, length=length)


def report(solver: tp.Solver, *, u_max: float, **_) -> str:
    return f"relative L2 error against the parabola: {relative_l2_error(solver, u_max):.3e}"


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/poiseuille.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

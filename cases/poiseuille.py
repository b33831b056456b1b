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
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.units import viscosity_from_tau

DEFAULT_STEPS = 20_000
"""About 2 diffusion times H²/ν at the defaults (n = 32, τ = 0.8): the start-up transient,
which decays as exp(−π² ν t / H²), is then below 1e-8 of u_max."""

__all__ = ["DEFAULT_STEPS", "analytic_profile", "body_force", "build", "profile",
           "relative_l2_error", "report"]


def body_force(n: int, u_max: float, tau: float) -> float:
    """Acceleration g that gives centre-line velocity ``u_max`` in a channel of width n."""
    return 8.0 * viscosity_from_tau(tau) * u_max / n**2


def build(*, n: int = 32, u_max: float = 0.05, tau: float = 0.8, collision: str = "bgk",
          length: int = 4, results: Sequence = (), device: str = "auto",
          precision: str = "float64") -> tp.Solver:
    """A channel of ``length`` x ``n`` nodes (x periodic, walls beyond ±y) at rest, driven by
    the body force of :func:`body_force`. τ sets ν = (τ − 1/2) / 3."""
    if not tau > 0.5:
        raise ValueError(f"tau must exceed 1/2, got {tau}")
    tp.units.check_mach(u_max)
    geometry = tp.geometry.channel((length, n), flow_axis=0, wall_axis=1)
    compute = tp.plugin("compute", "lbm", nu=viscosity_from_tau(tau), collision=collision,
                        force=(body_force(n, u_max, tau), 0.0))
    return tp.compose("D2Q9", geometry, compute, results=list(results), device=device,
                      precision=precision)


# -- measures ----------------------------------------------------------------------------------
def analytic_profile(n: int, u_max: float = 0.05) -> np.ndarray:
    """Exact u_x at the n node rows (walls at y = 0 and y = n, node j at y = j + 1/2)."""
    y = (np.arange(n) + 0.5) / n
    return 4.0 * u_max * y * (1.0 - y)


def profile(solver: tp.Solver) -> np.ndarray:
    """u_x across the channel (averaged along x), shape (n,)."""
    return solver.velocity()[0].mean(axis=1)


def relative_l2_error(solver: tp.Solver, u_max: float) -> float:
    """‖u − u_exact‖₂ / ‖u_exact‖₂ over the node rows."""
    exact = analytic_profile(solver.geometry.shape[1], u_max)
    return float(np.linalg.norm(profile(solver) - exact) / np.linalg.norm(exact))


def report(solver: tp.Solver, *, u_max: float, **_) -> str:
    return f"relative L2 error against the parabola: {relative_l2_error(solver, u_max):.3e}"


if __name__ == "__main__":
    run(sys.modules[__name__])

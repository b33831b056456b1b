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
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.cases.poiseuille import analytic_profile
from thelma_py.units import viscosity_from_tau

DEFAULT_STEPS = 8_000
"""About 3 diffusion times n²/ν at the defaults (n = 16, τ = 0.8)."""

__all__ = ["DEFAULT_STEPS", "build", "duct_series", "pressure_gradient",
           "pressure_poiseuille_error", "report"]


def build(*, n: int = 16, length: int | None = None, tau: float = 0.8, u_max: float = 0.02,
          collision: str = "trt", dim: int = 2, results: Sequence = (), device: str = "auto",
          precision: str = "float64") -> tp.Solver:
    """Channel (dim 2: n rows between walls beyond ±y) or square duct (dim 3: n x n, walls
    beyond ±y and ±z) of ``length`` nodes (default 4n) along x, driven by Zou-He pressure
    boundaries on −x and +x. The density drop is set from the analytic solution so that the
    centre-line velocity is ``u_max``; starts at rest with a linear density."""
    length = length or 4 * n
    nu = viscosity_from_tau(tau)
    gradient = pressure_gradient(n, u_max, nu, dim)  # dp/dx (negative), lattice units
    drop_rho = -3.0 * gradient * (length - 1)  # inlet and outlet nodes are length - 1 apart
    shape = (length, n) if dim == 2 else (length, n, n)
    geometry = tp.geometry.Geometry(shape)
    geometry.outlet("-x", rho=1.0 + 0.5 * drop_rho)
    geometry.outlet("+x", rho=1.0 - 0.5 * drop_rho)
    compute = tp.plugin("compute", "lbm", nu=nu, collision=collision)
    rho0 = tp.plugin("init", "equilibrium", rho=lambda x, *rest: 1.0 + drop_rho * (
        0.5 - x / (length - 1)) + 0 * rest[0])
    return tp.compose("D2Q9" if dim == 2 else "D3Q19", geometry, compute, init=rho0,
                      results=list(results), device=device, precision=precision)


# -- the analytic solution and the measure -----------------------------------------------------
def duct_series(y: np.ndarray, z: np.ndarray, side: float, terms: int = 50) -> np.ndarray:
    """Laminar flow in a square duct of side a (0 < y, z < a) for −dp/dx / (ρν) = 1:
    u = (4 a² / π³) Σ_{k odd} (1/k³) [1 − cosh(kπ(z − a/2)/a) / cosh(kπ/2)] sin(kπ y / a)
    ×... written as the standard single series (White, Viscous Fluid Flow, eq. 3-48)."""
    a = side
    u = np.zeros(np.broadcast_shapes(np.shape(y), np.shape(z)))
    for k in range(1, 2 * terms, 2):
        u += (1.0 / k**3) * (1.0 - np.cosh(k * np.pi * (z - a / 2) / a) / np.cosh(k * np.pi / 2)) \
            * np.sin(k * np.pi * y / a)
    return 4.0 * a**2 / np.pi**3 * u


def pressure_gradient(n: int, u_max: float, nu: float, dim: int) -> float:
    """dp/dx giving centre-line velocity ``u_max`` in a channel (dim 2) or square duct (dim 3)
    of width n (walls half a spacing beyond the outer nodes), lattice units, ρ = 1."""
    if dim == 2:
        return -8.0 * nu * u_max / n**2
    return -nu * u_max / float(duct_series(np.array(n / 2), np.array(n / 2), n))


def pressure_poiseuille_error(solver: tp.Solver, u_max: float) -> float:
    """Relative L2 error of u_x on the middle cross-section against the analytic channel / duct
    solution of centre-line speed ``u_max``: the flow that the density drop imposed by
    :func:`build` drives. Not rescaled by the gradient measured in the run, so a boundary that
    imposes the wrong density (hence the wrong speed) is an error."""
    u = solver.velocity()[0]
    if u.ndim == 2:
        ny, nx = u.shape
        exact = analytic_profile(ny, u_max)
        got = u[:, nx // 2]
    else:
        nz, ny, nx = u.shape
        y = (np.arange(ny) + 0.5)[None, :]
        z = (np.arange(nz) + 0.5)[:, None]
        centre = np.array(ny / 2)
        exact = u_max * duct_series(y, z, ny) / duct_series(centre, centre, ny)
        got = u[:, :, nx // 2]
    return float(np.linalg.norm(got - exact) / np.linalg.norm(exact))


def report(solver: tp.Solver, *, u_max: float, **_) -> str:
    error = pressure_poiseuille_error(solver, u_max)
    shape = "duct series" if solver.lattice.d == 3 else "parabola"
    return f"relative L2 error of u_x against the {shape}: {error:.3e}"


if __name__ == "__main__":
    run(sys.modules[__name__])

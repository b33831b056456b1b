"""Channels and ducts with open ends, for the LW-ACM open boundaries (and LBM alike).

- :func:`build_channel`: 2D channel of n rows between walls half a spacing beyond ±y, a
  velocity inlet on −x (the parabola, or its mean as a uniform plug) and a pressure outlet (or a
  zero-gradient outflow) on +x. Diffusive scaling: u_max = c / n, so Mach and Δx shrink
  together and the error of the weakly compressible solution goes as n⁻² (at fixed u_max the
  density drop along the channel, hence u = flux / ρ, would add an O(1/n) error).
- :func:`build_duct`: pressure boundaries on both ends of a 2D channel or a 3D square duct.
- :func:`build_half_channel`: body-force flow between a no-slip wall (−y) and a free-slip
  wall (+y), periodic along x: u(η) = g η (2H − η) / (2ν), η the distance from the wall.

Geometry: LW-ACM boundaries sit at the link midpoints, half a spacing beyond the boundary
nodes (``modules/compute/lwacm/rule.py``), LBM Zou-He boundaries on the nodes; the pressure
drop is set over the distance between them (``length`` or ``length − 1``).
"""

from __future__ import annotations

import numpy as np

import thelma_py as tp
from thelma_py.cases.pressure_poiseuille import duct_series, pressure_gradient

__all__ = ["build_channel", "build_duct", "build_half_channel", "channel_error", "duct_error",
           "half_channel_error", "parabola"]


def parabola(n: int, u_max: float, y):
    """Channel profile with walls half a spacing beyond rows 0 and n − 1."""
    return 4.0 * u_max * (y + 0.5) * (n - 0.5 - y) / n**2


def _compose(lattice: str, geometry, compute: str, nu: float, init, device: str,
             precision: str, results=()):
    return tp.compose(lattice, geometry, tp.plugin("compute", compute, nu=nu), init=init,
                      results=list(results), device=device, precision=precision)


def build_channel(n: int, *, compute: str = "lwacm-fused", nu: float = 0.1, c: float = 0.4,
                  length: int | None = None, plug: bool = False, device: str = "cpu",
                  precision: str = "float64") -> tp.Solver:
    """Parabolic inlet + pressure outlet (``plug`` False), or uniform inlet of the same flux +
    outflow (``plug``). Starts from the developed solution (the plug case from rest)."""
    length = length or 2 * n
    u_max = c / n
    gradient = -8.0 * nu * u_max / n**2
    geometry = tp.geometry.Geometry((length, n))
    if plug:
        geometry.inlet("-x", velocity=(2.0 * u_max / 3.0, 0.0))
        geometry.outflow("+x")
        init = None
    else:
        geometry.inlet("-x", velocity=lambda x, y: (parabola(n, u_max, y), 0 * y, 0 * y))
        geometry.outlet("+x", rho=1.0)
        end = length - 0.5 if compute.startswith("lwacm") else length - 1.0
        init = tp.plugin("init", "equilibrium",
                         rho=lambda x, y: 1.0 + 3.0 * gradient * (x - end) + 0 * y,
                         u=lambda x, y: (parabola(n, u_max, y) + 0 * x, 0 * y))
    return _compose("D2Q9", geometry, compute, nu, init, device, precision)


def channel_error(solver: tp.Solver, u_max: float, column: int) -> float:
    """Relative L2 error of u_x in one column against the parabola."""
    u = np.asarray(solver.velocity()[0])
    n = u.shape[0]
    exact = parabola(n, u_max, np.arange(n))
    return float(np.linalg.norm(u[:, column] - exact) / np.linalg.norm(exact))


def build_duct(n: int, *, dim: int = 3, compute: str = "lwacm-fused", nu: float = 0.1,
               c: float = 0.4, length: int | None = None, device: str = "cpu",
               precision: str = "float64") -> tp.Solver:
    """Pressure boundaries on −x and +x of a channel (2D) or square duct (3D) of side n; the
    density drop gives the centre-line speed u_max = c / n."""
    length = length or 2 * n
    u_max = c / n
    span = length if compute.startswith("lwacm") else length - 1
    drop = -3.0 * pressure_gradient(n, u_max, nu, dim) * span
    shape = (length, n) if dim == 2 else (length, n, n)
    geometry = tp.geometry.Geometry(shape)
    geometry.outlet("-x", rho=1.0 + 0.5 * drop)
    geometry.outlet("+x", rho=1.0 - 0.5 * drop)
    centre = (length - 1) / 2.0
    init = tp.plugin("init", "equilibrium",
                     rho=lambda x, *rest: 1.0 - drop * (x - centre) / span + 0 * rest[0])
    return _compose("D2Q9" if dim == 2 else "D3Q19", geometry, compute, nu, init, device,
                    precision)


def duct_error(solver: tp.Solver, u_max: float) -> float:
    """Relative L2 error of u_x on the middle cross-section against the parabola (2D) or the
    duct series (3D), not rescaled: a boundary imposing the wrong density is an error."""
    u = np.asarray(solver.velocity()[0])
    if u.ndim == 2:
        ny, nx = u.shape
        exact, got = parabola(ny, u_max, np.arange(ny)), u[:, nx // 2]
    else:
        nz, ny, nx = u.shape
        y = (np.arange(ny) + 0.5)[None, :]
        z = (np.arange(nz) + 0.5)[:, None]
        mid = np.array(ny / 2)
        exact = u_max * duct_series(y, z, ny) / duct_series(mid, mid, ny)
        got = u[:, :, nx // 2]
    return float(np.linalg.norm(got - exact) / np.linalg.norm(exact))


def build_half_channel(n: int, *, compute: str = "lwacm-fused", nu: float = 0.1,
                       c: float = 0.4, device: str = "cpu",
                       precision: str = "float64") -> tp.Solver:
    """Wall beyond −y, free slip beyond +y, periodic x (4 columns); the body force gives the
    free-slip speed u_max = c / n: g = 2 ν u_max / n²."""
    u_max = c / n
    geometry = tp.geometry.Geometry((4, n), periodic=(True, False))
    geometry.free_slip("+y")
    force = (2.0 * nu * u_max / n**2, 0.0)
    return tp.compose("D2Q9", geometry, tp.plugin("compute", compute, nu=nu, force=force),
                      device=device, precision=precision)


def half_channel_error(solver: tp.Solver, u_max: float) -> float:
    """Relative L2 error of u_x(y) against u_max η (2H − η) / H², η = y + ½, H = n."""
    u = np.asarray(solver.velocity()[0])
    n = u.shape[0]
    eta = np.arange(n) + 0.5
    exact = u_max * eta * (2.0 * n - eta) / n**2
    return float(np.linalg.norm(u[:, 1] - exact) / np.linalg.norm(exact))

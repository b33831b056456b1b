"""Fields derived from ρ and u: pressure, speed, vorticity, Q-criterion, energies.

They take NumPy arrays (host copies, for output) or CuPy arrays (on the device, for monitoring
large runs without copying the fields to the host).

Arrays follow the solver's layout: scalars (Nz, Ny, Nx) or (Ny, Nx), velocities (D, *S), x
fastest. Derivatives are central differences with spacing 1 (lattice units): wrapped on periodic
axes, one-sided at the two ends of the others (exact for fields linear in x, y, z).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from thelma_py.backend import array_module

CS2 = 1.0 / 3.0


def pressure(rho: np.ndarray, rho0: float = 1.0) -> np.ndarray:
    """Lattice pressure fluctuation p = (ρ − ρ0) c_s² = (ρ − 1) / 3 (lattice units)."""
    return (array_module(rho).asarray(rho) - rho0) * CS2


def speed(u: np.ndarray) -> np.ndarray:
    """|u|, shape S, from u of shape (D, *S)."""
    xp = array_module(u)
    return xp.sqrt((xp.asarray(u) ** 2).sum(axis=0))


def derivative(field: np.ndarray, axis: int, periodic: bool) -> np.ndarray:
    """∂field/∂x_axis (axis 0 = x) of a scalar of shape S by central differences, spacing 1.

    >>> derivative(np.arange(5.0)[None, :] * 2, axis=0, periodic=False)
    array([[2., 2., 2., 2., 2.]])
    """
    array_axis = field.ndim - 1 - axis  # x is the last array axis
    if periodic:
        return 0.5 * (np.roll(field, -1, array_axis) - np.roll(field, 1, array_axis))
    if field.shape[array_axis] < 2:
        return np.zeros_like(field)
    return np.gradient(field, axis=array_axis)


def _periodic(periodic: Sequence[bool] | None, d: int) -> tuple[bool, ...]:
    periodic = (False,) * d if periodic is None else tuple(bool(p) for p in periodic)
    if len(periodic) != d:
        raise ValueError(f"periodic needs {d} flags for a {d}D velocity, got {periodic}")
    return periodic


def velocity_gradient(u: np.ndarray, periodic: Sequence[bool] | None = None) -> np.ndarray:
    """G[a, b] = ∂u_a/∂x_b, shape (D, D, *S)."""
    xp = array_module(u)
    u = xp.asarray(u, dtype=xp.float64)
    d = u.shape[0]
    flags = _periodic(periodic, d)
    return np.stack([np.stack([derivative(u[a], b, flags[b]) for b in range(d)])
                     for a in range(d)])


def vorticity(u: np.ndarray, periodic: Sequence[bool] | None = None) -> np.ndarray:
    """Curl of u: in 2D the scalar ∂u_y/∂x − ∂u_x/∂y (shape S), in 3D a vector (3, *S)."""
    return vorticity_from_gradient(velocity_gradient(u, periodic))


def vorticity_from_gradient(g: np.ndarray) -> np.ndarray:
    """Curl from G[a, b] = ∂u_a/∂x_b: a scalar in 2D, a vector (3, *S) in 3D."""
    if g.shape[0] == 2:
        return g[1, 0] - g[0, 1]
    return np.stack([g[2, 1] - g[1, 2], g[0, 2] - g[2, 0], g[1, 0] - g[0, 1]])


def q_criterion(u: np.ndarray, periodic: Sequence[bool] | None = None) -> np.ndarray:
    """Q = ½ (‖Ω‖² − ‖S‖²) with S, Ω the symmetric and antisymmetric parts of ∇u (shape S).

    Q > 0 where rotation dominates strain (vortex cores); solid-body rotation at rate Ω has
    Q = Ω².
    """
    return q_from_gradient(velocity_gradient(u, periodic))


def q_from_gradient(g: np.ndarray) -> np.ndarray:
    """Q = ½ (‖Ω‖² − ‖S‖²) from G[a, b] = ∂u_a/∂x_b (shape (D, D, *S))."""
    gt = np.swapaxes(g, 0, 1)
    strain, rotation = 0.5 * (g + gt), 0.5 * (g - gt)
    return 0.5 * ((rotation**2).sum(axis=(0, 1)) - (strain**2).sum(axis=(0, 1)))


def kinetic_energy(u: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Volume mean of |u|²/2 over the nodes of ``mask`` (all nodes if None)."""
    xp = array_module(u)
    e = 0.5 * (xp.asarray(u, dtype=xp.float64) ** 2).sum(axis=0)
    return float(e.mean() if mask is None else e[mask].mean())


def enstrophy(u: np.ndarray, periodic: Sequence[bool] | None = None,
              mask: np.ndarray | None = None) -> float:
    """Volume mean of |ω|²/2 (the convention of the TGV reference data)."""
    return enstrophy_from_gradient(velocity_gradient(u, periodic), mask)


def enstrophy_from_gradient(g: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Volume mean of |ω|²/2 from G[a, b] = ∂u_a/∂x_b."""
    w = vorticity_from_gradient(g)
    w2 = w**2 if w.ndim == g.ndim - 2 else (w**2).sum(axis=0)
    return float(0.5 * (w2.mean() if mask is None else w2[mask].mean()))


def divergence_from_gradient(g: np.ndarray) -> np.ndarray:
    """∇·u, the trace of G[a, b] = ∂u_a/∂x_b."""
    return sum(g[a, a] for a in range(g.shape[0]))


DERIVED = {
    "p": lambda rho, u, periodic: pressure(rho),
    "speed": lambda rho, u, periodic: speed(u),
    "vorticity": lambda rho, u, periodic: vorticity(u, periodic),
    "q_criterion": lambda rho, u, periodic: q_criterion(u, periodic),
}
"""Derived output fields by name: f(rho, u, periodic) -> array."""

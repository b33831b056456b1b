"""Init plug-ins: initial density and velocity, from constants, functions or arrays.

An init plug-in returns host arrays ``(rho, u)`` for the nodes of one sub-box, given their global
coordinates, so a distributed run initialises each rank's part only. The compute plug-in turns
them into its own state (equilibrium populations for LBM).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from thelma_py.registry import register


def _evaluate(value, coords: tuple[np.ndarray, ...], shape: tuple[int, ...], name: str):
    if callable(value):
        return np.broadcast_to(np.asarray(value(*coords), dtype=np.float64), shape)
    array = np.asarray(value, dtype=np.float64)
    try:
        return np.broadcast_to(array, shape)
    except ValueError:
        raise ValueError(f"{name}: an array of shape {array.shape} does not fit the node array "
                         f"shape {shape} (Nz, Ny, Nx order)") from None


@register("init", "equilibrium")
@attrs.frozen(kw_only=True)
class Equilibrium:
    """Equilibrium at (ρ, u): each a constant, a function of (x, y[, z]) or an array."""

    rho: float | Callable | np.ndarray = 1.0
    """Density: number, f(x, y[, z]) or array of node shape (Nz, Ny, Nx)."""
    u: tuple | Callable | np.ndarray = (0.0, 0.0, 0.0)
    """Velocity: D numbers, f(x, y[, z]) -> (ux, uy[, uz]), or an array (D, Nz, Ny, Nx)."""

    def fields(self, coords: tuple[np.ndarray, ...], shape: tuple[int, ...],
               window: tuple[slice, ...] | None = None):
        """(rho, u) on the nodes with these coordinates; ``window`` slices global arrays."""
        d = len(coords)
        rho_value = self.rho[window] if _is_global_array(self.rho, window) else self.rho
        rho = _evaluate(rho_value, coords, shape, "rho")
        if callable(self.u):
            components = self.u(*coords)
            if len(components) != d:
                raise ValueError(f"u function returned {len(components)} components for {d}D")
            u = np.stack([_evaluate(c, coords, shape, "u") for c in components])
        else:
            u_value = np.asarray(self.u, dtype=np.float64)
            if u_value.ndim == 1:
                if len(u_value) < d or np.any(u_value[d:] != 0):
                    raise ValueError(f"u needs {d} components, got {tuple(u_value)}")
                u = np.stack([np.broadcast_to(v, shape) for v in u_value[:d]])
            else:
                if window is not None:
                    u_value = u_value[(slice(None), *window)]
                u = np.stack([_evaluate(c, coords, shape, "u") for c in u_value])
        if not (np.isfinite(rho).all() and np.isfinite(u).all()):
            raise ValueError("initial fields contain NaN or infinity")
        if (rho <= 0).any():
            raise ValueError(f"initial density must be positive; minimum is {rho.min()}")
        return np.array(rho), np.array(u)


def _is_global_array(value, window) -> bool:
    return window is not None and isinstance(value, np.ndarray) and value.ndim > 0


@register("init", "taylor-green")
@attrs.frozen(kw_only=True)
class TaylorGreen:
    """2D Taylor-Green vortex u = u0 (sin kx cos ky, -cos kx sin ky) with its pressure field,
    over a periodic box of ``size`` = (Lx, Ly) nodes (one period each); 3D uses the Re=1600
    Brachet initial field on a (L, L, L) box."""

    u0: float = attrs.field(default=0.05, validator=attrs.validators.gt(0.0))
    size: tuple = attrs.field(converter=tuple, default=(32, 32))
    rho0: float = 1.0

    def fields(self, coords, shape, window=None):
        d = len(coords)
        k = [2 * np.pi / n for n in self.size]
        cs2 = 1.0 / 3.0
        if d == 2:
            x, y = (c * kk for c, kk in zip(coords, k, strict=True))
            ux = self.u0 * np.sin(x) * np.cos(y)
            uy = -self.u0 * np.cos(x) * np.sin(y)
            p = 0.25 * self.rho0 * self.u0**2 * (np.cos(2 * x) + np.cos(2 * y))
            u = [ux, uy]
        else:
            x, y, z = (c * kk for c, kk in zip(coords, k, strict=True))
            ux = self.u0 * np.sin(x) * np.cos(y) * np.cos(z)
            uy = -self.u0 * np.cos(x) * np.sin(y) * np.cos(z)
            uz = 0 * x
            p = (self.rho0 * self.u0**2 / 16 * (np.cos(2 * x) + np.cos(2 * y))
                 * (np.cos(2 * z) + 2))
            u = [ux, uy, uz]
        rho = np.broadcast_to(self.rho0 + p / cs2, shape)
        return np.array(rho), np.stack([np.broadcast_to(c, shape) for c in u])

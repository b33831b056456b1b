"""Taylor-Green vortex in a periodic box: the decay of an exact Navier-Stokes solution (2D) and
the transition to turbulence at Re = 1600 (3D).

2D: u = u0 e^{−ν (kx² + ky²) t} (sin kx x cos ky y, −cos kx x sin ky y), k = 2π / n, one period
in each direction, started from the "taylor-green" init plug-in (velocity and its pressure
field). 3D: the Brachet field on n³ nodes (D3Q19 with MRT, else D3Q27), compared in the units
of the Re = 1600 spectral reference (t in L/V0 with L = n / 2π, V0 = u0). Reynolds number
Re = u0 L / ν with L = n / (2π) in both.

Run::

    thelma run cases/taylor_green.py                     # n = 64, Re = 50, MRT; prints the decay
    thelma run cases/taylor_green.py --set collision=bgk --set n=128
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.modules.results.derived import enstrophy, kinetic_energy

DEFAULT_STEPS = 5_000
"""About one e-folding time 1 / (ν (kx² + ky²)) of the velocity at the defaults."""

__all__ = ["DEFAULT_STEPS", "amplitude", "amplitude_series", "build", "decay_rate",
           "report", "tgv2d_errors", "tgv2d_exact", "tgv3d_diagnostics", "viscosity"]


def viscosity(n: int, u0: float, reynolds: float) -> float:
    """ν = u0 L / Re with L = n / (2π)."""
    return u0 * n / (2.0 * math.pi) / reynolds


def build(*, n: int = 64, u0: float = 0.05, reynolds: float | None = None,
          nu: float | None = None, collision: str = "mrt", dim: int = 2,
          results: Sequence = (), device: str = "auto", precision: str = "float64") -> tp.Solver:
    """A periodic box of n nodes per side holding one Taylor-Green period. Give ``nu``
    (lattice units) or ``reynolds`` (Re = u0 n / (2π ν)); with neither, Re = 50 (2D) or
    1600 (3D, D3Q27 with the Brachet field; D3Q19 with MRT)."""
    if dim not in (2, 3):
        raise ValueError(f"dim must be 2 or 3, got {dim!r}")
    if nu is not None and reynolds is not None:
        raise ValueError("give nu or reynolds, not both")
    if nu is None:
        nu = viscosity(n, u0, reynolds or (50.0 if dim == 2 else 1600.0))
    tp.units.check_mach(u0)
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    size = (n,) * dim
    geometry = tp.geometry.periodic_box(size)
    init = tp.plugin("init", "taylor-green", u0=u0, size=size)
    compute = tp.plugin("compute", "lbm", nu=nu, collision=collision)
    # D3Q27 in 3D, or D3Q19 for a model that does not run on D3Q27 (MRT)
    lattice = "D2Q9" if dim == 2 else (
        "D3Q19" if compute.collision.unsupported(tp.D3Q27) else "D3Q27")
    return tp.compose(lattice, geometry, compute, init=init, results=list(results),
                      device=device, precision=precision)


# -- measures of the 2D vortex -----------------------------------------------------------------
def decay_rate(n: int, nu: float) -> float:
    """Exact decay rate of the 2D velocity amplitude, ν (kx² + ky²) with k = 2π / n."""
    k = 2.0 * math.pi / n
    return nu * 2.0 * k * k


def amplitude(solver: tp.Solver) -> float:
    """2D velocity amplitude: the projection of u on the Taylor-Green mode (u0 at t = 0)."""
    ny, nx = solver.geometry.array_shape
    x = 2.0 * np.pi * np.arange(nx) / nx
    y = 2.0 * np.pi * np.arange(ny)[:, None] / ny
    u = solver.velocity()
    mode_x = np.sin(x) * np.cos(y)
    mode_y = -np.cos(x) * np.sin(y)
    return float(((u[0] * mode_x).sum() + (u[1] * mode_y).sum())
                 / ((mode_x**2).sum() + (mode_y**2).sum()))


def amplitude_series(solver: tp.Solver, skip: int, samples: int,
                     stride: int) -> tuple[np.ndarray, np.ndarray]:
    """(time steps, Taylor-Green amplitudes): after ``skip`` steps, ``samples`` values
    ``stride`` steps apart."""
    solver.run(skip)
    times, amplitudes = [], []
    for k in range(samples):
        times.append(solver.time_step)
        amplitudes.append(amplitude(solver))
        if k < samples - 1:
            solver.run(stride)
    return np.array(times), np.array(amplitudes)


def tgv2d_exact(n: int, u0: float, nu: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (ρ, u) of the 2D vortex at step t on n x n nodes (ρ0 = 1, p = (ρ − 1)/3)."""
    k = 2.0 * math.pi / n
    x = k * np.arange(n)
    y = k * np.arange(n)[:, None]
    decay = math.exp(-2.0 * nu * k * k * t)
    u = np.stack([u0 * decay * np.sin(x) * np.cos(y), -u0 * decay * np.cos(x) * np.sin(y)])
    p = -0.25 * u0**2 * decay**2 * (np.cos(2 * x) + np.cos(2 * y))
    return 1.0 + 3.0 * p, u


def tgv2d_errors(solver: tp.Solver, u0: float) -> dict[str, float]:
    """Relative L2 errors against the exact 2D vortex at the solver's step: velocity
    ‖u − u_ex‖/‖u_ex‖ and density ‖ρ − ρ_ex‖/‖ρ_ex − 1‖ (the fluctuation sets the scale)."""
    n = solver.geometry.shape[0]
    rho_ex, u_ex = tgv2d_exact(n, u0, solver.compute.nu, solver.time_step)
    rho, u = solver.density(), solver.velocity()
    return {"velocity": float(np.linalg.norm(u - u_ex) / np.linalg.norm(u_ex)),
            "density": float(np.linalg.norm(rho - rho_ex) / np.linalg.norm(rho_ex - 1.0))}


# -- measures of the 3D vortex -----------------------------------------------------------------
def tgv3d_diagnostics(u: np.ndarray, u0: float, time_step: float) -> dict[str, float]:
    """Kinetic energy and enstrophy of a periodic 3D field in the reference's units.

    ``u`` has shape (3, n, n, n) (lattice units). L = n / 2π, V0 = u0: t* = t V0 / L,
    E* = ⟨|u|²/2⟩ / V0², enstrophy* = ⟨|ω|²/2⟩ (L / V0)² (central differences).
    """
    n = u.shape[-1]
    length = n / (2.0 * math.pi)
    return {"t": time_step * u0 / length,
            "E_k": kinetic_energy(u) / u0**2,
            "enstrophy": enstrophy(u, periodic=(True, True, True)) * (length / u0) ** 2}


def report(solver: tp.Solver, *, u0: float, dim: int, **_) -> str:
    """2D: the measured decay of the velocity amplitude since step 0 against the exact one;
    3D: kinetic energy and enstrophy in the reference's units."""
    if dim == 3:
        d = tgv3d_diagnostics(solver.velocity(), u0, solver.time_step)
        return f"t* = {d['t']:.3f}: E_k* = {d['E_k']:.5f}, enstrophy* = {d['enstrophy']:.4f}"
    steps = solver.time_step
    measured = -math.log(amplitude(solver) / u0) / steps
    exact = decay_rate(solver.geometry.shape[0], solver.compute.nu)
    return (f"decay rate {measured:.6e} per step (exact {exact:.6e}, "
            f"relative error {measured / exact - 1:+.2e})")


if __name__ == "__main__":
    run(sys.modules[__name__])

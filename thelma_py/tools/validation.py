"""Validation set-ups and their measures, shared by cases/, tests and ``thelma validate``.

- lid-driven cavity (2D D2Q9, 3D D3Q19) and its centre lines against Ghia, Ghia & Shin (1982);
- plane Poiseuille flow driven by a body force, against the parabola;
- 2D Taylor-Green vortex: amplitude of the mode, exact decay, exact fields at time t;
- 3D Taylor-Green vortex: kinetic energy, enstrophy and dissipation in the units of the
  Re = 1600 spectral reference (t in L/V0 with L = n / 2π, V0 = u0).

Reference tables are read from ``$THELMA_REFERENCE`` or ``shared/reference`` next to the
repository.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.modules.results.derived import enstrophy, kinetic_energy
from thelma_py.units import from_reynolds, viscosity_from_tau

REFERENCE = Path(os.environ.get("THELMA_REFERENCE",
                                Path(__file__).resolve().parents[3] / "shared" / "reference"))
"""Directory of the reference tables (Ghia profiles, 3D TGV dissipation)."""
TGV_REFERENCE = "tgv_re1600_spectral512_dissipation.csv"


# -- lid-driven cavity -------------------------------------------------------------------------
def compute_plugin(compute: str, nu: float, collision: str, **params):
    """The compute plug-in ``compute`` at viscosity ``nu``; ``collision`` applies to lbm only."""
    if compute == "lbm":
        return tp.plugin("compute", "lbm", nu=nu, collision=collision, **params)
    return tp.plugin("compute", compute, nu=nu, **params)


def cavity(*, device: str = "auto", precision: str = "float64", n: int = 64,
           reynolds: float = 100.0, lid_velocity: float = 0.05, collision: str = "mrt",
           dim: int = 2, compute: str = "lbm") -> tp.Solver:
    """A cavity of n (x n) nodes at rest, lid speed ``lid_velocity`` (lattice units).

    ν = U n / Re from :func:`thelma_py.units.from_reynolds` (which refuses τ <= 1/2 and Mach
    above 0.3, and warns above Mach 0.1). ``dim`` = 2 uses D2Q9 with the lid on +y, 3 uses
    D3Q19 with the lid on +z; the lid moves in +x in both.
    """
    if dim not in (2, 3):
        raise ValueError(f"dim must be 2 or 3, got {dim!r}")
    params = from_reynolds(reynolds, n, lid_velocity)
    if dim == 2:
        lattice, shape, lid_face, lid = "D2Q9", (n, n), "+y", (lid_velocity, 0.0)
    else:
        lattice, shape, lid_face, lid = "D3Q19", (n, n, n), "+z", (lid_velocity, 0.0, 0.0)
    geometry = tp.geometry.cavity(shape, lid_velocity=lid, lid_face=lid_face)
    return tp.compose(lattice, geometry, compute_plugin(compute, params.nu, collision),
                      device=device, precision=precision)


def load_ghia(reynolds: int, reference: Path = REFERENCE) -> dict[str, np.ndarray]:
    """Ghia's centre-line tables: {'y', 'u', 'x', 'v'}, wall rows removed (they are the
    boundary conditions, not computed values)."""
    u = np.loadtxt(reference / f"ghia1982_re{reynolds}_u.csv", delimiter=",", skiprows=2)
    v = np.loadtxt(reference / f"ghia1982_re{reynolds}_v.csv", delimiter=",", skiprows=2)
    return {"y": u[1:-1, 0], "u": u[1:-1, 1], "x": v[1:-1, 0], "v": v[1:-1, 1]}


def interpolate_cubic(points: np.ndarray, nodes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Cubic Lagrange interpolation through the 4 nodes nearest each point (nodes sorted)."""
    out = np.empty(len(points))
    for k, p in enumerate(points):
        j = int(np.clip(np.searchsorted(nodes, p) - 2, 0, len(nodes) - 4))
        xs, ys = nodes[j:j + 4], values[j:j + 4]
        out[k] = sum(ys[a] * np.prod([(p - xs[b]) / (xs[a] - xs[b]) for b in range(4) if b != a])
                     for a in range(4))
    return out


def centerlines(solver: tp.Solver) -> dict[str, np.ndarray]:
    """Centre-line profiles of a 2D cavity in cavity units (lengths / N, velocities / U).

    Returns {'y', 'u'}: u(x = 1/2, y) and {'x', 'v'}: v(x, y = 1/2), with the wall values
    (u = 0 at y = 0, u = 1 at y = 1, v = 0 at both side walls) added at the wall positions.
    For even n the centre line falls between two node columns and is their mean.
    """
    if solver.lattice.d != 2:
        raise ValueError("centre-line profiles are defined here for the 2D cavity")
    ny, nx = solver.geometry.array_shape
    lid = solver.tags.bc_table[solver.tags.face_bc_ids["+y"], 0]
    u = solver.velocity() / lid

    def middle(array, n, axis):  # value at the mid-plane of ``axis``
        lo, hi = (n - 1) // 2, n // 2
        return 0.5 * (np.take(array, lo, axis=axis) + np.take(array, hi, axis=axis))

    y = (np.arange(ny) + 0.5) / ny
    x = (np.arange(nx) + 0.5) / nx
    return {"y": np.concatenate([[0.0], y, [1.0]]),
            "u": np.concatenate([[0.0], middle(u[0], nx, axis=1), [1.0]]),
            "x": np.concatenate([[0.0], x, [1.0]]),
            "v": np.concatenate([[0.0], middle(u[1], ny, axis=0), [0.0]])}


def ghia_deviation(solver: tp.Solver, reynolds: int = 100,
                   reference: Path = REFERENCE) -> dict[str, float]:
    """Largest |profile − Ghia| / U along each centre line, at Ghia's own sample points."""
    ghia = load_ghia(reynolds, reference)
    lines = centerlines(solver)
    du = interpolate_cubic(ghia["y"], lines["y"], lines["u"]) - ghia["u"]
    dv = interpolate_cubic(ghia["x"], lines["x"], lines["v"]) - ghia["v"]
    return {"u": float(np.abs(du).max()), "v": float(np.abs(dv).max())}


# -- Poiseuille flow ---------------------------------------------------------------------------
def cavity3d_schemes(*, device: str = "auto", precision: str = "float64", n: int = 64,
                     reynolds: float = 100.0, lid_velocity: float = 0.05,
                     schemes: Sequence[str] = ("lwacm", "lwacm-fused"),
                     decay: float = 1e-5) -> dict:
    """The 3D lid-driven cavity (D3Q19, lid on +z moving in +x) run to steady state by LBM MRT
    and by each of ``schemes``; the velocity of each against the MRT one as an L2 norm over the
    fluid nodes normalised by the lid speed, sqrt(mean |u − u_MRT|²) / U, and the largest
    node-wise deviation. Steps: the decay of the slowest start-up mode by ``decay``
    (:func:`steps_to_steady`)."""
    params = from_reynolds(reynolds, n, lid_velocity)
    steps = steps_to_steady(n, params.tau, decay)

    def steady(compute: str) -> np.ndarray:
        solver = cavity(device=device, precision=precision, n=n, reynolds=reynolds,
                        lid_velocity=lid_velocity, collision="mrt", dim=3, compute=compute)
        solver.run(steps)
        return np.asarray(solver.fields()["u"], dtype=np.float64)

    reference = steady("lbm")
    out = {"n": n, "reynolds": reynolds, "lid_velocity": lid_velocity, "steps": steps,
           "tau": params.tau, "schemes": {}}
    for scheme in schemes:
        difference = steady(scheme) - reference
        out["schemes"][scheme] = {
            "l2": float(np.sqrt(np.mean(np.sum(difference ** 2, axis=0)))) / lid_velocity,
            "max": float(np.sqrt(np.sum(difference ** 2, axis=0)).max()) / lid_velocity}
    return out


def body_force(n: int, u_max: float, tau: float) -> float:
    """Acceleration g that gives centre-line velocity ``u_max`` in a channel of width n."""
    return 8.0 * viscosity_from_tau(tau) * u_max / n**2


def steps_to_steady(n: int, tau: float, decay: float = 1e-8) -> int:
    """Steps until the slowest start-up mode has decayed by ``decay`` (from rest)."""
    return int(math.ceil(math.log(1.0 / decay) / math.pi**2 * n**2 / viscosity_from_tau(tau)))


def analytic_profile(n: int, u_max: float = 0.05) -> np.ndarray:
    """Exact u_x at the n node rows (walls at y = 0 and y = n, node j at y = j + 1/2)."""
    y = (np.arange(n) + 0.5) / n
    return 4.0 * u_max * y * (1.0 - y)


def poiseuille(*, device: str = "auto", precision: str = "float64", n: int = 32,
               u_max: float = 0.05, tau: float = 0.8, collision: str = "bgk",
               length: int = 4) -> tp.Solver:
    """A channel of ``length`` x ``n`` nodes (x periodic, walls beyond ±y) at rest, driven by
    the body force of :func:`body_force`. τ sets ν = (τ − 1/2) / 3."""
    if not tau > 0.5:
        raise ValueError(f"tau must exceed 1/2, got {tau}")
    tp.units.check_mach(u_max)
    geometry = tp.geometry.channel((length, n), flow_axis=0, wall_axis=1)
    compute = tp.plugin("compute", "lbm", nu=viscosity_from_tau(tau), collision=collision,
                        force=(body_force(n, u_max, tau), 0.0))
    return tp.compose("D2Q9", geometry, compute, device=device, precision=precision)


def channel_profile(solver: tp.Solver) -> np.ndarray:
    """u_x across the channel (averaged along x), shape (n,)."""
    return solver.velocity()[0].mean(axis=1)


def relative_l2_error(solver: tp.Solver, u_max: float) -> float:
    """‖u − u_exact‖₂ / ‖u_exact‖₂ over the node rows."""
    exact = analytic_profile(solver.geometry.shape[1], u_max)
    return float(np.linalg.norm(channel_profile(solver) - exact) / np.linalg.norm(exact))


def fitted_order(sizes, errors) -> float:
    """Slope of log(error) against log(n): −2 for second-order convergence."""
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


# -- Taylor-Green vortex -----------------------------------------------------------------------
def tgv_viscosity(n: int, u0: float, reynolds: float) -> float:
    """ν = u0 L / Re with L = n / (2π)."""
    return u0 * n / (2.0 * math.pi) / reynolds


def decay_rate(n: int, nu: float) -> float:
    """Exact decay rate of the 2D velocity amplitude, ν (kx² + ky²) with k = 2π / n."""
    k = 2.0 * math.pi / n
    return nu * 2.0 * k * k


def taylor_green(*, device: str = "auto", precision: str = "float64", n: int = 64,
                 u0: float = 0.05, reynolds: float | None = None, nu: float | None = None,
                 collision: str = "mrt", dim: int = 2) -> tp.Solver:
    """A periodic box of n nodes per side holding one Taylor-Green period. Give ``nu``
    (lattice units) or ``reynolds`` (Re = u0 n / (2π ν)); with neither, Re = 50 (2D) or
    1600 (3D, D3Q27 with the Brachet field)."""
    if dim not in (2, 3):
        raise ValueError(f"dim must be 2 or 3, got {dim!r}")
    if nu is not None and reynolds is not None:
        raise ValueError("give nu or reynolds, not both")
    if nu is None:
        nu = tgv_viscosity(n, u0, reynolds or (50.0 if dim == 2 else 1600.0))
    tp.units.check_mach(u0)
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    size = (n,) * dim
    geometry = tp.geometry.periodic_box(size)
    init = tp.plugin("init", "taylor-green", u0=u0, size=size)
    compute = tp.plugin("compute", "lbm", nu=nu, collision=collision)
    lattice = "D2Q9" if dim == 2 else ("D3Q19" if collision == "mrt" else "D3Q27")
    return tp.compose(lattice, geometry, compute, init=init, device=device,
                      precision=precision)


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


def amplitude_series(solver: tp.Solver, skip: int, samples: int, stride: int):
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


def fitted_decay_rate(times, amplitudes) -> float:
    """Decay rate per step: least-squares slope of log(amplitude) against time."""
    return float(-np.polyfit(times, np.log(amplitudes), 1)[0])


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


def precision_study(u0s=(0.005, 0.01, 0.02, 0.05, 0.1), n: int = 32, reynolds: float = 10.0,
                    decay: float = 0.5, collision: str = "bgk", device: str = "cpu") -> list[dict]:
    """fp32 against fp64 on the 2D vortex, after de Oliveira, Lugarini & Franco (2019).

    Fixed n and Re, so ν ∝ u0 (τ varies); each run lasts until the exact amplitude has fallen
    to ``decay`` (the same physical time for every u0, steps ∝ 1/u0). One row per u0: tau,
    steps, the errors of each precision against the exact solution (see
    :func:`tgv2d_errors`; the fp64 density error is mostly the acoustic transient of the
    equilibrium start) and the fp32 − fp64 difference, which isolates rounding:
    ‖u32 − u64‖/‖u64‖ and ‖ρ32 − ρ64‖/‖ρ64 − 1‖.
    """
    rows = []
    for u0 in u0s:
        nu = tgv_viscosity(n, u0, reynolds)
        steps = int(round(math.log(1.0 / decay) / decay_rate(n, nu)))
        row = {"u0": u0, "tau": 3 * nu + 0.5, "steps": steps}
        fields = {}
        for precision in ("float32", "float64"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Mach warning at u0 = 0.1, studied on purpose
                solver = taylor_green(device=device, precision=precision, n=n, u0=u0, nu=nu,
                                      collision=collision)
            solver.run(steps)
            errors = tgv2d_errors(solver, u0)
            bits = precision[-2:]
            row[f"velocity_fp{bits}"], row[f"density_fp{bits}"] = (errors["velocity"],
                                                                   errors["density"])
            fields[bits] = (solver.density().astype(np.float64),
                            solver.velocity().astype(np.float64))
        (rho32, u32), (rho64, u64) = fields["32"], fields["64"]
        row["velocity_diff"] = float(np.linalg.norm(u32 - u64) / np.linalg.norm(u64))
        row["density_diff"] = float(np.linalg.norm(rho32 - rho64) / np.linalg.norm(rho64 - 1))
        rows.append(row)
    return rows


# -- 3D Taylor-Green vortex (Re = 1600 reference) ----------------------------------------------
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


def dissipation_rate(times, energies) -> np.ndarray:
    """−dE/dt of a sampled energy curve (second-order differences, uneven times allowed)."""
    return -np.gradient(np.asarray(energies, dtype=float), np.asarray(times, dtype=float))


def load_tgv_reference(reference: Path = REFERENCE) -> dict[str, np.ndarray]:
    """The spectral Re = 1600 curves: t, E_k, minus_dEk_dt, enstrophy."""
    data = np.loadtxt(reference / TGV_REFERENCE, delimiter=",", skiprows=4)
    return {"t": data[:, 0], "E_k": data[:, 1], "minus_dEk_dt": data[:, 2],
            "enstrophy": data[:, 3]}


def compare_dissipation(times, rates, reference: Path = REFERENCE) -> dict[str, float]:
    """Coarse comparison of −dE/dt with the spectral reference: largest deviation relative to
    the reference peak, and the peak times of both curves."""
    ref = load_tgv_reference(reference)
    times, rates = np.asarray(times, float), np.asarray(rates, float)
    inside = (times >= ref["t"][0]) & (times <= ref["t"][-1])
    expected = np.interp(times[inside], ref["t"], ref["minus_dEk_dt"])
    peak = float(ref["minus_dEk_dt"].max())
    return {"max_deviation_of_peak": float(np.abs(rates[inside] - expected).max() / peak)
            if inside.any() else math.nan,
            "peak_time": float(times[np.argmax(rates)]) if len(rates) else math.nan,
            "reference_peak_time": float(ref["t"][np.argmax(ref["minus_dEk_dt"])])}


# -- pressure-driven Poiseuille flow (Zou-He inlet and outlet) ----------------------------------
def pressure_poiseuille(*, device: str = "auto", precision: str = "float64", n: int = 16,
                        length: int | None = None, tau: float = 0.8, u_max: float = 0.02,
                        collision: str = "trt", dim: int = 2) -> tp.Solver:
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
                      device=device, precision=precision)


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
    :func:`pressure_poiseuille` drives. Not rescaled by the gradient measured in the run, so a
    boundary that imposes the wrong density (hence the wrong speed) is an error."""
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


# -- Schäfer & Turek (1996) flow around a cylinder ---------------------------------------------
SCHAEFER_TUREK = {"c_D": (5.57, 5.59), "c_L": (0.0104, 0.0110), "dp": (0.1172, 0.1176)}
"""Published intervals of benchmark 2D-1 (Re = 20, steady)."""


def schaefer_turek(*, device: str = "auto", precision: str = "float64", n: int = 10,
                   reynolds: float = 20.0, u_max: float = 0.1, collision: str = "trt",
                   radius_offset: float = 0.0, interpolated: bool = True,
                   results=()) -> tp.Solver:
    """Channel H = 0.41 x L = 2.2 with a cylinder of diameter D = 0.1 centred at (0.2, 0.2);
    ``n`` nodes per diameter (dx = D / n). Parabolic Zou-He inflow of centre speed ``u_max``
    (lattice units), Zou-He pressure outlet ρ = 1, walls half a spacing beyond ±y. Re = U D / ν
    with the mean inflow speed U = 2 u_max / 3 (Re 20: test 2D-1; Re 100: test 2D-2).

    The inlet nodes lie on x = 0 (wet nodes) and the rows at y = (j + 1/2) dx, so the domain is
    (22 n + 1) x 4.1 n nodes; the cylinder (boundary id :data:`CYLINDER_ID`) is the set of
    nodes within n/2 + ``radius_offset`` of its centre. With ``interpolated`` (default) its
    links use interpolated bounce-back at the exact circle; without, the halfway staircase.
    The flow starts from the inflow profile at every node."""
    ny = round(4.1 * n)
    if abs(ny - 4.1 * n) > 1e-9:
        raise ValueError(f"n = {n}: H = 4.1 n must be a whole number of nodes (n = 10, 20, ...)")
    nx = 22 * n + 1
    u_mean = 2.0 * u_max / 3.0
    nu = u_mean * n / reynolds
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    geometry = tp.geometry.Geometry((nx, ny))

    def inflow(x, y):
        s = (y + 0.5) / ny
        return (4.0 * u_max * s * (1.0 - s), 0.0 * y)

    geometry.inlet("-x", velocity=inflow)
    geometry.outlet("+x", rho=1.0)
    body = geometry.body(tp.geometry.Cylinder((2.0 * n, 2.0 * n - 0.5),
                                              n / 2.0 + radius_offset), interpolated=interpolated)
    compute = tp.plugin("compute", "lbm", nu=nu, collision=collision)
    assert body == CYLINDER_ID
    # start from the inflow profile everywhere: an impulsive start from rest sends pressure
    # waves of δρ ≈ 0.2 that the outlet does not absorb at τ ≈ 0.52 (Re = 100, n = 10)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=inflow)
    return tp.compose("D2Q9", geometry, compute, init=init, results=list(results),
                      device=device, precision=precision)


CYLINDER_ID = 3
"""Boundary id of the cylinder in :func:`schaefer_turek` (after the inlet and outlet rows)."""


def schaefer_turek_measures(solver: tp.Solver, u_max: float = 0.1) -> dict[str, float]:
    """c_D, c_L (from the momentum-exchange force) and Δp = p(front) − p(back) in the
    benchmark's units (ρ = 1, U = 0.2 m/s: p scaled by (0.2 / U_lattice)²). ``u_max`` is the
    lattice inflow centre speed the solver was built with."""
    from thelma_py.modules.compute.lbm.forces import forces

    n = (solver.geometry.shape[0] - 1) // 22
    u_mean = 2.0 * u_max / 3.0
    force = forces(solver.engine, [CYLINDER_ID])[CYLINDER_ID]
    scale = 0.5 * u_mean**2 * n
    rho = solver.density()
    rows = rho[2 * n - 1: 2 * n + 1].mean(axis=0)  # y = 2n - 1/2: between two node rows
    front, back = int(round(1.5 * n)), int(round(2.5 * n))
    solid = solver.tags.solid[2 * n - 1: 2 * n + 1].any(axis=0)

    def wall_value(x0, step):  # linear extrapolation from the two nearest fluid nodes
        x = x0
        while solid[x]:
            x -= step
        return rows[x] + (rows[x] - rows[x - step]) * (x - x0) / step * -1.0

    dp_lattice = (wall_value(front, 1) - wall_value(back, -1)) / 3.0
    return {"c_D": float(force[0] / scale), "c_L": float(force[1] / scale),
            "dp": float(dp_lattice * (0.2 / u_mean) ** 2)}


def run_schaefer_turek(n: int, *, device: str = "auto", steps: int | None = None,
                       tolerance: float = 1e-6, every: int | None = None, **params) -> dict:
    """Run 2D-1 at ``n`` nodes per diameter until c_D changes by less than ``tolerance``
    (relative) between checks, or ``steps``; returns the measures, steps and nodes. The
    defaults scale with the flow-through time n / u_max: a check every 5 n / u_max steps, at
    most 400 n / u_max steps (u_max = 0.1: 50 n and 4000 n)."""
    solver = schaefer_turek(device=device, n=n, **params)
    u_max = params.get("u_max", 0.1)
    every = every or round(5 * n / u_max)
    steps = steps or round(400 * n / u_max)
    previous = math.inf
    measures = {}
    while solver.time_step < steps:
        solver.run(every)
        measures = schaefer_turek_measures(solver, u_max)
        if abs(measures["c_D"] - previous) < tolerance * abs(measures["c_D"]):
            break
        previous = measures["c_D"]
    return {"n": n, "u_max": u_max, "steps": solver.time_step, "nodes": solver.node_count,
            **measures}


def observed_order(sizes, values, reference: float) -> list[float]:
    """Order log2(e_k / e_k+1) / log2(n_k+1 / n_k) of the errors |value − reference| between
    successive resolutions."""
    errors = [abs(v - reference) for v in values]
    return [math.log(a / b) / math.log(m / n) for a, b, n, m in
            zip(errors, errors[1:], sizes, sizes[1:], strict=False)]


SCHAEFER_TUREK_2D2 = {"St": (0.295, 0.305), "c_D_max": (3.22, 3.24), "c_L_max": (0.99, 1.01)}
"""Published intervals of benchmark 2D-2 (Re = 100, periodic vortex shedding)."""


def shedding_measures(steps, c_d, c_l, n: int, u_mean: float) -> dict[str, float]:
    """St = D f / U (D = ``n`` nodes, U = ``u_mean``), max c_D and max c_L over the second half
    of a force history (step, c_D, c_L arrays), where shedding is periodic. The period is the
    mean spacing of the upward zero crossings of c_L − mean(c_L), each located by linear
    interpolation between samples; NaN with fewer than three crossings."""
    t, cd, cl = (np.asarray(v, dtype=np.float64) for v in (steps, c_d, c_l))
    late = t >= t[0] + (t[-1] - t[0]) / 2
    t, cd, cl = t[late], cd[late], cl[late]
    s = cl - cl.mean()
    up = np.flatnonzero((s[:-1] < 0) & (s[1:] >= 0))
    crossings = t[up] + (t[up + 1] - t[up]) * (-s[up]) / (s[up + 1] - s[up])
    period = float(np.diff(crossings).mean()) if len(crossings) >= 3 else math.nan
    return {"St": n / (period * u_mean), "c_D_max": float(cd.max()),
            "c_L_max": float(cl.max()), "periods": max(len(crossings) - 1, 0)}


def schaefer_turek_2d2(n: int = 20, *, device: str = "auto", steps: int | None = None,
                       u_max: float = 0.1, every: int | None = None, **params) -> dict:
    """Test 2D-2 (Re = 100, unsteady) at ``n`` nodes per diameter: the forces plug-in records
    c_D, c_L every ``every`` steps (default n/4, at least 100 samples per shedding period) for
    ``steps`` steps (default 400 n / u_max, about 80 shedding periods: the shedding grows from
    the asymmetry of the geometry and is periodic over the second half); returns
    :func:`shedding_measures`."""
    u_mean = 2.0 * u_max / 3.0
    history = tp.plugin("results", "forces", every=every or max(1, n // 4),
                        bodies=[CYLINDER_ID], velocity=u_mean, area=float(n))
    solver = schaefer_turek(device=device, n=n, reynolds=100.0, u_max=u_max,
                            results=[history], **params)
    solver.run(steps or round(400 * n / u_max))
    records = history.history
    return {"n": n, "steps": solver.time_step, **shedding_measures(
        [r["step"] for r in records], [r[CYLINDER_ID]["cD"] for r in records],
        [r[CYLINDER_ID]["cL"] for r in records], n, u_mean)}

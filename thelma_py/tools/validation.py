"""Validation sweeps and the generic measures they share, for ``thelma validate`` and the tests.

A sweep runs cases of :mod:`thelma_py.cases` at several sizes, schemes or precisions and
returns a table: the 3D cavity by LW-ACM against LBM MRT, fp32 against fp64 on the 2D
Taylor-Green vortex, the Schäfer-Turek 2D-1 and 2D-2 cylinder. The generic measures are fitted
orders and decay rates, the time to a steady state and the 3D Taylor-Green dissipation against
the spectral reference. Each flow's set-up and its own measures are in its case file: this
module imports the cases, never the reverse. Reference tables: :mod:`thelma_py.cases.reference`.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from thelma_py.cases import cylinder, cylinder_2d2, lid_driven_cavity, taylor_green
from thelma_py.cases.reference import load_tgv_reference
from thelma_py.divergence import DivergenceError
from thelma_py.units import from_reynolds, viscosity_from_tau


# -- generic measures --------------------------------------------------------------------------
def steps_to_steady(n: int, tau: float, decay: float = 1e-8) -> int:
    """Steps until the slowest start-up mode of a channel n wide has decayed by ``decay``
    (from rest): ln(1 / decay) n² / (π² ν)."""
    return int(math.ceil(math.log(1.0 / decay) / math.pi**2 * n**2 / viscosity_from_tau(tau)))


def fitted_order(sizes, errors) -> float:
    """Slope of log(error) against log(n): −2 for second-order convergence."""
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


def observed_order(sizes, values, reference: float) -> list[float]:
    """Order log2(e_k / e_k+1) / log2(n_k+1 / n_k) of the errors |value − reference| between
    successive resolutions."""
    errors = [abs(v - reference) for v in values]
    return [math.log(a / b) / math.log(m / n) for a, b, n, m in
            zip(errors, errors[1:], sizes, sizes[1:], strict=False)]


def fitted_decay_rate(times, amplitudes) -> float:
    """Decay rate per step: least-squares slope of log(amplitude) against time."""
    return float(-np.polyfit(times, np.log(amplitudes), 1)[0])


def dissipation_rate(times, energies) -> np.ndarray:
    """−dE/dt of a sampled energy curve (second-order differences, uneven times allowed)."""
    return -np.gradient(np.asarray(energies, dtype=float), np.asarray(times, dtype=float))


def compare_dissipation(times, rates, reference: Path | None = None) -> dict[str, float]:
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


# -- sweeps ------------------------------------------------------------------------------------
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
        solver = lid_driven_cavity.build(device=device, precision=precision, n=n,
                                         reynolds=reynolds, lid_velocity=lid_velocity,
                                         collision="mrt", dim=3, compute=compute)
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


def precision_study(u0s=(0.005, 0.01, 0.02, 0.05, 0.1), n: int = 32, reynolds: float = 10.0,
                    decay: float = 0.5, collision: str = "bgk", device: str = "cpu") -> list[dict]:
    """fp32 against fp64 on the 2D vortex, after de Oliveira, Lugarini & Franco (2019).

    Fixed n and Re, so ν ∝ u0 (τ varies); each run lasts until the exact amplitude has fallen
    to ``decay`` (the same physical time for every u0, steps ∝ 1/u0). One row per u0: tau,
    steps, the errors of each precision against the exact solution (see
    :func:`thelma_py.cases.taylor_green.tgv2d_errors`; the fp64 density error is mostly the
    acoustic transient of the equilibrium start) and the fp32 − fp64 difference, which isolates
    rounding: ‖u32 − u64‖/‖u64‖ and ‖ρ32 − ρ64‖/‖ρ64 − 1‖.
    """
    rows = []
    for u0 in u0s:
        nu = taylor_green.viscosity(n, u0, reynolds)
        steps = int(round(math.log(1.0 / decay) / taylor_green.decay_rate(n, nu)))
        row = {"u0": u0, "tau": 3 * nu + 0.5, "steps": steps}
        fields = {}
        for precision in ("float32", "float64"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Mach warning at u0 = 0.1, studied on purpose
                solver = taylor_green.build(device=device, precision=precision, n=n, u0=u0,
                                            nu=nu, collision=collision)
            solver.run(steps)
            errors = taylor_green.tgv2d_errors(solver, u0)
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


def run_schaefer_turek(n: int, *, device: str = "auto", steps: int | None = None,
                       tolerance: float = 1e-6, **params) -> dict:
    """Test 2D-1 (:mod:`thelma_py.cases.cylinder`) at ``n`` nodes per diameter, run until its
    drag is steady to ``tolerance`` (the case's stop rule) or for ``steps`` (default
    800 n / u_max; the acoustic waves of the start, which set when the drag is steady, decay
    over about 4000 n steps at u_max = 0.1). Returns the measures, the steps, the nodes and
    whether the stop rule ended the run."""
    solver = cylinder.build(device=device, n=n, tolerance=tolerance, **params)
    u_max = cylinder.inflow_speed(n, params.get("u_max"))
    solver.run(steps or round(800 * n / u_max))
    return {"n": n, "u_max": u_max, "steps": solver.time_step, "nodes": solver.node_count,
            "steady": solver.stop_reason is not None,
            **cylinder.schaefer_turek_measures(solver, u_max)}


def schaefer_turek_2d2(n: int = 20, *, device: str = "auto", steps: int | None = None,
                       u_max: float = 0.05, **params) -> dict:
    """Test 2D-2 (:mod:`thelma_py.cases.cylinder_2d2`, Re = 100, unsteady) at ``n`` nodes per
    diameter for ``steps`` steps (default 400 n / u_max, about 80 shedding periods: the
    shedding grows from the asymmetry of the geometry and is periodic over the second half);
    returns :func:`shedding_run`'s record (the measures of
    :func:`thelma_py.cases.cylinder_2d2.shedding_measures` and the force history: steps, c_D,
    c_L), forces sampled every n/4 steps as the case does."""
    period = 5.0 * n / u_max
    return shedding_run(n, u_max=u_max, periods=(steps or round(400 * n / u_max)) / period,
                        samples=round(period / max(1, n // 4)), device=device, **params)


def shedding_run(n: int, compute: str = "lbm", *, u_max: float = 0.05, periods: float = 36.0,
                 samples: int = 100, device: str = "auto", precision: str = "float64",
                 max_seconds: float | None = None, **params) -> dict:
    """Test 2D-2 at ``n`` with ``compute`` for ``periods`` nominal shedding periods of
    5 n / u_max steps (St = 0.3), c_D and c_L sampled ``samples`` times per period, run one
    period at a time; ``max_seconds`` (building included) ends it early, at a whole period
    (``stopped_at``, in periods). JSON-ready: the measures of
    :func:`thelma_py.cases.cylinder_2d2.shedding_measures` (NaN if it diverged:
    ``diverged_at``), τ, u_max / c (c: c_s = 1/√3 for LBM, c_a = √(2ν) for LW-ACM), the time
    and MLUPS, and the force history."""
    start = time.perf_counter()
    period = 5.0 * n / u_max
    nu = 2.0 * u_max / 3.0 * n / 100.0
    solver = cylinder_2d2.build(n=n, u_max=u_max, compute=compute, device=device,
                                precision=precision, every=max(1, round(period / samples)),
                                **params)
    total, chunk = round(periods * period), round(period)
    stopped = diverged = None
    try:
        while solver.time_step < total:
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                stopped = solver.time_step / period
                break
            solver.run(min(chunk, total - solver.time_step))
    except DivergenceError:
        diverged = solver.time_step / period
    history = cylinder_2d2.force_history(solver)
    measures = (cylinder_2d2.shedding_measures(*history, n, 2.0 * u_max / 3.0)
                if diverged is None and len(history[0]) > 8 else
                {"St": math.nan, "c_D_max": math.nan, "c_L_max": math.nan, "periods": 0})
    sound = 1.0 / math.sqrt(3.0) if compute == "lbm" else math.sqrt(2.0 * nu)
    return {"n": n, "compute": compute, "params": dict(params), "u_max": u_max,
            "tau": 3.0 * nu + 0.5, "u_over_c": u_max / sound, "precision": precision,
            "steps": int(solver.time_step), "every": max(1, round(period / samples)),
            "wall_seconds": time.perf_counter() - start, "mlups": solver.mlups,
            "stopped_at": stopped, "diverged_at": diverged, **measures,
            "history": [list(map(float, h)) for h in history]}

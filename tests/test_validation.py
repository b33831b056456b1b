"""Validation of the NumPy reference against published and analytic solutions.

Sizes are chosen so that the whole file runs in about 15 s on two CPU cores (the CI budget);
each test states its tolerance and why. The case scripts in cases/ hold the set-ups, so these
tests also check that what users run is what was validated.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from tests.lbm_setups import COLLISIONS, supported
from thelma_py.cases import lid_driven_cavity as cavity
from thelma_py.cases import poiseuille, taylor_green
from thelma_py.cases.reference import REFERENCE, load_ghia
from thelma_py.tools.validation import fitted_decay_rate, steps_to_steady

ROOT = Path(__file__).resolve().parents[1]


# -- (a) lid-driven cavity, Re = 100, against Ghia, Ghia & Shin (1982) -------------------------

@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:lattice velocity 0.1 is Mach")
@pytest.mark.parametrize(("collision", "measured"), [("mrt", 0.0096), ("trt", 0.0113)])
def test_cavity_re100_matches_ghia(collision, measured):
    """Centre-line u(y) and v(x) at Ghia's 15 interior points, cubic interpolation between
    nodes (wall values included), max |Δ| / U < 0.02.

    n = 32, U = 0.1, 4000 steps (12.5 convective times; the deviation changes by less than
    1e-4 after 3000 steps). Measured: 0.0096 (MRT) and 0.0113 (TRT); at n = 64 it drops to
    0.005, so the remaining deviation is discretisation error (Ghia's own values carry
    ~1e-3). A 2 % bound at n = 32 leaves a factor of two and still catches a wrong wall
    position (half a node shifts the profiles by ~0.05 here) or a wrong viscosity.
    """
    solver = cavity.build(device="cpu", n=32, reynolds=100, lid_velocity=0.1,
                          collision=collision)
    solver.run(4000)
    deviation = cavity.ghia_deviation(solver, 100, REFERENCE)
    assert max(deviation.values()) < 0.02, deviation
    # documented value (loose, so that tiny rounding changes do not matter)
    assert max(deviation.values()) == pytest.approx(measured, abs=2e-3)


def test_ghia_tables_are_read_as_documented():
    ghia = load_ghia(100, REFERENCE)
    assert len(ghia["y"]) == len(ghia["x"]) == 15  # 17 rows minus the two wall rows
    assert np.all(np.diff(ghia["y"]) > 0) and np.all(np.diff(ghia["x"]) > 0)
    # a few values from Table I / II at Re = 100
    assert ghia["u"][ghia["y"] == 0.5][0] == pytest.approx(-0.20581)
    assert ghia["v"][ghia["x"] == 0.2344][0] == pytest.approx(0.17527)


def test_cubic_interpolation_is_exact_for_cubics():
    nodes = np.linspace(0.0, 1.0, 9)
    points = np.array([0.01, 0.33, 0.5, 0.97])
    values = cavity.interpolate_cubic(points, nodes, 2 * nodes**3 - nodes + 0.5)
    np.testing.assert_allclose(values, 2 * points**3 - points + 0.5, atol=1e-14)


# -- (b) Poiseuille flow driven by a body force ------------------------------------------------

@pytest.mark.slow
def test_poiseuille_bgk_converges_at_second_order():
    """BGK, τ = 1.2, u_max = 0.05, n = 8, 16, 32, run until the start-up transient has
    decayed below 1e-6 of u_max (exp(−π² ν t / H²)).

    With halfway bounce-back the steady BGK solution is the exact parabola with the walls
    displaced by a τ-dependent amount, so the relative L2 error falls as n⁻²: the fitted slope
    must lie in [−2.2, −1.8]. Measured: errors 3.45e-2, 8.63e-3, 2.16e-3, slope −2.000.
    """
    tau, u_max = 1.2, 0.05
    sizes = (8, 16, 32)
    errors = []
    for n in sizes:
        solver = poiseuille.build(device="cpu", n=n, u_max=u_max, tau=tau, collision="bgk",
                                  length=1)
        solver.run(steps_to_steady(n, tau, decay=1e-6))
        errors.append(poiseuille.relative_l2_error(solver, u_max))
    slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert -2.2 <= slope <= -1.8, (slope, errors)
    # the error is not accidentally zero (τ away from the BGK magic value) and is small
    assert 1e-2 < errors[0] < 6e-2 and errors[-1] < 4e-3, errors


@pytest.mark.parametrize(("collision", "tau"), [("trt", 0.8), ("trt", 1.4),
                                                ("bgk", 0.5 + math.sqrt(3 / 16))])
@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.slow
def test_poiseuille_is_exact_with_the_magic_combination(collision, tau, n):
    """TRT with Λ = 3/16 (any τ), or BGK at τ = 1/2 + √(3/16) (where BGK's Λ = (τ − 1/2)² is
    3/16), puts the halfway wall exactly: the parabola is reproduced to rounding. Run to a
    transient of 1e-12; measured errors ~1e-12, bound 1e-10."""
    solver = poiseuille.build(device="cpu", n=n, u_max=0.05, tau=tau, collision=collision,
                              length=1)
    solver.run(steps_to_steady(n, tau, decay=1e-12))
    assert poiseuille.relative_l2_error(solver, 0.05) < 1e-10


def test_poiseuille_analytic_profile():
    """u = 4 u_max y (H − y) / H² at y = j + 1/2; its maximum is u_max at the centre."""
    profile = poiseuille.analytic_profile(4, u_max=1.0)
    np.testing.assert_allclose(profile, [7 / 16, 15 / 16, 15 / 16, 7 / 16], rtol=1e-15)
    assert poiseuille.body_force(32, 0.05, 0.8) == pytest.approx(8 * 0.1 * 0.05 / 32**2)


# -- (c) Taylor-Green vortex decay -------------------------------------------------------------

@pytest.mark.parametrize("collision", [c for c in COLLISIONS if supported("D2Q9", c)])
def test_taylor_green_decay_rate(collision):
    """n = 32, ν = 0.02, u0 = 0.02 (Ma = 0.035). The amplitude of the Taylor-Green mode is
    fitted to exp(−r t) over steps 100..600 (amplitude falls to 0.47 of its start), skipping
    the first 100 steps of acoustic start-up transient from the equilibrium initial state.

    r must be within 1 % of ν (kx² + ky²), for every registered model. Measured deviations:
    BGK −0.02 %, TRT −0.25 %, MRT −0.01 %: the remaining error is the O(k²) dispersion of
    the lattice at 32 nodes per wavelength. A wrong viscosity (e.g. τ − 1/2 versus τ) would be
    off by 10 % or more.
    """
    n, nu, u0 = 32, 0.02, 0.02
    solver = taylor_green.build(device="cpu", n=n, u0=u0, nu=nu, collision=collision)
    assert taylor_green.amplitude(solver) == pytest.approx(u0, rel=1e-12)
    rate = fitted_decay_rate(*taylor_green.amplitude_series(solver, skip=100, samples=11,
                                                             stride=50))
    exact = taylor_green.decay_rate(n, nu)
    assert abs(rate / exact - 1.0) < 0.01, (rate, exact)


def _tgv_plot_module():
    spec = importlib.util.spec_from_file_location("tgv3d_plot",
                                                  ROOT / "benchmarks" / "tgv3d_plot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tgv3d_summary_of_finished_and_diverged_runs():
    """A run whose energy falls as exp(−(t/6)²) has its dissipation peak at t = 6/√2; cut by a
    blow-up at t = 7 it keeps only the samples before t = 6.5 (still past the peak), and cut at
    t = 4.5 (before the peak) it says so."""
    plot = _tgv_plot_module()
    t = np.linspace(0.0, 12.0, 241)
    energy = 0.125 * np.exp(-((t / 6.0) ** 2))
    run = {"t": list(t), "E_k": list(energy), "enstrophy": list(energy), "reynolds": 1600.0,
           "diverged_at": None}
    whole = plot.summarise(run)
    assert whole["peak_time"] == pytest.approx(6.0 / math.sqrt(2.0), abs=0.06)
    assert whole["peak_seen"]
    cut = plot.summarise({**run, "diverged_at": 7.0})
    assert cut["t"][-1] < 6.5 and cut["peak_seen"]
    assert cut["peak"] == pytest.approx(whole["peak"], rel=1e-3)
    early = plot.summarise({**run, "diverged_at": 4.5})
    assert not early["peak_seen"]

"""Validation of the NumPy LW-ACM references (two-step and single-step) against analytic and
published solutions. The whole file runs in about 20 s on two CPU cores.

Both schemes perform the same arithmetic in the bulk, to rounding (the two-step scheme takes the
odd-part term from its stored momentum j = ρ u); they differ at walls (bounce-back of f* with a
scaled Ladd term, against finite-difference ghosts on ρ, u), and for walls at rest even those
coincide (tests/test_lwacm_reference.py), so Taylor-Green and Poiseuille give the same numbers
for both and the cavity, with its moving lid, tells them apart. The two-step ρ, u read here are
Σ_i f*_i and j / ρ: a momentum j that a step failed to update would stall the Taylor-Green
decay.
"""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from tests.test_validation import REFERENCE, cavity, poiseuille, taylor_green
from thelma_py.tools import validation
from thelma_py.tools.validation import fitted_decay_rate, steps_to_steady
from thelma_py.units import viscosity_from_tau

SCHEMES = ("lwacm", "lwacm-fused")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_taylor_green_decay_rate(scheme):
    """n = 32, ν = 0.02, u0 = 0.02, the LBM test's set-up: amplitude fitted to exp(−r t) over
    steps 100..600. r must be within 1 % of ν (kx² + ky²). Measured: −0.32 % for both schemes
    (identical: a periodic box has no wall), the O(k²) lattice dispersion at 32 nodes per
    wavelength; a wrong ν (τ instead of τ − ½, or κ with the wrong sign) is off by 10 % or more.
    """
    n, nu, u0 = 32, 0.02, 0.02
    init = tp.plugin("init", "taylor-green", u0=u0, size=(n, n))
    solver = tp.compose("D2Q9", tp.geometry.periodic_box((n, n)),
                        tp.plugin("compute", scheme, nu=nu), init=init, device="cpu")
    assert taylor_green.amplitude(solver) == pytest.approx(u0, rel=1e-12)
    rate = fitted_decay_rate(*taylor_green.amplitude_series(solver, skip=100, samples=11,
                                                             stride=50))
    exact = taylor_green.decay_rate(n, nu)
    assert abs(rate / exact - 1.0) < 0.01, (rate, exact)
    assert rate / exact - 1.0 == pytest.approx(-0.0032, abs=5e-4)


@pytest.mark.filterwarnings("ignore:lattice velocity 0.1 is Mach")
@pytest.mark.parametrize(("scheme", "measured"), [("lwacm", 0.0125), ("lwacm-fused", 0.0127)])
@pytest.mark.slow
def test_cavity_re100_matches_ghia(scheme, measured):
    """The LBM test's set-up (tests/test_validation.py): n = 32, U = 0.1, Re = 100, 4000 steps;
    centre-line u(y), v(x) at Ghia's points, max |Δ| / U < 0.02.

    Measured 0.0125 (two-step) and 0.0127 (single step), against 0.0096 (MRT) and 0.0113 (TRT)
    for LBM. (The single step gave 0.0106 while its lid links took the ghost velocity in
    their even part too: see rule.moving_wall_ghost; now the two schemes differ by Ladd's
    density.) The two-step lid uses Ladd's term with the wall velocity scaled by 1 − κ; with the
    unscaled term the lid would move at U / (2τ − 1) and the deviation is 3.5 (see
    reference.two_step_wall_tags).
    """
    solver = cavity.build(device="cpu", n=32, reynolds=100, lid_velocity=0.1, compute=scheme)
    solver.run(4000)
    deviation = cavity.ghia_deviation(solver, 100, REFERENCE)
    assert max(deviation.values()) < 0.02, deviation
    assert max(deviation.values()) == pytest.approx(measured, abs=2e-3)


@pytest.mark.slow
def test_poiseuille_converges_at_second_order():
    """Body-force-driven channel, τ = 0.8, u_max = 0.05, n = 8, 16, 32, run until the start-up
    transient is below 1e-6 of u_max; relative L2 error against the parabola.

    Measured (both schemes, identical to 1e-12 since the walls are at rest): errors 2.139e-2,
    5.348e-3, 1.336e-3, fitted slope −2.000 (also −2.000 at τ = 0.6 and 1.0, with errors that do
    not depend on τ: the halfway wall is where the linear ghost u_g = −u(x) puts it, which misses
    the parabola's curvature by O(1/n²)). Asserted: slope in [−2.1, −1.9].
    """
    tau, u_max, sizes = 0.8, 0.05, (8, 16, 32)
    errors = {scheme: [] for scheme in SCHEMES}
    for n in sizes:
        for scheme in SCHEMES:
            compute = tp.plugin("compute", scheme, nu=viscosity_from_tau(tau),
                                force=(poiseuille.body_force(n, u_max, tau), 0.0))
            solver = tp.compose("D2Q9", tp.geometry.channel((1, n), flow_axis=0, wall_axis=1),
                                compute, device="cpu")
            solver.run(steps_to_steady(n, tau, decay=1e-6))
            errors[scheme].append(poiseuille.relative_l2_error(solver, u_max))
    for scheme in SCHEMES:
        slope = np.polyfit(np.log(sizes), np.log(errors[scheme]), 1)[0]
        assert -2.1 <= slope <= -1.9, (scheme, slope, errors)
        assert 1e-2 < errors[scheme][0] < 3e-2 and errors[scheme][-1] < 2e-3, errors
    np.testing.assert_allclose(errors["lwacm"], errors["lwacm-fused"], rtol=1e-9)


@pytest.mark.slow
def test_3d_cavity_velocity_follows_lbm_mrt_on_a_coarse_grid():
    """The issue's check (64³, Re = 100, within 2% of U in L2) runs on the GPU
    (tests/test_gpu_lwacm.py, `thelma validate --only cavity3d`). On the CPU: 12³ at Re = 10,
    both schemes within 4.5% of U of the MRT field (measured 3.73% for both: the schemes differ
    at second order in dx, which is 1/12 here; at 16³ the difference falls to 2.68%)."""
    result = validation.cavity3d_schemes(device="cpu", n=12, reynolds=10.0)
    assert set(result["schemes"]) == {"lwacm", "lwacm-fused"}
    for scheme, measure in result["schemes"].items():
        assert 0.01 < measure["l2"] < 0.045, (scheme, measure)

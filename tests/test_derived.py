"""Derived output fields against analytic velocity fields."""

from __future__ import annotations

import math

import numpy as np
import pytest

from thelma_py.cases.reference import load_tgv_reference
from thelma_py.cases.taylor_green import tgv3d_diagnostics
from thelma_py.modules.results import derived
from thelma_py.tools import validation


def solid_body_rotation(shape, omega, dim):
    """u = Ω ẑ × (r − centre): vorticity 2Ω (along z), strain zero, Q = Ω²."""
    grids = np.meshgrid(*[np.arange(n, dtype=float) for n in reversed(shape)], indexing="ij")
    z_y_x = grids  # array axes (z, y, x) or (y, x)
    x, y = z_y_x[-1] - (shape[0] - 1) / 2, z_y_x[-2] - (shape[1] - 1) / 2
    u = [-omega * y, omega * x] + ([np.zeros_like(x)] if dim == 3 else [])
    return np.stack(u)


@pytest.mark.parametrize("dim", [2, 3])
def test_solid_body_rotation_has_vorticity_two_omega_and_positive_q(dim):
    omega = 0.003
    shape = (9, 7) if dim == 2 else (9, 7, 5)
    u = solid_body_rotation(shape, omega, dim)
    w = derived.vorticity(u)
    if dim == 2:
        np.testing.assert_allclose(w, 2 * omega, rtol=1e-12)
    else:
        np.testing.assert_allclose(w[2], 2 * omega, rtol=1e-12)
        np.testing.assert_allclose(w[:2], 0.0, atol=1e-15)
        np.testing.assert_allclose(derived.q_criterion(u), omega**2, rtol=1e-12)
    np.testing.assert_allclose(derived.speed(u), np.hypot(u[0], u[1]), rtol=1e-15)


def test_pure_strain_has_negative_q_and_no_vorticity():
    z, y, x = np.meshgrid(*[np.arange(6.0)] * 3, indexing="ij")
    a = 0.01
    u = np.stack([a * x, -a * y, 0 * z])  # S = diag(a, -a, 0): Q = -a²
    np.testing.assert_allclose(derived.vorticity(u), 0.0, atol=1e-16)
    np.testing.assert_allclose(derived.q_criterion(u), -a * a, rtol=1e-12)


def test_periodic_central_differences_of_a_sine_match_the_lattice_derivative():
    n = 32
    k = 2 * math.pi / n
    x = np.arange(n)
    u = np.stack([np.zeros((n, n)), np.broadcast_to(np.sin(k * x), (n, n))])
    w = derived.vorticity(u, periodic=(True, True))  # ∂u_y/∂x = k cos(kx) sin(k)/k
    np.testing.assert_allclose(w[3], np.sin(k) * np.cos(k * x), atol=1e-14)


def test_pressure_is_rho_minus_one_over_three():
    np.testing.assert_allclose(derived.pressure(np.array([1.0, 1.03])), [0.0, 0.01], atol=1e-15)


def test_tgv3d_diagnostics_at_t0_match_the_reference_initial_values():
    """Brachet field at n = 24: E* = 0.125 exactly, enstrophy* = 0.375 up to the central
    difference factor (sin(k)/k)² ≈ 0.977 at k = 2π/24."""
    import thelma_py as tp

    n, u0 = 24, 0.05
    init = tp.plugin("init", "taylor-green", u0=u0, size=(n, n, n))
    coords = tp.geometry.periodic_box((n, n, n)).coordinates()
    _, u = init.fields(coords, (n, n, n))
    d = tgv3d_diagnostics(u, u0, time_step=0)
    k = 2 * math.pi / n
    assert d["t"] == 0.0
    assert d["E_k"] == pytest.approx(0.125, rel=1e-12)
    assert d["enstrophy"] == pytest.approx(0.375 * (math.sin(k) / k) ** 2, rel=1e-10)
    rates = validation.dissipation_rate([0.0, 1.0, 2.0], [0.125, 0.12, 0.11])
    np.testing.assert_allclose(rates, [0.005, 0.0075, 0.01])


def test_dissipation_comparison_with_the_reference_is_zero_for_the_reference_itself():
    ref = load_tgv_reference()
    assert ref["E_k"][0] == 0.125 and len(ref["t"]) > 1000
    same = validation.compare_dissipation(ref["t"][::50], ref["minus_dEk_dt"][::50])
    assert same["max_deviation_of_peak"] < 1e-12
    assert 8.0 < same["reference_peak_time"] < 10.0

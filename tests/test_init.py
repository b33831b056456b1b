"""Init plug-ins: constants, functions of coordinates, arrays, sub-boxes, errors.

Values are compared to 1e-15: the fields are copied or evaluated once; through a solver the
density and velocity go through the equilibrium and back (a few ulps).
"""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.geometry import periodic_box
from thelma_py.modules.init.fields import Equilibrium, TaylorGreen

SHAPE = (6, 4)          # (nx, ny)
ARRAY = (4, 6)          # (ny, nx)


def coords(geo_shape=SHAPE, lower=None, shape=None):
    return periodic_box(geo_shape).coordinates(lower, shape)


def test_constants():
    rho, u = Equilibrium(rho=1.2, u=(0.01, -0.02)).fields(coords(), ARRAY)
    assert rho.shape == ARRAY and u.shape == (2, *ARRAY)
    assert (rho == 1.2).all() and (u[0] == 0.01).all() and (u[1] == -0.02).all()
    # the default 3-component zero velocity fits 2D
    rho, u = Equilibrium().fields(coords(), ARRAY)
    assert (rho == 1.0).all() and (u == 0).all() and u.shape == (2, *ARRAY)
    # results are writeable arrays, not broadcast views
    assert rho.flags.writeable and u.flags.writeable


def test_functions_of_coordinates():
    init = Equilibrium(rho=lambda x, y: 1.0 + 0.01 * x, u=lambda x, y: (0.001 * y, -0.002 * x))
    rho, u = init.fields(coords(), ARRAY)
    x, y = np.meshgrid(np.arange(6.0), np.arange(4.0))  # (ny, nx), x fastest
    np.testing.assert_array_equal(rho, 1.0 + 0.01 * x)
    np.testing.assert_array_equal(u[0], 0.001 * y)
    np.testing.assert_array_equal(u[1], -0.002 * x)
    # a function may return a constant component
    rho, u = Equilibrium(u=lambda x, y: (0.01, 0.0)).fields(coords(), ARRAY)
    assert (u[0] == 0.01).all() and (u[1] == 0).all()


def test_functions_of_coordinates_3d():
    init = Equilibrium(u=lambda x, y, z: (0 * x, 0 * y, 0.001 * z))
    rho, u = init.fields(coords((3, 4, 5)), (5, 4, 3))
    assert u.shape == (3, 5, 4, 3)
    np.testing.assert_array_equal(u[2][:, 0, 0], 0.001 * np.arange(5))


def test_arrays_and_sub_box_windows():
    rng = np.random.default_rng(0)
    rho_all = 1.0 + 0.1 * rng.random(ARRAY)
    u_all = 0.01 * rng.standard_normal((2, *ARRAY))
    init = Equilibrium(rho=rho_all, u=u_all)
    rho, u = init.fields(coords(), ARRAY)
    np.testing.assert_array_equal(rho, rho_all)
    np.testing.assert_array_equal(u, u_all)
    # a sub-box slices the global arrays with its window
    window = (slice(1, 3), slice(2, 5))
    rho, u = init.fields(coords(lower=(2, 1), shape=(3, 2)), (2, 3), window=window)
    np.testing.assert_array_equal(rho, rho_all[window])
    np.testing.assert_array_equal(u, u_all[(slice(None), *window)])


def test_shape_errors():
    with pytest.raises(ValueError, match=r"rho: an array of shape \(6, 4\) does not fit"):
        Equilibrium(rho=np.ones((6, 4))).fields(coords(), ARRAY)
    with pytest.raises(ValueError, match="does not fit the node array shape"):
        Equilibrium(u=np.zeros((2, 3, 3))).fields(coords(), ARRAY)
    with pytest.raises(ValueError, match="u needs 2 components"):
        Equilibrium(u=(0.1,)).fields(coords(), ARRAY)
    with pytest.raises(ValueError, match="u needs 2 components"):
        Equilibrium(u=(0.1, 0.0, 0.2)).fields(coords(), ARRAY)   # a z component in 2D
    with pytest.raises(ValueError, match="returned 3 components for 2D"):
        Equilibrium(u=lambda x, y: (x, y, x)).fields(coords(), ARRAY)


def test_value_errors():
    with pytest.raises(ValueError, match="positive"):
        Equilibrium(rho=lambda x, y: 1.0 - x).fields(coords(), ARRAY)
    with pytest.raises(ValueError, match="NaN"):
        Equilibrium(u=(np.nan, 0.0)).fields(coords(), ARRAY)


def test_equilibrium_through_a_solver():
    """The solver sets f = f_eq(ρ, u), so reading ρ and u back gives the initial fields."""
    x, y = np.meshgrid(np.arange(6.0), np.arange(4.0))
    init = tp.plugin("init", "equilibrium", rho=lambda x, y: 1.0 + 0.01 * y,
                     u=lambda x, y: (0.01 * np.sin(x), 0.02 * np.cos(y)))
    solver = tp.compose("D2Q9", periodic_box(SHAPE), tp.plugin("compute", "lbm", nu=0.1),
                        init=init, device="cpu")
    np.testing.assert_allclose(solver.density(), 1.0 + 0.01 * y, rtol=1e-15)
    np.testing.assert_allclose(solver.velocity()[0], 0.01 * np.sin(x), atol=1e-16)
    np.testing.assert_allclose(solver.velocity()[1], 0.02 * np.cos(y), atol=1e-16)


def test_taylor_green_fields():
    n, u0 = 16, 0.04
    rho, u = TaylorGreen(u0=u0, size=(n, n)).fields(coords((n, n)), (n, n))
    x, y = np.meshgrid(2 * np.pi * np.arange(n) / n, 2 * np.pi * np.arange(n) / n)
    np.testing.assert_allclose(u[0], u0 * np.sin(x) * np.cos(y), atol=1e-16)
    np.testing.assert_allclose(u[1], -u0 * np.cos(x) * np.sin(y), atol=1e-16)
    # zero-mean velocity
    assert abs(u.mean()) < 1e-16


def test_taylor_green_pressure_balances_the_advection():
    """The vortex is a steady solution of Euler's equations: (u·∇)u = −∇p/ρ0 with
    p = c_s² (ρ − ρ0). Central differences on 64² leave O(h²) ≈ 2e-3 of the term; the wrong
    sign of p leaves 200 %."""
    n, u0 = 64, 0.04
    rho, u = TaylorGreen(u0=u0, size=(n, n)).fields(coords((n, n)), (n, n))
    h = 2 * np.pi / n  # the fields in units of the wavelength / 2π

    def d(f, axis):  # central difference along x (axis -1) or y (axis -2), periodic
        return (np.roll(f, -1, axis) - np.roll(f, 1, axis)) / (2 * h)

    p = (rho - 1.0) / 3.0
    for a, axis in ((0, -1), (1, -2)):
        advection = u[0] * d(u[a], -1) + u[1] * d(u[a], -2)
        np.testing.assert_allclose(advection, -d(p, axis), rtol=0,
                                   atol=5e-3 * np.abs(advection).max())


def test_taylor_green_3d_fields():
    n = 8
    rho, u = TaylorGreen(u0=0.05, size=(n, n, n)).fields(coords((n, n, n)), (n, n, n))
    assert u.shape == (3, n, n, n) and (u[2] == 0).all()
    z = y = x = 2 * np.pi * np.arange(n) / n
    k, j, i = 1, 2, 3
    assert u[0][k, j, i] == pytest.approx(0.05 * np.sin(x[i]) * np.cos(y[j]) * np.cos(z[k]),
                                          abs=1e-16)
    p = 0.05**2 / 16 * (np.cos(2 * x[i]) + np.cos(2 * y[j])) * (np.cos(2 * z[k]) + 2)
    assert rho[k, j, i] == pytest.approx(1.0 + 3 * p, rel=1e-15)
    assert rho.mean() == pytest.approx(1.0, rel=1e-15)  # cos 2x averages to 0 over a period


def test_init_plugins_are_registered():
    assert {"equilibrium", "taylor-green"} <= set(tp.available("init"))
    with pytest.raises(TypeError, match="valid parameters"):
        tp.plugin("init", "equilibrium", density=1.0)

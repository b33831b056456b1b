"""Lattice descriptors: the velocity order (an ABI), weights and their moments, MRT bases, and
the collision operators that reduce to BGK.

Tolerances: the weight moments are sums of at most 27 products of exact small integers and
doubles of order 1, so they hold to 1e-15 (a few ulps). Collision comparisons hold to 1e-14:
MRT goes through M⁻¹ S M, a different sequence of roundings from ω (f − f_eq) on populations of
order 0.1, so results agree to a few ulps, not bit for bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.lbm_setups import CONFIGS
from thelma_py.codegen.expr import identity_let
from thelma_py.lattice import CS2, D2Q9, D3Q19, D3Q27, LATTICES, lattice_by_name
from thelma_py.modules.compute.lbm.collision import Relaxation, collide, trt_omega_minus
from thelma_py.modules.compute.lbm.collisions import Mrt

LATTICE_LIST = [D2Q9, D3Q19, D3Q27]
ids = [lat.name for lat in LATTICE_LIST]

# Literal tables, written out by hand: stored populations, node-tag link bits and generated
# kernels all index by this order, so changing it breaks checkpoints and saved geometries.
D2Q9_C = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1)]
D3Q19_C = [
    (0, 0, 0),
    (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1),
    (1, 1, 0), (-1, -1, 0), (1, -1, 0), (-1, 1, 0),
    (1, 0, 1), (-1, 0, -1), (1, 0, -1), (-1, 0, 1),
    (0, 1, 1), (0, -1, -1), (0, 1, -1), (0, -1, 1),
]
D3Q27_C = D3Q19_C + [
    (1, 1, 1), (-1, -1, -1), (1, 1, -1), (-1, -1, 1),
    (1, -1, 1), (-1, 1, -1), (1, -1, -1), (-1, 1, 1),
]
TABLES = {"D2Q9": (D2Q9_C, {0: 4 / 9, 1: 1 / 9, 2: 1 / 36}),
          "D3Q19": (D3Q19_C, {0: 1 / 3, 1: 1 / 18, 2: 1 / 36}),
          "D3Q27": (D3Q27_C, {0: 8 / 27, 1: 2 / 27, 2: 1 / 54, 3: 1 / 216})}


@pytest.mark.parametrize("lat", LATTICE_LIST, ids=ids)
def test_velocity_order_is_pinned(lat):
    table, weights = TABLES[lat.name]
    assert lat.q == len(table) and lat.d == len(table[0])
    assert [tuple(int(v) for v in c) for c in lat.c] == table
    expected_w = [weights[sum(v * v for v in c)] for c in table]
    np.testing.assert_array_equal(lat.w, expected_w)


@pytest.mark.parametrize("lat", LATTICE_LIST, ids=ids)
def test_opposites(lat):
    opp = lat.opposite
    # pairs are adjacent: (1, 2), (3, 4), ...
    assert opp[0] == 0
    assert opp.tolist()[1:] == [i + 1 if i % 2 else i - 1 for i in range(1, lat.q)]
    np.testing.assert_array_equal(lat.c[opp], -lat.c)
    np.testing.assert_array_equal(opp[opp], np.arange(lat.q))


def test_lattice_lookup():
    assert lattice_by_name("d3q19") is D3Q19
    assert set(LATTICES) == {"D2Q9", "D3Q19", "D3Q27"}
    with pytest.raises(ValueError, match="D2Q9"):
        lattice_by_name("D2Q5")


@pytest.mark.parametrize("lat", LATTICE_LIST, ids=ids)
def test_weight_moments_up_to_fourth_order(lat):
    """Σw = 1, Σw c = 0, Σw cc = cs² δ, Σw ccc = 0, Σw cccc = cs⁴ (δδ + δδ + δδ)."""
    w, c, d = lat.w, lat.c.astype(float), lat.d
    delta = np.eye(d)
    assert abs(w.sum() - 1.0) < 1e-15
    np.testing.assert_allclose(np.einsum("q,qa->a", w, c), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.einsum("q,qa,qb->ab", w, c, c), CS2 * delta, atol=1e-15)
    np.testing.assert_allclose(np.einsum("q,qa,qb,qc->abc", w, c, c, c), 0.0, atol=1e-15)
    fourth = np.einsum("q,qa,qb,qc,qd->abcd", w, c, c, c, c)
    iso = CS2**2 * (np.einsum("ab,cd->abcd", delta, delta) + np.einsum("ac,bd->abcd", delta, delta)
                    + np.einsum("ad,bc->abcd", delta, delta))
    np.testing.assert_allclose(fourth, iso, atol=1e-15)
    # and the fifth odd moment vanishes too (symmetric velocity set)
    fifth = np.einsum("q,qa,qb,qc,qd,qe->abcde", w, c, c, c, c, c)
    np.testing.assert_allclose(fifth, 0.0, atol=1e-15)


@pytest.mark.parametrize("lat", LATTICE_LIST, ids=ids)
def test_equilibrium_moments(lat):
    """f_eq reproduces ρ, ρu and ρ(cs² δ + uu) exactly (second-order equilibrium)."""
    rho, u = 1.1, np.array([0.03, -0.02, 0.01][: lat.d])
    feq = np.array(lat.equilibrium(rho, list(u)))
    c = lat.c.astype(float)
    np.testing.assert_allclose(feq.sum(), rho, rtol=1e-15)
    np.testing.assert_allclose(c.T @ feq, rho * u, atol=1e-16)
    pi = np.einsum("q,qa,qb->ab", feq, c, c)
    np.testing.assert_allclose(pi, rho * (CS2 * np.eye(lat.d) + np.outer(u, u)), atol=1e-15)


@pytest.mark.parametrize("lat", LATTICE_LIST, ids=ids)
def test_equilibrium_of_one_direction_is_the_second_order_polynomial(lat):
    """f_eq_i = w_i ρ (1 + 3 c·u + 9/2 (c·u)² − 3/2 |u|²), written out here; equilibrium_i
    computes |u|² itself when it is not given (every caller in the package gives it). 1e-14:
    the same few O(1) terms summed in another order."""
    rho, u = 1.1, [0.03, -0.02, 0.01][: lat.d]
    for i in range(lat.q):
        cu = float(np.dot(lat.c[i], u))
        expected = lat.w[i] * rho * (1 + 3 * cu + 4.5 * cu**2 - 1.5 * float(np.dot(u, u)))
        assert lat.equilibrium_i(i, rho, u) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("lat", [D2Q9, D3Q19], ids=["D2Q9", "D3Q19"])
def test_mrt_basis_is_orthogonal_and_invertible(lat):
    m = lat.mrt.matrix
    assert m.shape == (lat.q, lat.q)
    gram = m @ m.T
    np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0.0, atol=1e-12)
    assert (np.diag(gram) > 0).all()
    # conserved rows are density and momentum
    names = lat.mrt.names
    np.testing.assert_array_equal(m[names.index("rho")], 1.0)
    for a, axis in enumerate("xyz"[: lat.d]):
        np.testing.assert_array_equal(m[names.index(f"j{axis}")], lat.c[:, a])
    s = lat.mrt.rates(1.7)
    assert [s[k] for k in lat.mrt.conserved] == [0.0] * (lat.d + 1)
    assert all(s[k] == 1.7 for k in lat.mrt.shear)
    with pytest.raises(ValueError, match="valid names"):
        lat.mrt.rates(1.0, nonsense=1.0)


def test_d3q27_has_no_mrt_basis():
    assert D3Q27.mrt is None


def _random_populations(lat, rng, shape=(5, 7)):
    """Equilibrium at random ρ, u plus a random non-equilibrium part with zero mass and
    momentum (so that relaxing the conserved moments or not makes no difference)."""
    rho = 1.0 + 0.1 * rng.standard_normal(shape)
    u = [0.05 * rng.standard_normal(shape) for _ in range(lat.d)]
    feq = np.array(lat.equilibrium(rho, u))
    noise = 0.01 * rng.standard_normal((lat.q, *shape))
    # project out mass and momentum from the noise
    basis = np.vstack([np.ones(lat.q), lat.c.T.astype(float)])  # (d+1, q)
    moments = np.tensordot(basis, noise, axes=1).reshape(lat.d + 1, -1)
    coef = np.linalg.solve(basis @ basis.T, moments)
    noise -= (basis.T @ coef).reshape(noise.shape)
    return feq + noise


def _collide(relax, f, omega, omega_minus=None, force=None):
    post, _, _ = collide(relax, list(f), identity_let, omega, omega_minus, force)
    return np.array(post)


@pytest.mark.parametrize("lat", [D2Q9, D3Q19], ids=["D2Q9", "D3Q19"])
@pytest.mark.parametrize("force", [None, "g"])
def test_mrt_with_equal_rates_is_bgk(lat, force):
    rng = np.random.default_rng(1)
    f = _random_populations(lat, rng)
    g = None if force is None else tuple([1e-4, -2e-4, 3e-4][: lat.d])
    omega = 1.3
    bgk = _collide(Relaxation(lat, "bgk"), f, omega, force=g)
    # every rate ω, conserved moments included
    every = Mrt(rates=dict.fromkeys(lat.mrt.names, omega))
    np.testing.assert_allclose(_collide(Relaxation(lat, every), f, omega, force=g), bgk,
                               rtol=0, atol=1e-14)
    # every non-conserved rate ω, conserved moments 0 (what the MRT plug-in builds)
    shear_rate = Mrt(rates={name: omega for k, name in enumerate(lat.mrt.names)
                            if k not in lat.mrt.conserved})
    np.testing.assert_allclose(_collide(Relaxation(lat, shear_rate), f, omega, force=g), bgk,
                               rtol=0, atol=1e-14)
    # and the default rates differ from BGK: the check can fail
    assert np.abs(_collide(Relaxation(lat, "mrt"), f, omega, force=g) - bgk).max() > 1e-5


@pytest.mark.parametrize("lat", LATTICE_LIST, ids=ids)
def test_trt_with_equal_rates_is_bgk(lat):
    rng = np.random.default_rng(2)
    f = _random_populations(lat, rng)
    omega = 0.9
    bgk = _collide(Relaxation(lat, "bgk"), f, omega)
    trt = _collide(Relaxation(lat, "trt"), f, omega, omega_minus=omega)
    np.testing.assert_allclose(trt, bgk, rtol=0, atol=1e-15)
    trt_other = _collide(Relaxation(lat, "trt"), f, omega, omega_minus=1.5)
    assert np.abs(trt_other - bgk).max() > 1e-5


def test_trt_magic_parameter():
    """Λ = (1/ω⁺ − ½)(1/ω⁻ − ½)."""
    for omega, magic in itertools.product((0.6, 1.0, 1.8), (1 / 4, 3 / 16, 1 / 12)):
        om = trt_omega_minus(omega, magic)
        assert abs((1 / omega - 0.5) * (1 / om - 0.5) - magic) < 1e-14
    # Λ = 1/4 and ω = 1 gives ω⁻ = 1
    assert trt_omega_minus(1.0, 0.25) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize(("lat", "kind"), CONFIGS)
def test_collision_conserves_mass_and_momentum(lat, kind):
    lat = lattice_by_name(lat)
    rng = np.random.default_rng(3)
    f = np.array(lat.equilibrium(np.ones((4, 4)), [np.zeros((4, 4))] * lat.d))
    f = f * (1 + 0.05 * rng.standard_normal(f.shape))
    post = _collide(Relaxation(lat, kind), f, 1.2, omega_minus=0.7)
    np.testing.assert_allclose(post.sum(axis=0), f.sum(axis=0), rtol=1e-15)
    c = lat.c.T.astype(float)
    np.testing.assert_allclose(np.tensordot(c, post, axes=1), np.tensordot(c, f, axes=1),
                               atol=1e-15)

"""Collisions in shifted populations g_i = f_i − w_i (issue #19: fp16s storage holds g, so the
kernels skip the + w_i at each read and the − w_i at each write; NOTES run 50).

The answer comes from the collision in whole populations, which the physics tests validate:
in fp64 the shifted one gives the same post-collision f − w, ρ and u to rounding, for every
model that relaxes f − f_eq, with a force and with LES. Planted and seen failing: the shifted
equilibrium without its w_i δρ term; ρ = Σ g (without the 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES
from thelma_py.backend import select_backend
from thelma_py.codegen.expr import identity_let
from thelma_py.geometry import Geometry
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.collision import Relaxation, collide

MODELS = ["bgk", "trt", "mrt", "regularized", "recursive"]


def random_populations(lattice, n: int = 200, seed: int = 4) -> np.ndarray:
    """f near equilibrium at ρ ≈ 1 ± 0.03, |u| ≈ 0.05, with a non-equilibrium part (fp64)."""
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.03 * rng.standard_normal(n)
    u = 0.05 * rng.standard_normal((lattice.d, n))
    feq = np.array(lattice.equilibrium(rho, list(u)))
    return feq * (1.0 + 0.05 * rng.standard_normal(feq.shape))


@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19", "D3Q27"])
def test_shifted_equilibrium_is_the_equilibrium_less_w(lattice_name):
    lattice = LATTICES[lattice_name]
    rng = np.random.default_rng(2)
    rho = 1.0 + 0.05 * rng.standard_normal(50)
    u = list(0.1 * rng.standard_normal((lattice.d, 50)))
    whole = np.array(lattice.equilibrium(rho, u))
    shifted = np.array(lattice.equilibrium_shifted(rho - 1.0, rho, u))
    np.testing.assert_allclose(shifted, whole - lattice.w[:, None], rtol=0, atol=1e-15)


@pytest.mark.parametrize(("les", "force"), [(None, None), ("smagorinsky", (2e-4, -1e-4, 3e-4))])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19"])
def test_shifted_collision_equals_the_whole_one(lattice_name, model, les, force):
    lattice = LATTICES[lattice_name]
    relax = Relaxation(lattice, model, les)
    f = random_populations(lattice)
    force = None if force is None else force[: lattice.d]
    w = lattice.w[:, None]
    post, rho, u = collide(relax, list(f), identity_let, 1.7, 1.2, force)
    post_g, rho_g, u_g = collide(relax, list(f - w), identity_let, 1.7, 1.2, force, shifted=True)
    np.testing.assert_allclose(np.array(post_g), np.array(post) - w, rtol=0, atol=1e-14)
    np.testing.assert_allclose(rho_g, rho, rtol=1e-14)
    np.testing.assert_allclose(np.array(u_g), np.array(u), rtol=0, atol=1e-15)


def test_cumulant_takes_no_shifted_populations():
    lattice = LATTICES["D3Q27"]
    relax = Relaxation(lattice, "cumulant")
    assert not relax.shifts and Relaxation(lattice, "bgk").shifts
    f = random_populations(lattice)
    with pytest.raises(ValueError, match="collides whole populations; it takes no shifted"):
        collide(relax, list(f), identity_let, 1.7, 1.7, shifted=True)


def test_shifts_where_fp16s_dense_storage_meets_no_open_or_interpolated_rule():
    d3q19, d3q27 = LATTICES["D3Q19"], LATTICES["D3Q27"]
    fp16s = Lbm(nu=0.02, store="fp16s")
    assert fp16s.shifts(d3q19, open_faces=False, interpolated=False)
    assert not fp16s.shifts(d3q19, open_faces=True, interpolated=False)
    assert not fp16s.shifts(d3q19, open_faces=False, interpolated=True)
    assert not Lbm(nu=0.02).shifts(d3q19, False, False)
    assert not Lbm(nu=0.02, store="fp16c").shifts(d3q19, False, False)
    assert not Lbm(nu=0.02, store="fp16s", storage="sparse").shifts(d3q19, False, False)
    assert not Lbm(nu=0.02, store="fp16s", collision="cumulant").shifts(d3q27, False, False)


@pytest.mark.parametrize("scheme", ["pull", "aa"])
def test_shifted_kernels_decode_and_encode_without_w(scheme):
    lattice = LATTICES["D3Q19"]
    params = Lbm(nu=0.02, store="fp16s", streaming=scheme)
    text = params.kernel_source(lattice, np.float32, moving_walls=True)
    assert "pop_decode(" in text
    assert ") + (real_t)0.05555555555555555)" not in text  # no + w at a read
    assert "pop_encode(p1)" in text and "drho" in text
    whole = params.kernel_source(lattice, np.float32, moving_walls=True, shifted=False)
    assert ") + (real_t)0.05555555555555555)" in whole and "drho" not in whole
    with pytest.raises(ValueError, match="shifted populations need 16-bit storage"):
        Lbm(nu=0.02).kernel_source(lattice, np.float32, shifted=True)


def test_numpy_reference_state_stays_whole_populations():
    """The NumPy reference collides shifted values but keeps f (decode + w) as its state: a
    uniform flow at rest stays exactly at its stored equilibrium."""
    lattice = LATTICES["D2Q9"]
    geo = Geometry((12, 10), periodic=(True, True))
    params = Lbm(nu=0.05, store="fp16s")
    engine = params.create(lattice, geo.evaluate(lattice), select_backend("cpu"),
                           np.dtype(np.float32))
    assert engine.shifted
    engine.initialize(np.ones((10, 12)), [np.zeros((10, 12))] * 2)
    before = engine.f.copy()
    np.testing.assert_allclose(before.sum(axis=0), 1.0, rtol=0, atol=1e-6)
    engine.step(5)
    np.testing.assert_array_equal(engine.f, before)

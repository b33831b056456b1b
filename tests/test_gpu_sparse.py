"""Sparse-storage CUDA LBM against the sparse NumPy engine (skipped without a GPU).

Same tolerances as tests/test_gpu_lbm.py: both sides evaluate the same traced expressions, so
they differ by fused multiply-adds only (~1e-7 relative in fp32, ~1e-15 in fp64 after 120 steps);
a wrong neighbour entry or bounce-back row shows as O(1e-2) or NaN. The sparse NumPy engine is
itself held equal to the dense one bit for bit (tests/test_sparse.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import (
    CONFIGS,
    LATTICES,
    OPEN_SETUPS,
    STEPS,
    TOLERANCE,
    assert_velocity_close,
    duct_collision,
    open_geometry,
    random_state,
    relative_l2,
    walled_geometry,
)
from tests.test_sparse import curved_geometry
from thelma_py.backend import select_backend
from thelma_py.geometry.porous import random_spheres
from thelma_py.modules.compute.lbm import Lbm

pytestmark = pytest.mark.gpu


def porous(lattice):
    shape = (45, 30) if lattice.d == 2 else (37, 14, 12)
    return random_spheres(shape, 0.4, radius=2.5, seed=4)


GEOMETRIES = {"walled": walled_geometry, "porous": porous, "curved": curved_geometry,
              **{s: (lambda lat, s=s: open_geometry(lat, s)) for s in OPEN_SETUPS}}


def engines(lattice_name, collision, dtype, geometry="walled", force=None, scheme="pull"):
    lattice = LATTICES[lattice_name]
    tags = GEOMETRIES[geometry](lattice).evaluate(lattice)
    params = Lbm(nu=0.04, collision=duct_collision(collision), force=force, storage="sparse",
                 streaming=scheme)
    f = random_state(lattice, tags.tags.shape, dtype)  # dense: load_state gathers it
    pair = [params.create(lattice, tags, select_backend(device), np.dtype(dtype))
            for device in ("cpu", "cuda")]
    for engine in pair:
        engine.load_state({"f": f})
    return (*pair, tags)


def assert_matches(cpu, gpu, dtype, steps: int = STEPS) -> None:
    """Poison the GPU outputs, run both, compare f (stored nodes) and the dense ρ, u."""
    gpu.poison()
    cpu.step(steps)
    gpu.step(steps)
    f_gpu = gpu.state()["f"]
    assert np.isfinite(f_gpu).all(), "unwritten populations (NaN poison)"
    assert relative_l2(f_gpu, cpu.f) < TOLERANCE[dtype]
    (rho_c, u_c), (rho_g, u_g) = cpu.macroscopic(), [a.get() for a in gpu.macroscopic()]
    assert rho_g.shape == rho_c.shape and u_g.shape == u_c.shape
    assert np.isfinite(rho_g).all() and np.isfinite(u_g).all()
    assert relative_l2(rho_g, rho_c) < TOLERANCE[dtype]
    assert_velocity_close(u_g, u_c, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize(("geometry", "scheme"), [
    ("walled", "pull"), ("porous", "pull"), ("curved", "pull"), ("walled", "aa"),
    ("porous", "aa")])
@pytest.mark.parametrize(("lattice_name", "collision"), CONFIGS)
def test_cuda_sparse_matches_numpy(lattice_name, collision, geometry, scheme, dtype):
    force = (2e-5, -1e-5, 1e-5)[: LATTICES[lattice_name].d] if collision == "trt" else None
    cpu, gpu, _ = engines(lattice_name, collision, dtype, geometry, force, scheme)
    assert_matches(cpu, gpu, dtype)


@pytest.mark.parametrize("steps", [STEPS, STEPS + 1])
def test_cuda_sparse_aa_matches_numpy_after_either_parity(steps):
    cpu, gpu, _ = engines("D3Q19", "mrt", np.float64, "walled", scheme="aa")
    assert_matches(cpu, gpu, np.float64, steps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("setup", OPEN_SETUPS)
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19", "D3Q27"])
def test_cuda_sparse_open_boundaries_match_numpy(lattice_name, setup, dtype):
    collision = "trt" if lattice_name == "D3Q27" else "mrt"
    cpu, gpu, _ = engines(lattice_name, collision, dtype, setup)
    assert_matches(cpu, gpu, dtype)


@pytest.mark.parametrize(("geometry", "scheme"), [("zou-he", "pull"), ("walled", "aa")])
def test_cuda_sparse_steps_in_any_chunking_agree(geometry, scheme):
    """One call of 70 steps equals 70 calls of one step (graphs vs single launches)."""
    _, a, _ = engines("D3Q19", "mrt", np.float64, geometry, scheme=scheme)
    _, b, _ = engines("D3Q19", "mrt", np.float64, geometry, scheme=scheme)
    a.step(70)
    for _ in range(70):
        b.step(1)
    np.testing.assert_array_equal(a.state()["f"], b.state()["f"])


@pytest.mark.parametrize("scheme", ["pull", "aa"])
def test_cuda_sparse_restart_is_bit_identical(scheme):
    _, a, _ = engines("D3Q19", "bgk", np.float32, "porous", scheme=scheme)
    a.step(33)
    saved = a.state()
    a.step(40)
    _, b, _ = engines("D3Q19", "bgk", np.float32, "porous", scheme=scheme)
    b.load_state(saved)
    b.step(40)
    np.testing.assert_array_equal(a.state()["f"], b.state()["f"])
    np.testing.assert_array_equal(a.macroscopic()[1].get(), b.macroscopic()[1].get())


def test_cuda_sparse_forces_match_numpy():
    from thelma_py.modules.compute.lbm.forces import forces

    cpu, gpu, _ = engines("D3Q19", "trt", np.float64, "walled")
    cpu.step(50)
    gpu.step(50)
    for body, value in forces(cpu).items():
        np.testing.assert_allclose(forces(gpu)[body], value, rtol=1e-10, atol=1e-14)

"""The sparse CUDA engines without a GPU: the generated kernels compiled for the host and run
thread by thread (tests/host_cupy.py), so the kernels' arithmetic and indexing and the engines'
Python side (state layouts, launches, conversions to dense fields) are checked against the
sparse NumPy engine on every CPU run. Both evaluate the same traced expressions in the same
order (no fused multiply-adds on the host), hence 1e-14."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import COLLISIONS, LATTICES, config, random_state, relative_l2, supported
from tests.test_sparse import GEOMETRIES
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm

pytestmark = [pytest.mark.slow,  # compiles the kernels with g++
              pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")]


def pair(backend, lattice_name, collision, geometry, scheme, force=None, storage="sparse",
         cuda_options=None):
    """The NumPy and the host CUDA engine of ``storage`` on one geometry, holding the same
    random state (the ``host_gpu`` fixture of tests/conftest.py gives ``backend``)."""
    lattice = LATTICES[lattice_name]
    tags = GEOMETRIES[geometry](lattice).evaluate(lattice)
    params = Lbm(nu=0.04, collision=collision, storage=storage, streaming=scheme, force=force,
                 cuda_options=cuda_options or {})
    f = random_state(lattice, tags.tags.shape, np.float64)
    engines = [params.create(lattice, tags, b, np.dtype(np.float64))
               for b in (select_backend("cpu"), backend)]
    for engine in engines:
        engine.load_state({"f": f})
    return (*engines, tags)


@pytest.mark.parametrize(("lattice_name", "collision", "geometry", "scheme"), [
    ("D2Q9", "mrt", "walled", "pull"), ("D2Q9", "trt", "neighbour", "pull"),
    ("D2Q9", "bgk", "zou-he", "pull"), ("D2Q9", "trt", "curved", "pull"),
    ("D3Q19", "trt", "porous", "pull"), ("D3Q19", "mrt", "equilibrium", "pull"),
    ("D3Q19", "bgk", "walled", "pull"), ("D3Q19", "mrt", "curved", "pull"),
    ("D3Q27", "bgk", "neighbour", "pull"),
    ("D2Q9", "mrt", "walled", "aa"), ("D3Q19", "trt", "porous", "aa"),
    ("D3Q27", "bgk", "walled", "aa")])
def test_host_cuda_engine_equals_numpy(host_gpu, lattice_name, collision, geometry, scheme):
    force = (2e-5, -1e-5, 1e-5)[: LATTICES[lattice_name].d] if collision == "trt" else None
    cpu, gpu, tags = pair(host_gpu, lattice_name, collision, geometry, scheme, force)
    assert type(gpu).__name__ == ("CudaSparseAaLbm" if scheme == "aa" else "CudaSparseLbm")
    assert_host_equals_numpy(cpu, gpu, tags)


@pytest.mark.parametrize(("lattice_name", "collision"),
                         [config(next(lat for lat in LATTICES if supported(lat, c)), c)
                          for c in COLLISIONS])
def test_host_cuda_engine_equals_numpy_for_every_collision_model(host_gpu, lattice_name,
                                                                 collision):
    """Each registered model's traced CUDA collision, with Zou-He faces and a body force (on
    D2Q9, or the first lattice the model runs on)."""
    cpu, gpu, tags = pair(host_gpu, lattice_name, collision, "zou-he", "pull",
                          force=(2e-5, -1e-5, 1e-5)[: LATTICES[lattice_name].d])
    assert_host_equals_numpy(cpu, gpu, tags)


def assert_host_equals_numpy(cpu, gpu, tags) -> None:
    gpu.poison()
    for steps in (7, 6):  # ends after an odd, then an even number of steps
        cpu.step(steps)
        gpu.step(steps)
        assert relative_l2(gpu.state()["f"], cpu.f) < 1e-14
    for c, g in zip(cpu.macroscopic(), gpu.macroscopic(), strict=True):
        assert g.shape == c.shape and relative_l2(g, c) < 1e-13
    np.testing.assert_array_equal(gpu.canonical().get()[:, tags.fluid], gpu.state()["f"])


@pytest.mark.parametrize("scheme", ["pull", "aa"])
def test_host_cuda_restart_is_bit_identical(host_gpu, scheme):
    _, a, tags = pair(host_gpu, "D2Q9", "bgk", "walled", scheme)
    a.step(5)
    saved = a.state()
    a.step(4)
    _, b, _ = pair(host_gpu, "D2Q9", "bgk", "walled", scheme)
    b.load_state(saved)
    b.step(4)
    np.testing.assert_array_equal(a.state()["f"], b.state()["f"])
    np.testing.assert_array_equal(a.macroscopic()[1], b.macroscopic()[1])


def test_host_cuda_initialize_equals_numpy(host_gpu):
    cpu, gpu, tags = pair(host_gpu, "D2Q9", "trt", "walled", "aa", force=(1e-5, 0.0))
    rng = np.random.default_rng(2)
    rho = 1 + 0.01 * rng.standard_normal(tags.tags.shape)
    u = 0.02 * rng.standard_normal((2, *tags.tags.shape))
    cpu.initialize(rho, u)
    gpu.initialize(host_gpu.to_device(rho), host_gpu.to_device(u))
    np.testing.assert_array_equal(gpu.state()["f"], cpu.f)
    np.testing.assert_array_equal(gpu.macroscopic()[0], rho)

"""Smagorinsky LES and the recursive model in the generated CUDA: on a GPU every collision model
of the table on every lattice it runs on, pull/push/AA, fp32 and fp64, against the NumPy
reference (same tolerances as tests/test_gpu_lbm.py: the two sides trace the same
collision.py); without one, the host stand-in (tests/host_cupy.py) runs the dense, sparse,
open-boundary and interpolated kernels with LES against NumPy at rounding (no fused
multiply-adds on the host: 1e-13 relative in fp64), and nvcc compiles LES kernels of three
models (one per lattice).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import (
    CONFIGS,
    LATTICES,
    assert_gpu_matches_numpy,
    random_state,
    relative_l2,
    walled_geometry,
)
from tests.nvcc import compile_cubin
from tests.test_gpu_sparse import GEOMETRIES
from tests.test_sparse_host_engine import assert_host_equals_numpy
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm

LES = {"name": "smagorinsky", "c_s": 0.3}
"""A large constant, so that the eddy viscosity changes τ by O(1) on the random states."""


def les_pair(backend, lattice_name, collision, geometry, scheme, dtype, storage="dense",
             force=None):
    lattice = LATTICES[lattice_name]
    tags = (walled_geometry(lattice) if geometry == "walled"
            else GEOMETRIES[geometry](lattice)).evaluate(lattice)
    params = Lbm(nu=0.01, collision=collision, streaming=scheme, storage=storage, force=force,
                 les=LES)
    f = random_state(lattice, tags.tags.shape, dtype)
    engines = [params.create(lattice, tags, b, np.dtype(dtype))
               for b in (select_backend("cpu"), backend)]
    for engine in engines:
        engine.load_state({"f": f})
    return (*engines, tags)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("scheme", ["pull", "push", "aa"])
@pytest.mark.parametrize(("lattice_name", "collision"), CONFIGS)
def test_cuda_les_matches_numpy(lattice_name, collision, scheme, dtype):
    force = (2e-5, -1e-5, 0.0)[: LATTICES[lattice_name].d] if collision == "trt" else None
    cpu, gpu, tags = les_pair(select_backend("cuda"), lattice_name, collision, "walled", scheme,
                              dtype, force=force)
    assert_gpu_matches_numpy(cpu, gpu, tags, dtype)


HOST = [("D2Q9", "bgk", "walled", "pull", "dense"), ("D2Q9", "trt", "zou-he", "aa", "dense"),
        ("D2Q9", "mrt", "curved", "pull", "dense"), ("D2Q9", "recursive", "walled", "push",
                                                      "dense"),
        ("D3Q19", "regularized", "neighbour", "pull", "sparse"),
        ("D3Q27", "recursive", "walled", "pull", "sparse")]


@pytest.mark.slow  # compiles six kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "collision", "geometry", "scheme", "storage"), HOST)
def test_host_cuda_les_equals_numpy(host_gpu, lattice_name, collision, geometry, scheme,
                                    storage):
    force = (2e-5, -1e-5, 1e-5)[: LATTICES[lattice_name].d] if collision == "trt" else None
    cpu, gpu, tags = les_pair(host_gpu, lattice_name, collision, geometry, scheme, np.float64,
                              storage, force)
    if storage == "sparse":
        assert_host_equals_numpy(cpu, gpu, tags)
        return
    gpu.poison()
    fluid = tags.fluid
    for steps in (7, 6):
        cpu.step(steps)
        gpu.step(steps)
        f = gpu.state()["f"]
        assert np.isfinite(f[:, fluid]).all(), "unwritten fluid populations (NaN poison)"
        assert relative_l2(f[:, fluid], cpu.f[:, fluid]) < 1e-13


def les_source(lattice_name, collision):
    return Lbm(nu=0.01, collision=collision, les="smagorinsky").kernel_source(
        LATTICES[lattice_name], np.float32)


@pytest.mark.nvcc(sources=les_source)
@pytest.mark.slow  # one nvcc run (~8 s) each; the GPU test above compiles every pair
@pytest.mark.parametrize(("lattice_name", "collision"), [
    ("D2Q9", "trt"), ("D3Q19", "mrt"), ("D3Q27", "recursive")])
def test_les_kernels_compile(tmp_path, lattice_name, collision):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    source = les_source(lattice_name, collision)
    assert "tau_les" in source
    result = compile_cubin(source, tmp_path, f"les_{lattice_name}_{collision}")
    assert result.returncode == 0, result.stderr[-3000:]

"""The dense CUDA LBM engine without a GPU: its generated kernels compiled for the host and
run thread by thread (tests/host_cupy.py) against the NumPy reference, for every memory scheme,
open boundaries and interpolated bodies: the launch arguments (one declaration with the
signature, :func:`thelma_py.modules.compute.lbm.kernels.step_args`), the state layouts and
the conversions are checked on every CPU run. CUDA's own arithmetic is in test_gpu_lbm.py."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, random_state, relative_l2
from tests.test_sparse import GEOMETRIES
from tests.test_sparse_host_engine import host_gpu  # noqa: F401 (fixture)
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")


@pytest.mark.parametrize(("lattice_name", "collision", "geometry", "scheme"), [
    ("D2Q9", "trt", "walled", "pull"), ("D2Q9", "mrt", "walled", "push"),
    ("D2Q9", "bgk", "zou-he", "aa"), ("D2Q9", "trt", "neighbour", "push"),
    ("D3Q19", "mrt", "curved", "pull"), ("D3Q19", "trt", "equilibrium", "aa"),
    ("D3Q27", "bgk", "neighbour", "pull")])
def test_host_cuda_dense_engine_equals_numpy(host_gpu, lattice_name, collision,  # noqa: F811
                                             geometry, scheme):
    lattice = LATTICES[lattice_name]
    tags = GEOMETRIES[geometry](lattice).evaluate(lattice)
    force = (2e-5, -1e-5, 1e-5)[: lattice.d] if collision == "trt" else None
    params = Lbm(nu=0.04, collision=collision, streaming=scheme, force=force)
    f = random_state(lattice, tags.tags.shape, np.float64)
    cpu, gpu = (params.create(lattice, tags, b, np.dtype(np.float64))
                for b in (select_backend("cpu"), host_gpu))
    assert type(gpu).__name__ == "CudaLbm"
    for engine in (cpu, gpu):
        engine.load_state({"f": f})
    gpu.poison()  # what a step must write (solid nodes never are: compared on fluid nodes)
    fluid = tags.fluid
    for steps in (3, 4):  # AA ends after an odd, then an even step
        cpu.step(steps)
        gpu.step(steps)
        assert relative_l2(gpu.state()["f"][:, fluid], cpu.f[:, fluid]) < 1e-14
    rho, u = (np.array(a) for a in gpu.macroscopic())
    assert relative_l2(rho[fluid], cpu.macroscopic()[0][fluid]) < 1e-14
    assert relative_l2(u[:, fluid], cpu.macroscopic()[1][:, fluid]) < 1e-13

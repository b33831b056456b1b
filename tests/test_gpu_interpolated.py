"""Interpolated bounce-back on the GPU against the NumPy reference (skipped without a GPU).

Same tolerances as tests/test_gpu_boundaries.py (tests/lbm_setups.py TOLERANCE): both sides
evaluate the expression of modules/compute/lbm/interpolated.py with the same weights, so they
differ by fused multiply-adds only; a wrong weight or neighbour is O(1e-3) after 120 steps.
The set-ups put a moving interpolated body (q < ½ and q ≥ ½ links, with fall-backs where it
comes within one node of another solid) in a channel with open faces, walls and a moving lid.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, assert_gpu_matches_numpy, cpu_and_gpu, open_geometry
from thelma_py.geometry import Sphere
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.forces import forces

pytestmark = pytest.mark.gpu


def engines(lattice_name, setup, dtype, collision):
    lattice = LATTICES[lattice_name]
    geo = open_geometry(lattice, setup)
    if lattice.d == 2:  # touches the plain sphere at (12.3, 9.7) r 3.2: fall-back links
        geo.body(Sphere((19.4, 9.1), 3.7), velocity=(0.005, -0.01), interpolated=True)
    else:
        geo.body(Sphere((20.6, 5.4, 4.8), 2.9), velocity=(0.005, 0.0, 0.01), interpolated=True)
    tags = geo.evaluate(lattice)
    assert len(tags.curved_nodes) > 10
    cpu, gpu = cpu_and_gpu(Lbm(nu=0.04, collision=collision), lattice, tags, dtype)
    return cpu, gpu, tags


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("setup", ["zou-he", "neighbour"])
@pytest.mark.parametrize(("lattice_name", "collision"), [("D2Q9", "mrt"), ("D3Q19", "trt")])
def test_interpolated_cuda_matches_numpy(lattice_name, collision, setup, dtype):
    cpu, gpu, tags = engines(lattice_name, setup, dtype, collision)
    assert_gpu_matches_numpy(cpu, gpu, tags, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
def test_interpolated_cuda_force_matches_numpy(dtype):
    """Same array operations on CuPy arrays: sums in another order only."""
    cpu, gpu, _ = engines("D3Q19", "zou-he", dtype, "trt")
    cpu.step(40)
    gpu.step(40)
    f_cpu, f_gpu = forces(cpu), forces(gpu)
    assert sorted(f_cpu) == sorted(f_gpu)
    tol = {np.float32: 1e-4, np.float64: 1e-10}[dtype]
    for body, value in f_cpu.items():
        scale = max(np.abs(value).max(), 1e-3)
        np.testing.assert_allclose(f_gpu[body], value, rtol=0, atol=tol * scale)

"""The dense CUDA LBM engine without a GPU: the generated kernels (pull, push, AA) compiled for
the host and run thread by thread (tests/host_cupy.py), against the NumPy engine on every CPU
run. Random states far from equilibrium, walls at rest, moving lids and bodies, every open
boundary kind and interpolated bodies; BGK, TRT (with a body force), MRT and the cumulant
models.

Both sides evaluate the same traced expressions in the same order, and the host build has no
fused multiply-adds (-ffp-contract=off), so they agree to rounding of the reductions in the
comparison itself: the bound is 1e-13 relative in fp64 (measured: 0 to 2e-16). A wrong link or
coefficient shows as 1e-3 or more.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, relative_l2
from tests.test_sparse_host_engine import pair as sparse_pair

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")


K17 = {"name": "cumulant", "parametrized": True, "limiter": 0.01}
"""The parametrized cumulant with its limiter (``"k17"`` in the table below): its rates of ω
reach the kernels as arguments (:func:`thelma_py.modules.compute.lbm.collision.
uniform_arguments`)."""


def pair(backend, lattice_name, collision, geometry, scheme, cuda_options=None):
    """Dense engines; TRT runs with a body force."""
    force = (2e-5, -1e-5, 1e-5)[: LATTICES[lattice_name].d] if collision == "trt" else None
    collision = K17 if collision == "k17" else collision
    return sparse_pair(backend, lattice_name, collision, geometry, scheme, force, "dense",
                       cuda_options)


@pytest.mark.parametrize(("lattice_name", "collision", "geometry", "scheme"), [
    ("D2Q9", "bgk", "walled", "pull"), ("D2Q9", "mrt", "walled", "push"),
    ("D2Q9", "trt", "walled", "aa"), ("D2Q9", "trt", "zou-he", "pull"),
    ("D2Q9", "mrt", "equilibrium", "push"), ("D2Q9", "bgk", "neighbour", "push"),
    ("D2Q9", "mrt", "curved", "pull"), ("D2Q9", "bgk", "zou-he", "aa"),
    ("D2Q9", "trt", "gap", "pull"), ("D3Q19", "bgk", "gap", "pull"),
    ("D3Q19", "mrt", "walled", "aa"), ("D3Q19", "trt", "zou-he", "push"),
    ("D3Q19", "bgk", "neighbour", "pull"), ("D3Q19", "trt", "curved", "pull"),
    ("D3Q19", "mrt", "equilibrium", "aa"), ("D3Q27", "bgk", "walled", "push"),
    ("D3Q27", "cumulant", "walled", "aa"), ("D3Q27", "k17", "walled", "pull"),
    ("D2Q9", "trt", "characteristic", "pull"),
    ("D3Q19", "bgk", "characteristic", "aa"),
    # the other indexing than the default (Lbm.narrow: 32-bit for AA, 64-bit for pull, push)
    ("D2Q9", "trt", "walled", "aa-wide"), ("D3Q19", "bgk", "neighbour", "pull-narrow"),
    ("D3Q19", "trt", "zou-he", "push-narrow"), ("D3Q19", "mrt", "walled", "aa-wide")])
def test_host_cuda_dense_engine_equals_numpy(host_gpu, lattice_name, collision, geometry,
                                             scheme):
    scheme, _, forced = scheme.partition("-")
    narrow = forced == "narrow" or (not forced and scheme == "aa")
    cpu, gpu, tags = pair(host_gpu, lattice_name, collision, geometry, scheme,
                          {"narrow": narrow} if forced else None)
    assert type(gpu).__name__ == "CudaLbm"
    assert ("N32" in gpu.source) is narrow
    gpu.poison()
    fluid = tags.fluid
    for steps in (7, 6):  # ends after an odd, then an even number of steps (AA's two kernels)
        cpu.step(steps)
        gpu.step(steps)
        f = gpu.state()["f"]
        assert np.isfinite(f[:, fluid]).all(), "unwritten fluid populations (NaN poison)"
        assert relative_l2(f[:, fluid], cpu.f[:, fluid]) < 1e-13
    rho_c, u_c = cpu.macroscopic()
    rho_g, u_g = (a.get() for a in gpu.macroscopic())
    assert relative_l2(rho_g[fluid], rho_c[fluid]) < 1e-13
    assert relative_l2(u_g[:, fluid], u_c[:, fluid]) < 1e-13


@pytest.mark.parametrize("scheme", ["pull", "aa"])
def test_host_cuda_graph_replay_equals_single_steps(host_gpu, scheme):
    """70 steps in one call replay a captured graph of 32 steps twice (the stand-in records
    the launches of a capture and replays them); 70 calls of one step launch each kernel:
    bit for bit the same state."""
    _, a, _ = pair(host_gpu, "D2Q9", "mrt", "walled", scheme)
    _, b, _ = pair(host_gpu, "D2Q9", "mrt", "walled", scheme)
    a.step(70)
    assert a._graphs, "70 steps on a small domain replay a graph"
    for _ in range(70):
        b.step(1)
    np.testing.assert_array_equal(a.state()["f"], b.state()["f"])

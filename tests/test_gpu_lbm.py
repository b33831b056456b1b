"""Every CUDA LBM configuration against the NumPy reference (skipped without a GPU).

Tolerances: the two sides evaluate the same expression trees (kernels.py traces collision.py),
so they differ only by the GPU's fused multiply-adds and by summation order in the reductions
of the test itself. After 120 steps from a random state that is ~1e-7 relative in fp32 and
~1e-15 in fp64; the limits (1e-5, 1e-12) leave room for growth without hiding a wrong link,
which shows as O(1e-2) or NaN.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import (
    CONFIGS,
    LATTICES,
    assert_gpu_matches_numpy,
    random_state,
    walled_geometry,
)
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm

pytestmark = pytest.mark.gpu




def engines(lattice_name, collision, scheme, dtype, force=None):
    lattice = LATTICES[lattice_name]
    tags = walled_geometry(lattice).evaluate(lattice)
    params = Lbm(nu=0.04, collision=collision, streaming=scheme, force=force)
    cpu = params.create(lattice, tags, select_backend("cpu"), np.dtype(dtype))
    gpu = params.create(lattice, tags, select_backend("cuda"), np.dtype(dtype))
    f = random_state(lattice, tags.tags.shape, dtype)
    cpu.load_state({"f": f})
    gpu.load_state({"f": f})
    return cpu, gpu, tags


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("scheme", ["pull", "push", "aa"])
@pytest.mark.parametrize(("lattice_name", "collision"), CONFIGS)
def test_cuda_matches_numpy(lattice_name, collision, scheme, dtype):
    force = (2e-5, -1e-5, 0.0)[: LATTICES[lattice_name].d] if collision == "trt" else None
    cpu, gpu, tags = engines(lattice_name, collision, scheme, dtype, force)
    assert_gpu_matches_numpy(cpu, gpu, tags, dtype)


@pytest.mark.parametrize("scheme", ["pull", "push", "aa"])
def test_cuda_steps_in_any_chunking_agree(scheme):
    """One call of 70 steps equals 70 calls of one step (graphs vs single launches)."""
    _, a, _ = engines("D3Q19", "mrt", scheme, np.float64)
    _, b, _ = engines("D3Q19", "mrt", scheme, np.float64)
    a.step(70)
    for _ in range(70):
        b.step(1)
    np.testing.assert_array_equal(a.state()["f"], b.state()["f"])


@pytest.mark.parametrize("scheme", ["pull", "push", "aa"])
def test_cuda_restart_is_bit_identical(scheme):
    _, a, _ = engines("D3Q19", "bgk", scheme, np.float32)
    a.step(33)
    saved = a.state()
    a.step(40)
    _, b, _ = engines("D3Q19", "bgk", scheme, np.float32)
    b.load_state(saved)
    b.step(40)
    np.testing.assert_array_equal(a.state()["held"], b.state()["held"])
    np.testing.assert_array_equal(a.macroscopic()[1].get(), b.macroscopic()[1].get())

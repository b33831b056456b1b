"""CUDA LW-ACM with curved walls (interpolated bodies) against the NumPy reference (skipped
without a GPU).

A moving interpolated body and one at rest (both ghost branches, the fallbacks next to a wall
face), a moving lid, a ragged x size (37: a partial tile), optionally an inlet and an outlet,
from random states; 120 steps (graph batches and a remainder). Tolerances as
tests/test_gpu_lwacm_open.py (the two-step ghosts divide Σ c f* by (1 − κ) ρ: fp32 2e-5); the
momentum-exchange forces on the device against NumPy's to 1e-9 (fp64) / 1e-4 (fp32) relative."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES
from tests.test_gpu_lwacm import assert_gpu_matches_numpy
from thelma_py.geometry import Geometry, Sphere
from thelma_py.modules.compute.lbm.forces import forces

pytestmark = pytest.mark.gpu

TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def geometry(d: int, case: str) -> tuple[Geometry, int]:
    """The geometry and the moving body's id."""
    if d == 2:
        geo = Geometry((45, 20), periodic=(case == "walls", False))
        if case == "open":
            geo.inlet("-x", velocity=lambda x, y: (0.03 + 0.001 * y, 0 * y, 0 * y))
            geo.outlet("+x", rho=1.0)
        geo.edge("+y", velocity=(0.02, 0.0))
        body = geo.body(Sphere((15.5, 9.2), 4.1), velocity=(0.0, 0.01), interpolated=True)
        geo.body(Sphere((30.3, 1.2), 2.3), interpolated=True)
        return geo, body
    geo = Geometry((37, 14, 12), periodic=(case == "walls", False, False))
    if case == "open":
        geo.inlet("-x", velocity=(0.03, 0.0, 0.0))
        geo.outlet("+x", rho=1.0)
    geo.edge("+y", velocity=(0.02, 0.0, 0.01))
    body = geo.body(Sphere((12.3, 6.1, 5.6), 3.4), velocity=(0.0, 0.02, -0.01),
                    interpolated=True)
    geo.body(Sphere((27.2, 1.4, 6.3), 2.1), interpolated=True)
    return geo, body


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("scheme", ["lwacm", "lwacm-fused"])
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19", "D3Q27"])
@pytest.mark.parametrize("case", ["walls", "open"])
def test_cuda_curved_matches_numpy(lattice_name, scheme, dtype, case):
    from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused

    lattice = LATTICES[lattice_name]
    geo, body = geometry(lattice.d, case)
    tags = geo.evaluate(lattice)
    params = (Lwacm if scheme == "lwacm" else LwacmFused)(nu=0.04)
    cpu, gpu = assert_gpu_matches_numpy(params, lattice, tags, dtype, TOLERANCE[dtype],
                                        "curved_weights")
    on_cpu, on_gpu = forces(cpu)[body], forces(gpu)[body]
    # fp32: the force (~3e-3) sums populations of order w_i (~0.1) over ~100 links, so a few
    # float32 roundings of the populations (1e-8 each) move it by ~1e-7 absolute, 1e-4 relative
    # (H100: 3.6e-7, 1.4e-4 for D2Q9 single step)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-9 if dtype == np.float64 else 5e-4,
                               atol=1e-12 if dtype == np.float64 else 1e-6)

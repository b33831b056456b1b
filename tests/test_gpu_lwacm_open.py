"""CUDA LW-ACM with open boundaries against the NumPy reference (skipped without a GPU).

Every open kind (velocity and equilibrium inlets with a profile, pressure outlet with a profile,
outflow, free slip on faces and edges), with walls, a moving lid and a moving sphere, a ragged
x size (37: a partial tile), from random states; 120 steps (graph batches and a remainder).
Tolerances as in tests/test_gpu_lwacm.py: the same traced expressions, fused multiply-adds
apart (the two-step open links divide the neighbour's Σ c f* by (1 − κ), so fp32 gets 2e-5)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES
from tests.test_gpu_lwacm import assert_gpu_matches_numpy
from tests.test_lwacm_open_host import march_channel
from thelma_py.geometry import Geometry, Sphere

pytestmark = pytest.mark.gpu

TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def geometry(d: int, case: str) -> Geometry:
    if d == 2:
        geo = Geometry((45, 20))
        geo.inlet("-x", velocity=lambda x, y: (0.03 + 0.001 * y, 0.002 + 0 * y, 0 * y))
        if case == "outlet":
            geo.outlet("+x", rho=lambda x, y: 1.0 + 0.0005 * y)
            geo.edge("-y", velocity=(0.02, 0.0))
        else:
            geo.outflow("+x")
            geo.free_slip("-y")
        geo.free_slip("+y")
        geo.wall(Sphere((15.5, 9.2), 4.1), velocity=(0.0, 0.01))
        return geo
    geo = Geometry((37, 14, 12))
    if case == "outlet":
        geo.edge("+y", velocity=(0.02, 0.0, 0.01))
        geo.inlet("-x", velocity=lambda x, y, z: (0.03 + 0.0002 * y * z, 0.002 + 0 * y,
                                                  -0.001 + 0 * z), kind="equilibrium")
        geo.outlet("+x", rho=lambda x, y, z: 1.0 + 0.0005 * y + 0 * z)
        geo.free_slip("-z")
        geo.free_slip("+z")
        geo.wall(Sphere((12.3, 6.1, 5.6), 3.4), velocity=(0.0, 0.02, -0.01))
    else:
        geo.inlet("-x", velocity=(0.03, 0.0, 0.0))
        geo.outflow("+x")
        for face in ("-y", "+y", "-z", "+z"):
            geo.free_slip(face)
        geo.wall(Sphere((12.3, 6.1, 5.6), 3.4))
    return geo


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("scheme", ["lwacm", "lwacm-fused"])
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19", "D3Q27"])
@pytest.mark.parametrize("case", ["outlet", "outflow-slip"])
def test_cuda_open_matches_numpy(lattice_name, scheme, dtype, case):
    from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused

    lattice = LATTICES[lattice_name]
    tags = geometry(lattice.d, case).evaluate(lattice)
    params = (Lwacm if scheme == "lwacm" else LwacmFused)(nu=0.04)
    assert_gpu_matches_numpy(params, lattice, tags, dtype, TOLERANCE[dtype], "open_values")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19", "D3Q27"])
def test_cuda_side_ghosts_match_numpy(lattice_name, dtype):
    from thelma_py.modules.compute.lwacm import LwacmFused

    lattice = LATTICES[lattice_name]
    # ragged sizes: partial tiles along x (and y)
    tags = march_channel((45, 30) if lattice.d == 2 else (37, 13, 24)).evaluate(lattice)
    _, gpu = assert_gpu_matches_numpy(LwacmFused(nu=0.04), lattice, tags, dtype,
                                      TOLERANCE[dtype], "side_columns")
    assert gpu.sides.end_planes == (0, tags.tags.shape[0] - 1)

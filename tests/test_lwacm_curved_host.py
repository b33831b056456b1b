"""Curved walls of the LW-ACM schemes, generated CUDA on the host stand-in against the NumPy
references: fp64 to 1e-13, fp32 to 2e-5 (as the open-boundary arms: rounding of a few hundred
steps' worth of fp32 updates of O(1) values), random-ish non-trivial states, moving
interpolated bodies with both ghost branches (q < ½ and q ≥ ½) and the fallbacks next to a
wall face; cut domains against one domain bit for bit (the ghosts read x + c_i across the cut)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES
from tests.test_parallel_host_cuda import (
    assert_ranks_match_numpy,
    initialize,
)
from thelma_py.geometry import Geometry, Sphere
from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused

pytestmark = pytest.mark.slow  # compiles the kernels with g++


def curved_geometry(case: str) -> Geometry:
    """'2d': x periodic, a lid on +y, a moving interpolated disc touching the cut and one at
    rest next to the −y wall; '2d-open': inlet −x, outlet +x, an interpolated disc at rest;
    '3d': walls beyond y and z, a lid on +z, a moving interpolated sphere."""
    if case == "2d":
        geo = Geometry((20, 12), periodic=(True, False))
        geo.edge("+y", velocity=(0.06, 0.0))
        geo.body(Sphere((7.3, 6.2), 2.7), velocity=(0.0, 0.01), interpolated=True)
        geo.body(Sphere((15.4, 1.1), 1.6), interpolated=True)
        return geo
    if case == "2d-open":
        geo = Geometry((20, 12))
        geo.inlet("-x", velocity=lambda x, y: (0.03 + 0.002 * y, 0 * y, 0 * y))
        geo.outlet("+x", rho=1.0)
        geo.body(Sphere((8.3, 5.7), 2.9), interpolated=True)
        return geo
    geo = Geometry((13, 6, 10), periodic=(True, False, False))
    geo.edge("+z", velocity=(0.05, 0.01, 0.0))
    geo.body(Sphere((6.3, 3.1, 4.6), 2.2), velocity=(0.0, 0.02, -0.01), interpolated=True)
    return geo


@pytest.mark.parametrize(("case", "dims", "fused", "precision"), [
    ("2d", (1, 2), True, "float64"), ("2d", (1, 3), False, "float32"),
    ("2d-open", (1, 2), False, "float64"), ("2d-open", (1, 2), True, "float32"),
    ("3d", (1, 1, 2), False, "float64"), ("3d", (1, 1, 2), True, "float64")])
def test_host_cuda_curved_equals_numpy_and_ranks_bit_for_bit(host_gpu, case, dims, fused,
                                                             precision):
    lattice = LATTICES["D3Q19" if len(dims) == 3 else "D2Q9"]
    geo = curved_geometry(case)
    params = (LwacmFused if fused else Lwacm)(nu=0.03)
    tolerance = 1e-13 if precision == "float64" else 2e-5
    whole = assert_ranks_match_numpy(params, lattice, geo, dims, precision, host_gpu, tolerance)
    assert "KIND_INTERPOLATED" in whole.source and whole.n_curved > 0


@pytest.mark.nvcc
@pytest.mark.parametrize(("lat", "real", "scheme", "moving", "arms", "les"), [
    ("D2Q9", "float", "fused", True, True, False),
    ("D3Q19", "double", "fused", False, False, True),
    ("D3Q19", "float", "two-step", True, True, False),
    ("D3Q27", "double", "two-step", False, False, True)])
def test_curved_kernels_compile_with_nvcc(tmp_path, lat, real, scheme, moving, arms, les):
    """Curved walls with moving walls, open arms or LES: nvcc -arch=sm_90 compiles them
    without warnings."""
    from tests.nvcc import compile_cubin
    from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate
    from thelma_py.subgrid import Smagorinsky

    lattice = LATTICES[lat]
    pairs = (("VELOCITY", "-x"), ("PRESSURE", "+x")) if arms else ()
    cfg = LwacmKernelConfig(lattice, real, scheme, moving_walls=moving, boundaries=pairs,
                            les=Smagorinsky() if les else None, interpolated=True)
    text = generate(cfg)
    assert text.count("KIND_INTERPOLATED") >= 1 and "curved_weights" in text
    result = compile_cubin(text, tmp_path, cfg.name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr.lower(), result.stderr[-3000:]


@pytest.mark.parametrize("fused", [False, True])
def test_host_cuda_curved_links_never_read_a_solid_far_node(host_gpu, fused):
    """Solid nodes hold NaN: a link whose x + c_i is solid or beyond a face (weight c = 0)
    must not read it, or 0 · NaN spoils the node. Both schemes stay finite for 20 steps."""
    lattice = LATTICES["D2Q9"]
    geo = curved_geometry("2d")
    tags = geo.evaluate(lattice)
    params = (LwacmFused if fused else Lwacm)(nu=0.03)
    engine = params.create(lattice, tags, host_gpu, np.dtype(np.float64))
    initialize(engine, geo, (0, 0), geo.shape)
    state = engine.state()
    for key in state:
        state[key] = np.array(state[key])
        state[key].reshape(len(state[key]) if state[key].ndim > 2 else 1, -1)[
            :, tags.solid.reshape(-1)] = np.nan
    engine.load_state(state)
    engine.step(20)
    u = np.array(engine.macroscopic()[1])
    assert np.isfinite(u[:, ~tags.solid]).all()

"""The generated LW-ACM open-boundary arms (host stand-in of CUDA) against the NumPy
references: fp64 to 1e-13, fp32 to 1e-5, random non-trivial states with walls, a moving body
and every open kind; cut domains against one domain bit for bit; kernels without open
boundaries keep their text (benchmarks/dump_kernels.py --check)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES
from tests.test_parallel_host_cuda import (
    STEPS,
    assert_ranks_match_numpy,
    initialize,
)
from thelma_py.backend import select_backend
from thelma_py.geometry import Geometry, Sphere
from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused


def march_channel(shape: tuple[int, ...]) -> Geometry:
    """Inlet (a profile) and outlet (2D: pressure; 3D: outflow) across the march axis (y in 2D,
    z in 3D), free-slip sides with their edges, a moving sphere off the centre: the single
    step stages the sides' ghosts as flipped copies and runs the end planes per link."""
    geo = Geometry(shape)
    centre = [0.46 * n + 0.1 for n in shape]
    radius = 0.22 * min(shape[:-1])
    if len(shape) == 2:
        geo.inlet("-y", velocity=lambda x, y: (0.002 + 0 * x, 0.03 + 0.001 * x, 0 * x))
        geo.outlet("+y", rho=1.0)
        geo.free_slip("-x")
        geo.free_slip("+x")
        geo.wall(Sphere(centre, radius), velocity=(0.01, 0.0))
        return geo
    geo.inlet("-z", velocity=lambda x, y, z: (0.001 + 0 * x, -0.002 + 0 * y,
                                              0.03 + 0.0002 * x * y))
    geo.outflow("+z")
    for face in ("-x", "+x", "-y", "+y"):
        geo.free_slip(face)
    geo.wall(Sphere(centre, radius), velocity=(0.0, 0.01, -0.01))
    return geo


def open_geometry(case: str) -> Geometry:
    """'3d': parabolic-ish inlet −x, pressure outlet +x, walls ±y (a lid on +y), free slip ±z,
    a moving sphere. '3d-slip': uniform inlet −x, outflow +x, free slip on ±y and ±z (edges),
    a sphere at rest. '2d': profile inlet −x (equilibrium kind), outflow +x, free slip +y,
    wall −y, a moving disc. '2d-march', '3d-march': :func:`march_channel`."""
    if case.endswith("-march"):
        return march_channel((12, 16) if case == "2d-march" else (9, 7, 12))
    if case == "2d":
        geo = Geometry((20, 12))
        geo.inlet("-x", velocity=lambda x, y: (0.03 + 0.002 * y, 0.004 + 0 * y, 0 * y),
                  kind="equilibrium")
        geo.outflow("+x")
        geo.free_slip("+y")
        geo.wall(Sphere((7.5, 6.2), 2.7), velocity=(0.0, 0.01))
        return geo
    geo = Geometry((13, 6, 10))
    if case == "3d":
        geo.edge("+y", velocity=(0.02, 0.0, 0.0))
        geo.inlet("-x", velocity=lambda x, y, z: (0.03 + 0.001 * y * z, 0.002 + 0 * y,
                                                  -0.001 + 0 * z))
        geo.outlet("+x", rho=lambda x, y, z: 1.0 + 0.001 * y + 0 * z)
        geo.free_slip("-z")
        geo.free_slip("+z")
        geo.wall(Sphere((6.3, 3.1, 4.6), 1.9), velocity=(0.0, 0.02, -0.01))
    else:
        geo.inlet("-x", velocity=(0.03, 0.0, 0.0))
        geo.outflow("+x")
        for face in ("-y", "+y", "-z", "+z"):
            geo.free_slip(face)
        geo.wall(Sphere((6.3, 3.1, 4.6), 1.9))
    return geo


@pytest.mark.parametrize("scheme", ["two-step", "sides", "links"])
@pytest.mark.parametrize(("case", "dims", "precision"), [
    ("3d", (1, 1, 2), "float64"), ("3d-slip", (1, 1, 3), "float32"), ("2d", (1, 2), "float64"),
    ("2d", (1, 3), "float32"), ("3d-march", (1, 1, 3), "float64"),
    ("2d-march", (1, 3), "float32")])
def test_host_cuda_open_equals_numpy_and_ranks_bit_for_bit(host_gpu, case, dims, precision,
                                                           scheme):
    """The two-step scheme, and the single step with free-slip side ghosts staged as copies
    (sides, where the geometry allows: the '-march' cases, whose inlet and outlet lie across
    the march axis; the end planes then run the per-link kernel) or per link. Rank boxes that
    reach beyond an open face fall back to links, so "ranks bit for bit" also holds the two
    ghost paths to each other."""
    lattice = LATTICES["D3Q19" if len(dims) == 3 else "D2Q9"]
    geo = open_geometry(case)
    params = Lwacm(nu=0.02) if scheme == "two-step" else LwacmFused(nu=0.02, open_ghosts=scheme)
    tolerance = 1e-13 if precision == "float64" else 2e-5
    whole = assert_ranks_match_numpy(params, lattice, geo, dims, precision, host_gpu, tolerance)
    sides = scheme == "sides" and case.endswith("-march")
    assert ("side_columns" in whole.source) == sides
    assert ("open_values" in whole.source) != sides
    if sides:
        assert whole.sides.end_planes == (0, geo.shape[-1] - 1)


@pytest.mark.parametrize("case", ["obstacles", "slip-obstacles"])
def test_bench_channels_take_side_ghosts_and_no_open_arms(case):
    """The bench channels (inlet and outlet across z, walls or free-slip sides, a sphere): the
    single step's main kernel carries no per-link arms and its free-slip face tiles are plain
    (only the sphere's and the walls' tiles are flagged); the end planes run per link."""
    from thelma_py.modules.compute.lwacm.fused_kernels import tile_flags
    from thelma_py.modules.compute.lwacm.side_ghosts import side_ghosts
    from thelma_py.tools.bench_cases import geometry_for

    lattice = LATTICES["D3Q19"]
    tags = geometry_for(case, 128, 3).evaluate(lattice)
    sides = side_ghosts(lattice, tags)
    assert sides is not None and sides.end_planes == (0, 127)
    flagged = tile_flags(lattice, sides.tags, open_plain=True) != 0
    # walls beyond ±x flag 2 of the 4 tiles of a row; with free-slip sides only the sphere's
    # tiles and the rows where a side meets the end planes (a slip node's link across that
    # face stays a wall link) are flagged: 3.6 % here, against 27 % before
    walls = case == "obstacles"
    assert flagged.mean() < (0.55 if walls else 0.04)
    assert not (tile_flags(lattice, tags) != 0).mean() < 0.26
    assert (sides.columns[:, 0] != 0).sum() == (0 if walls else 2 * 130 + 2 * 128)


def test_side_ghosts_fall_back_where_the_kernel_cannot_stage_them():
    """An inlet on a side face (its ghost needs boundary rows), or a rank box that stores the
    layer beyond an open face: no side ghosts (None: the engine keeps the per-link arms)."""
    from thelma_py.modules.compute.lwacm.side_ghosts import side_ghosts

    lattice = LATTICES["D3Q19"]
    geo = Geometry((8, 6, 5))
    geo.inlet("-z", velocity=(0.0, 0.0, 0.02))
    geo.outlet("+z", rho=1.0)
    geo.free_slip("-x")
    assert side_ghosts(lattice, geo.evaluate(lattice)) is not None
    assert side_ghosts(lattice, geo.evaluate(lattice, (0, 0, -1), (8, 6, 4), ghost=True)) is None
    assert side_ghosts(lattice, open_geometry("3d").evaluate(lattice)) is None


def halo_source(lat, real):
    from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate

    return generate(LwacmKernelConfig(LATTICES[lat], real, "fused", moving_walls=True,
                                      side_ghosts=True))


@pytest.mark.nvcc(sources=halo_source)
@pytest.mark.parametrize(("lat", "real"), [("D3Q19", "float"), ("D2Q9", "double"),
                                           ("D3Q27", "float")])
def test_halo_ghost_kernels_compile_with_nvcc(tmp_path, lat, real):
    from tests.nvcc import compile_cubin

    result = compile_cubin(halo_source(lat, real), tmp_path, f"halo_{lat}_{real}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr.lower(), result.stderr[-3000:]


ALL_ARMS = (("VELOCITY", "-x"), ("PRESSURE", "+x"), ("OUTFLOW", "+y"), ("FREE_SLIP", "-z"),
            ("FREE_SLIP", "-y+z"), ("EQUILIBRIUM_VELOCITY", "+z"))


def open_config(lat, real, scheme):
    from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig

    arms = [(k, f) for k, f in ALL_ARMS if lat != "D2Q9" or "z" not in f]
    return LwacmKernelConfig(LATTICES[lat], real, scheme, moving_walls=True, boundaries=arms)


def open_source(lat, real, scheme):
    from thelma_py.modules.compute.lwacm.kernels import generate

    return generate(open_config(lat, real, scheme))


@pytest.mark.nvcc(sources=open_source)
@pytest.mark.parametrize(("lat", "real", "scheme"), [
    ("D3Q19", "float", "fused"), ("D3Q19", "double", "two-step"), ("D2Q9", "double", "fused"),
    ("D3Q27", "float", "two-step"), ("D3Q27", "float", "fused")])
def test_open_kernels_compile_with_nvcc(tmp_path, lat, real, scheme):
    from tests.nvcc import compile_cubin

    result = compile_cubin(open_source(lat, real, scheme), tmp_path,
                           open_config(lat, real, scheme).name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr.lower(), result.stderr[-3000:]


def test_open_arms_leave_the_kernels_without_them_alone():
    """No open boundary: the config and the text are the old ones (dump_kernels --check holds
    every shipped variant); with them, the open tables are arguments."""
    from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate

    for scheme in ("fused", "two-step"):
        plain = generate(LwacmKernelConfig(LATTICES["D3Q19"], "float", scheme))
        assert "open_values" not in plain and "KIND_VELOCITY &&" not in plain
        arms = generate(LwacmKernelConfig(LATTICES["D3Q19"], "float", scheme,
                                          boundaries=ALL_ARMS[:2]))
        assert "const real_t* __restrict__ open_values" in arms and "kind == KIND_VELOCITY" in arms


@pytest.mark.parametrize("fused", [False, True])
def test_host_cuda_forces_equal_numpy(host_gpu, fused):
    """The momentum-exchange force on a moving sphere and on the walls at rest, from the CUDA
    engines (f* of the device state) and the NumPy ones, after 12 steps: same to 1e-12."""
    from thelma_py.modules.compute.lbm.forces import forces

    lattice = LATTICES["D3Q19"]
    geo = open_geometry("3d")
    tags = geo.evaluate(lattice)
    params = (LwacmFused if fused else Lwacm)(nu=0.02)
    results = []
    for backend in (host_gpu, select_backend("cpu")):
        engine = params.create(lattice, tags, backend, np.dtype(np.float64))
        initialize(engine, geo, (0,) * geo.dim, geo.shape)
        engine.step(STEPS)
        results.append(forces(engine))
    assert set(results[0]) == set(results[1]) and len(results[0]) >= 2
    for body, value in results[1].items():
        assert np.abs(value).max() > 1e-6
        np.testing.assert_allclose(results[0][body], value, rtol=1e-12, atol=1e-14)

"""Generated LW-ACM CUDA source: deterministic, complete, and compiled by the local nvcc."""

from __future__ import annotations

import re

import pytest

from tests.lbm_setups import LATTICES
from tests.nvcc import compile_cubin
from thelma_py.modules.compute.lwacm.kernels import (
    SCHEMES,
    LwacmKernelConfig,
    generate,
    kernel_names,
)

ALL = [(lat, real, scheme, moving)
       for lat in ("D2Q9", "D3Q19") for real in ("float", "double") for scheme in SCHEMES
       for moving in (True, False)]


def config(lat, real, scheme, moving=True, force=None):
    return LwacmKernelConfig(LATTICES[lat], real, scheme, force=force, moving_walls=moving)


@pytest.mark.parametrize(("lat", "real", "scheme", "moving"), ALL)
def test_source_is_deterministic_and_names_its_entries(lat, real, scheme, moving):
    first = generate(config(lat, real, scheme, moving))
    assert first == generate(config(lat, real, scheme, moving))
    for name in set(kernel_names(scheme).values()):
        assert re.search(rf'extern "C" __global__ void __launch_bounds__\([0-9]+\) {name}\(',
                         first), name


def test_no_velocity_table_reaches_the_kernel():
    for scheme in SCHEMES:
        text = generate(config("D3Q19", "float", scheme))
        assert "__constant__" not in text and "[19]" not in text


def test_fused_kernel_marches_with_16_byte_records_and_a_ring_of_five_planes():
    text = generate(config("D3Q19", "float", "fused"))
    assert "struct __align__(16) node_t { real_t rho, ux, uy, uz; };" in text
    assert "#define PX 32" in text and "#define PY 8" in text and "#define HY 1" in text
    assert "#define RING 5" in text and "__shared__ node_t ring[RING * PLANE];" in text
    assert "cp.async.cg.shared.global" in text and "cp.async.wait_group 1" in text
    assert text.count("__syncthreads();") == 2  # after the first planes, once per plane
    double = generate(config("D3Q19", "double", "fused"))
    assert "#define PY 4" in double and "#define RECORD_PARTS 2" in double  # 48 KB of shared
    two = generate(config("D2Q9", "double", "fused"))
    assert "#define PX 128" in two and "#define HY 0" in two
    assert "struct __align__(32) node_t" in two
    # three paths: bulk tiles read no tag, walls at rest by selects, moving walls look up ids
    assert text.count("tags[n]") == 2 and "flag & 2" in text
    assert "flag & 2" not in generate(config("D3Q19", "float", "fused", moving=False))


def test_force_and_wall_terms_are_baked_in_only_when_needed():
    plain = generate(config("D2Q9", "float", "fused", moving=False))
    assert "wall_id(x" not in plain and "1e-05" not in plain
    forced = generate(config("D2Q9", "float", "two-step", force=(1e-5, 0.0)))
    assert "((real_t)1e-05)" in forced and "wall_id(x" in forced


def forced_config(lat, real, scheme, moving):
    force = (1e-5,) + (0.0,) * (LATTICES[lat].d - 1) if moving else None
    return config(lat, real, scheme, moving, force)


@pytest.mark.nvcc(sources=lambda **p: generate(forced_config(**p)))
@pytest.mark.slow
@pytest.mark.parametrize(("lat", "real", "scheme", "moving"), ALL)
def test_every_generated_kernel_compiles_with_nvcc(tmp_path, lat, real, scheme, moving):
    cfg = forced_config(lat, real, scheme, moving)
    result = compile_cubin(generate(cfg), tmp_path, cfg.name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr.lower(), result.stderr[-3000:]


def test_fused_tile_flags_mark_the_tiles_next_to_moving_walls():
    """A 64 x 8 x 6 box with walls beyond every face and a lid on +z: every tile is flagged
    (each touches a wall), and exactly the tiles of the top layer (z = 5) reach the lid."""
    from thelma_py.geometry import cavity
    from thelma_py.modules.compute.lwacm.fused_kernels import MOVING_TILE, WALL_TILE, tile_flags

    lattice = LATTICES["D3Q19"]
    tags = cavity((64, 8, 6), (0.05, 0.0, 0.0), lid_face="+z").evaluate(lattice)
    flags = tile_flags(lattice, tags)
    assert flags.shape == (6, 8, 2)
    layered = flags
    assert (layered & WALL_TILE).all()
    assert (layered[5] & MOVING_TILE).all() and not (layered[:5] & MOVING_TILE).any()
    still = cavity((64, 8, 6), (0.0, 0.0, 0.0), lid_face="+z").evaluate(lattice)
    assert not (tile_flags(lattice, still) & MOVING_TILE).any()


def test_single_step_engine_refuses_planes_of_2_to_the_32_nodes():
    """The kernel stages a plane through 32-bit in-plane offsets: a larger plane is refused
    before anything is allocated (a zero-stride view stands in for the tag words)."""
    import types

    import numpy as np

    from thelma_py.modules.compute.lwacm import LwacmFused
    from thelma_py.modules.compute.lwacm.cuda import CudaLwacmFused

    huge = types.SimpleNamespace(tags=np.broadcast_to(np.uint32(1), (2, 65536, 65536)))
    with pytest.raises(ValueError, match=r"plane of 4294967296 nodes .* fewer than 2\^32"):
        CudaLwacmFused(LwacmFused(nu=0.04), LATTICES["D3Q19"], huge, None, np.float32)
    fits = types.SimpleNamespace(tags=np.broadcast_to(np.uint32(1), (2, 65536, 65535)))
    with pytest.raises(Exception) as caught:  # passes the check, fails later (no GPU here)
        CudaLwacmFused(LwacmFused(nu=0.04), LATTICES["D3Q19"], fits, None, np.float32)
    assert "2^32" not in str(caught.value)

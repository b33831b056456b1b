"""The closed-box options of the dense LBM kernels. ``wall_launch='split'``: a bulk kernel with
no wall code that skips flagged tiles, then a kernel over the list of flagged tiles.
``moving_tiles``: Ladd's moving-wall term only in tiles that touch a moving wall (elsewhere
the term is ±0, so a plain bounce-back is the same number). ``wall_reads='select'``: the tag
before the loads, each population read once from the address it selects. Each node is still
updated once by
the same arithmetic, so the state is bit-identical to the default kernel's (and equal to the
NumPy reference to rounding, 1e-13 relative in fp64 as in tests/test_dense_host_engine.py).

On the CPU through tests/host_cupy.py: D3Q19 with a moving lid and a moving sphere (walled,
nx = 37: a partial last tile), and a channel with open faces (Zou-He, pull and push)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, open_geometry, random_state, relative_l2, walled_geometry
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")


def _engine(backend, lattice, tags, scheme, options, dtype=np.float64):
    params = Lbm(nu=0.04, collision="mrt", streaming=scheme, cuda_options=options)
    engine = params.create(lattice, tags, backend, np.dtype(dtype))
    engine.load_state({"f": random_state(lattice, tags.tags.shape, dtype)})
    return engine


def _tags(geometry: str):
    lattice = LATTICES["D3Q19"]
    geo = walled_geometry(lattice) if geometry == "walled" else open_geometry(lattice, geometry)
    return lattice, geo.evaluate(lattice)


SPLIT, MOVING = {"wall_launch": "split"}, {"moving_tiles": True}
SELECT, REFETCH = {"wall_reads": "select"}, {"wall_reads": "refetch"}


@needs_gxx
@pytest.mark.parametrize(("geometry", "scheme", "options"), [
    ("walled", "pull", SPLIT), ("walled", "push", SPLIT), ("walled", "aa", SPLIT),
    ("zou-he", "pull", SPLIT), ("zou-he", "aa", SPLIT),
    ("walled", "pull", MOVING), ("walled", "push", MOVING), ("walled", "aa", MOVING),
    ("zou-he", "push", MOVING), ("walled", "aa", {**SPLIT, **MOVING}),
    ("walled", "pull", SELECT), ("walled", "aa", SELECT), ("zou-he", "pull", SELECT),
    ("walled", "pull", {**SELECT, "moving_tiles": False}), ("walled", "aa", {**SELECT, **SPLIT})])
def test_closed_box_options_are_bit_identical_to_default(host_gpu, geometry, scheme, options):
    lattice, tags = _tags(geometry)
    fused = _engine(host_gpu, lattice, tags, scheme, {"block": 64})
    split = _engine(host_gpu, lattice, tags, scheme, {"block": 64, **options})
    if "wall_launch" in options:
        assert int(split.n_wall_tiles) > 0
    if "wall_launch" in options and geometry == "walled":  # the small channel: walls only
        assert int(split.n_wall_tiles) < split.tile_flags.size  # both kernels have work
    if options.get("moving_tiles"):  # tiles with a moving wall, and walls at rest: the
        # faces (computed in clean tiles) or the channel's stored walls
        flags = split.tile_flags
        assert (flags & 2).any() and (int(split.box_walls) or (flags == 1).any())
    cpu = _engine(select_backend("cpu"), lattice, tags, scheme, {})
    for engine in (fused, split):
        engine.poison()  # a population the split launch fails to write stays NaN
    for steps in (5, 4):  # AA: ends after an odd, then an even step
        for engine in (fused, split, cpu):
            engine.step(steps)
        for key in ("held", "rho", "u"):
            np.testing.assert_array_equal(split.state()[key], fused.state()[key])
    fluid = tags.fluid
    assert relative_l2(split.state()["f"][:, fluid], cpu.f[:, fluid]) < 1e-13


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scheme", ["pull", "push", "aa"])
def test_gpu_closed_box_options_are_bit_identical_to_default(scheme, dtype):
    lattice, tags = _tags("walled")
    gpu = select_backend("cuda")
    engines = [_engine(gpu, lattice, tags, scheme, options, dtype)
               for options in ({}, SPLIT, MOVING, {**SPLIT, **MOVING}, SELECT)]
    for engine in engines:
        engine.poison()
        engine.step(39)  # a captured graph
        engine.step(1)
    for engine in engines[1:]:
        np.testing.assert_array_equal(engine.state()["held"], engines[0].state()["held"])
        np.testing.assert_array_equal(engine.state()["rho"], engines[0].state()["rho"])


def test_split_wall_launch_refusals():
    lattice = LATTICES["D3Q19"]
    with pytest.raises(ValueError, match="propagation 'direct'"):
        Lbm(nu=0.04, cuda_options={"wall_launch": "split", "propagation": "shuffle"}
            ).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="moving_tiles runs with propagation 'direct'"):
        Lbm(nu=0.04, cuda_options={"moving_tiles": True, "propagation": "shared"}
            ).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="dense storage"):
        Lbm(nu=0.04, storage="sparse", cuda_options={"wall_launch": "split"}
            ).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="wall_launch"):
        Lbm(nu=0.04, cuda_options={"wall_launch": "apart"}).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="wall_reads 'select' runs with propagation 'direct'"):
        Lbm(nu=0.04, cuda_options={**SELECT, "propagation": "shared"}
            ).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="dense storage"):
        Lbm(nu=0.04, storage="sparse", cuda_options=SELECT).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="wall_reads"):
        Lbm(nu=0.04, cuda_options={"wall_reads": "twice"}).kernel_source(lattice, np.float32)


def test_bench_sweeps_split_launch_for_dense_direct_lbm_only():
    from thelma_py.tools.bench import BenchConfig, _wanted, compute_params

    assert _wanted(BenchConfig(streaming="aa", case="cavity", wall_launch="split"), 0.3)
    assert not _wanted(BenchConfig(wall_launch="split", propagation="shuffle"), 0.3)
    assert not _wanted(BenchConfig(compute="lwacm", wall_launch="split"), 0.3)
    assert not _wanted(BenchConfig(moving_tiles=True, propagation="shared"), 0.3)
    cfg = BenchConfig(case="cavity", wall_launch="split", moving_tiles=True)
    assert "split moving-tiles" in cfg.label
    assert compute_params(cfg).cuda_options["wall_launch"] == "split"
    assert compute_params(cfg).cuda_options["moving_tiles"] is True
    assert not _wanted(BenchConfig(storage="sparse", wall_reads="select"), 0.3)
    assert compute_params(BenchConfig(wall_reads="select")).cuda_options["wall_reads"] == "select"


def closed_box_source(scheme, real):
    return Lbm(nu=0.04, streaming=scheme, cuda_options={**SPLIT, **MOVING}).kernel_source(
        LATTICES["D3Q19"], np.float32 if real == "float" else np.float64)


@pytest.mark.nvcc(sources=lambda real: [closed_box_source(scheme, real)
                                        for scheme in ("pull", "push", "aa")])
@pytest.mark.parametrize("real", ["float", "double"])
def test_closed_box_kernels_compile_with_nvcc(tmp_path, real):
    """Split launch with moving tiles, D3Q19 with moving walls, every scheme, for sm_90."""
    from tests.nvcc import compile_cubin

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    for scheme in ("pull", "push", "aa"):
        source = closed_box_source(scheme, real)
        result = compile_cubin(source, tmp_path, f"{scheme}_{real}")
        assert result.returncode == 0, result.stderr[-3000:]


@needs_gxx
@pytest.mark.parametrize("scheme", ["pull", "aa"])
@pytest.mark.parametrize("option", [{"moving_tiles": False}, REFETCH, SPLIT])
def test_closed_box_options_with_16_bit_storage_are_bit_identical(host_gpu, scheme, option):
    """The defaults with 16-bit storage (moving-wall terms only in moving tiles, selected
    addresses, one fused launch) give the state of the other choice bit for bit."""
    lattice, tags = _tags("walled")
    engines = []
    for options in (option, {}):
        params = Lbm(nu=0.04, collision="bgk", streaming=scheme, store="fp16c",
                     cuda_options={"block": 64, **options})
        engine = params.create(lattice, tags, host_gpu, np.dtype(np.float32))
        engine.load_state({"f": random_state(lattice, tags.tags.shape, np.float32)})
        engines.append(engine)
    assert (engines[1].tile_flags & 2).any()
    for engine in engines:
        engine.step(3)
    for key in ("held", "rho", "u"):
        np.testing.assert_array_equal(engines[1].state()[key], engines[0].state()[key])


def test_moving_tiles_default_where_they_run():
    assert Lbm(nu=0.04).tuning()["moving_tiles"] is True
    assert Lbm(nu=0.04).wall_reads(moving_walls=False) == "refetch"
    assert Lbm(nu=0.04).wall_reads(moving_walls=True, box_walls=63) == "select"
    assert Lbm(nu=0.04, streaming="push").wall_reads(False, 63) == "refetch"
    assert Lbm(nu=0.04, store="fp16s").wall_reads(moving_walls=True) == "select"
    for store in ("fp32", "fp16s"):
        aa = Lbm(nu=0.04, store=store, streaming="aa")
        assert (aa.wall_reads(moving_walls=False), aa.wall_reads(True)) == ("select", "refetch")
    assert Lbm(nu=0.04, streaming="aa").wall_reads(False, double=True) == "refetch"
    assert Lbm(nu=0.04, store="fp16s", storage="sparse").wall_reads(False) == "refetch"
    assert Lbm(nu=0.04, storage="sparse").tuning()["moving_tiles"] is False
    assert Lbm(nu=0.04, cuda_options={"propagation": "shared"}).tuning()["moving_tiles"] is False


@needs_gxx
def test_block_defaults_and_narrow_boxes(host_gpu):
    """256 threads for dense fp32 pull and AA, 128 elsewhere; a box narrower than the block
    launches whole warps over its width only (the kernel's bound stays)."""
    assert Lbm(nu=0.04).tuning(np.float32)["block"] == 256
    assert Lbm(nu=0.04).tuning(np.float64)["block"] == 128
    assert Lbm(nu=0.04, store="fp16s").tuning(np.float32)["block"] == 128
    assert Lbm(nu=0.04, streaming="aa").tuning(np.float32)["block"] == 256
    assert Lbm(nu=0.04, streaming="aa", store="fp16s").tuning(np.float32)["block"] == 128
    assert Lbm(nu=0.04, streaming="push").tuning(np.float32)["block"] == 128
    lattice, tags = _tags("walled")  # nx = 37
    engine = Lbm(nu=0.04).create(lattice, tags, host_gpu, np.dtype(np.float32))
    assert engine.block == 64 and "__launch_bounds__(256)" in engine.source

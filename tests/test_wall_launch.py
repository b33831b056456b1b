"""``cuda_options wall_launch='split'``: a bulk kernel with no wall code that skips flagged
tiles, then a kernel over the list of flagged tiles. Each node is still updated once by the
same arithmetic, so the state is bit-identical to the fused kernel's (and equal to the NumPy
reference to rounding, 1e-13 relative in fp64 as in tests/test_dense_host_engine.py).

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


@needs_gxx
@pytest.mark.parametrize(("geometry", "scheme"), [
    ("walled", "pull"), ("walled", "push"), ("walled", "aa"), ("zou-he", "pull"),
    ("zou-he", "aa")])
def test_split_wall_launch_is_bit_identical_to_fused(host_gpu, geometry, scheme):
    lattice, tags = _tags(geometry)
    fused = _engine(host_gpu, lattice, tags, scheme, {"block": 64})
    split = _engine(host_gpu, lattice, tags, scheme, {"block": 64, "wall_launch": "split"})
    assert int(split.n_wall_tiles) > 0
    if geometry == "walled":  # both kernels have work (the small open channel: walls only)
        assert int(split.n_wall_tiles) < split.tile_flags.size
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
def test_gpu_split_wall_launch_is_bit_identical_to_fused(scheme, dtype):
    lattice, tags = _tags("walled")
    gpu = select_backend("cuda")
    fused, split = (_engine(gpu, lattice, tags, scheme, {"wall_launch": w}, dtype)
                    for w in ("fused", "split"))
    for engine in (fused, split):
        engine.poison()
        engine.step(39)  # a captured graph
        engine.step(1)
    np.testing.assert_array_equal(split.state()["held"], fused.state()["held"])
    np.testing.assert_array_equal(split.state()["rho"], fused.state()["rho"])


def test_split_wall_launch_refusals():
    lattice = LATTICES["D3Q19"]
    with pytest.raises(ValueError, match="propagation 'direct'"):
        Lbm(nu=0.04, cuda_options={"wall_launch": "split", "propagation": "shuffle"}
            ).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="dense storage"):
        Lbm(nu=0.04, storage="sparse", cuda_options={"wall_launch": "split"}
            ).kernel_source(lattice, np.float32)
    with pytest.raises(ValueError, match="wall_launch"):
        Lbm(nu=0.04, cuda_options={"wall_launch": "apart"}).kernel_source(lattice, np.float32)


def test_bench_sweeps_split_launch_for_dense_direct_lbm_only():
    from thelma_py.tools.bench import BenchConfig, _wanted, compute_params

    assert _wanted(BenchConfig(streaming="aa", case="cavity", wall_launch="split"), 0.3)
    assert not _wanted(BenchConfig(wall_launch="split", propagation="shuffle"), 0.3)
    assert not _wanted(BenchConfig(compute="lwacm", wall_launch="split"), 0.3)
    cfg = BenchConfig(case="cavity", wall_launch="split")
    assert "split" in cfg.label
    assert compute_params(cfg).cuda_options["wall_launch"] == "split"

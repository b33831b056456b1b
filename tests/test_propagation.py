"""Propagation variants of the dense pull and push kernels (shared memory, warp shuffles;
:mod:`thelma_py.modules.compute.lbm.propagation`): the same values reach the same places as the
direct kernels, so the state after a run is bit-identical to the direct kernel's, and equal to
the NumPy reference (an independent implementation: array rolls and masked bounce-back) to
rounding (1e-13 relative in fp64, as in tests/test_dense_host_engine.py).

On the CPU the kernels run behind tests/host_cupy.py, which emulates ``__syncthreads`` and
``__shfl_*_sync`` by running each block twice (see its docstring); the geometry has a moving lid,
a moving sphere, periodic x of 37 nodes (ragged tiles, a partial block, the x wrap inside a
warp) and blocks of 32 and 64 threads (block and warp edges inside the box).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, random_state, relative_l2, walled_geometry
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")


def _engine(backend, lattice, tags, scheme, options, dtype=np.float64):
    params = Lbm(nu=0.04, collision="trt", streaming=scheme, force=(2e-5, -1e-5, 1e-5),
                 cuda_options=options)
    engine = params.create(lattice, tags, backend, np.dtype(dtype))
    engine.load_state({"f": random_state(lattice, tags.tags.shape, dtype)})
    return engine


@needs_gxx
@pytest.mark.parametrize("scheme", ["pull", "push"])
@pytest.mark.parametrize("propagation", ["shared", "shuffle"])
@pytest.mark.parametrize("block", [32, 64])
def test_propagation_variant_is_bit_identical_to_direct(host_gpu, scheme, propagation, block):
    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)
    direct = _engine(host_gpu, lattice, tags, scheme, {"block": block})
    moved = _engine(host_gpu, lattice, tags, scheme,
                    {"block": block, "propagation": propagation})
    assert "__shfl_" in moved.source or "__syncthreads" in moved.source
    moved.poison()  # a population it fails to write stays NaN
    direct.poison()
    cpu = _engine(select_backend("cpu"), lattice, tags, scheme, {})
    for steps in (5, 4):  # the macro kernel on the last step of each call
        for engine in (direct, moved, cpu):
            engine.step(steps)
        np.testing.assert_array_equal(moved.state()["held"], direct.state()["held"])
        np.testing.assert_array_equal(moved.state()["rho"], direct.state()["rho"])
        np.testing.assert_array_equal(moved.state()["u"], direct.state()["u"])
    fluid = tags.fluid
    assert relative_l2(moved.state()["f"][:, fluid], cpu.f[:, fluid]) < 1e-13


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scheme", ["pull", "push"])
def test_gpu_propagation_variants_are_bit_identical_to_direct(scheme, dtype):
    """On the GPU: 40 steps (a captured graph and single launches) of every variant, blocks of
    32 and 64, hold the same bits as direct; direct matches NumPy (tests/lbm_setups.TOLERANCE:
    fused multiply-adds only)."""
    from tests.lbm_setups import TOLERANCE

    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)
    gpu = select_backend("cuda")
    cpu = _engine(select_backend("cpu"), lattice, tags, scheme, {}, dtype)
    cpu.step(40)
    for block in (32, 64):
        engines = {p: _engine(gpu, lattice, tags, scheme, {"block": block, "propagation": p},
                              dtype) for p in ("direct", "shared", "shuffle")}
        for engine in engines.values():
            engine.poison()
            engine.step(39)
            engine.step(1)
        held = {p: e.state()["held"] for p, e in engines.items()}
        np.testing.assert_array_equal(held["shared"], held["direct"])
        np.testing.assert_array_equal(held["shuffle"], held["direct"])
        f = engines["direct"].state()["f"]
        fluid = tags.fluid
        assert relative_l2(f[:, fluid], cpu.f[:, fluid]) < TOLERANCE[dtype]


@pytest.mark.parametrize(("options", "scheme", "message"), [
    ({"propagation": "warp"}, "pull", "propagation"),
    ({"propagation": "shared"}, "aa", "two buffers")])
def test_bad_propagation_is_refused(options, scheme, message):
    lattice = LATTICES["D3Q19"]
    with pytest.raises(ValueError, match=message):
        Lbm(nu=0.04, streaming=scheme, cuda_options=options).kernel_source(lattice, np.float32)


def propagation_source(scheme, real, propagation):
    return Lbm(nu=0.04, streaming=scheme, cuda_options={
        "propagation": propagation, "block": 256}).kernel_source(
        LATTICES["D3Q19"], np.float32 if real == "float" else np.float64)


@pytest.mark.nvcc(sources=lambda real, propagation: [
    propagation_source(scheme, real, propagation) for scheme in ("pull", "push")])
@pytest.mark.parametrize("real", ["float", "double"])
@pytest.mark.parametrize("propagation", ["shared", "shuffle"])
def test_propagation_kernels_compile_with_nvcc(tmp_path, real, propagation):
    """Pull and push with moving walls, D3Q19, for sm_90 (the H100)."""
    from tests.nvcc import compile_cubin

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    for scheme in ("pull", "push"):
        source = propagation_source(scheme, real, propagation)
        result = compile_cubin(source, tmp_path, f"{scheme}_{propagation}_{real}")
        assert result.returncode == 0, result.stderr[-3000:]


def test_bench_sweeps_propagation_for_dense_pull_and_push_only():
    from thelma_py.tools.bench import BenchConfig, _wanted, compute_params

    assert _wanted(BenchConfig(streaming="push", propagation="shuffle"), 0.3)
    assert not _wanted(BenchConfig(streaming="aa", propagation="shared"), 0.3)
    assert not _wanted(BenchConfig(storage="sparse", propagation="shared"), 0.3)
    cfg = BenchConfig(propagation="shared", block=64)
    assert "shared" in cfg.label
    assert compute_params(cfg).cuda_options["propagation"] == "shared"

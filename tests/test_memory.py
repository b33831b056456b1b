"""Memory estimate before any large allocation: a domain that cannot fit is refused at once,
with what it needs and the largest domain of its proportions that fits (host and GPU)."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
import pytest

import thelma_py as tp
from tests.test_cli import thelma
from tests.test_cli_input import CAVITY, one_line_error
from thelma_py import memory
from thelma_py.backend import Backend
from thelma_py.lattice import lattice_by_name


def fake_gpu(free: int) -> Backend:
    """A CUDA backend whose device reports ``free`` bytes free (no GPU needed)."""
    runtime = SimpleNamespace(memGetInfo=lambda: (free, 2 * free))
    return Backend("cuda", SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))


def test_a_huge_cavity_is_refused_within_seconds_with_its_memory(tmp_path):
    start = time.perf_counter()
    result = thelma("run", CAVITY, "--set", "n=100000", "--device", "cpu",
                    "--out", str(tmp_path / "out"))
    assert time.perf_counter() - start < 5
    line = one_line_error(result)
    assert "MemoryError: a 100000 x 100000 domain (10,000,000,000 nodes) needs at least" in line
    assert "of host memory" in line and "the largest domain of these proportions" in line
    assert not (tmp_path / "out").exists()


def test_the_host_estimate_names_the_largest_domain_that_fits(monkeypatch):
    monkeypatch.setattr(memory, "host_available", lambda: 2**30)
    compute = tp.plugin("compute", "lbm", nu=0.05)
    d3q19 = lattice_by_name("D3Q19")
    with pytest.raises(MemoryError) as error:
        tp.compose("D3Q19", tp.geometry.periodic_box((400, 200, 200)), compute, device="cpu")
    # tags 4, initial fields 4 x 8, populations 2 x 19 x 8 (the tags are the solver's)
    per_node = 4 + 32 + 2 * 19 * 8
    assert f"({per_node} B per node: tags 4, initial fields 32, compute state 304)" in str(
        error.value)
    largest = memory.largest_fitting((400, 200, 200), per_node, memory.MARGIN * 2**30)
    assert math.prod(largest) * per_node <= memory.MARGIN * 2**30
    assert math.prod((largest[0] + 2, largest[1] + 1, largest[2] + 1)) * per_node > 2**30 * 0.95
    assert f"about {largest[0]} x {largest[1]} x {largest[2]}" in str(error.value)
    assert memory.check_fits(d3q19, (20, 20, 20), compute, tp.backend.select_backend("cpu"),
                             np.float64).host["compute state"] == 304


@pytest.mark.parametrize(("compute", "params", "per_node"), [
    ("lbm", {}, (2 * 19 + 1 + 3) * 4 + 4),
    ("lbm", {"streaming": "aa"}, (19 + 1 + 3) * 4 + 4),
    ("lwacm", {}, (2 * 19 + 3) * 4 + 4),
    ("lwacm-fused", {}, 8 * 4 + 4),
])
def test_the_gpu_estimate_refuses_what_the_free_device_memory_cannot_hold(compute, params,
                                                                          per_node):
    plugin = tp.plugin("compute", compute, nu=0.05, **params)
    lattice, gpu = lattice_by_name("D3Q19"), fake_gpu(free=2**30)
    assert plugin.memory_bytes_per_node(lattice, np.float32, gpu) == per_node
    with pytest.raises(MemoryError, match=f"of GPU memory \\({per_node} B per node") as error:
        memory.check_fits(lattice, (512, 512, 512), plugin, gpu, np.float32)
    side = memory.largest_fitting((512,) * 3, per_node, memory.MARGIN * 2**30)[0]
    assert f"about {side} x {side} x {side}" in str(error.value)
    assert memory.check_fits(lattice, (64, 64, 64), plugin, gpu, np.float32).device


@pytest.mark.parametrize("compute", ["lbm", "lwacm", "lwacm-fused"])
def test_the_plugin_estimate_is_what_the_engine_holds(compute):
    solver = tp.compose("D2Q9", tp.geometry.cavity((6, 6), lid_velocity=(0.05, 0.0)),
                        tp.plugin("compute", compute, nu=0.05), device="cpu",
                        precision="float32")
    engine = solver.engine
    assert engine.memory_bytes_per_node == solver.compute.memory_bytes_per_node(
        solver.lattice, np.float32, solver.backend)


def test_sparse_storage_counts_only_the_tags_before_they_are_built():
    sparse = tp.plugin("compute", "lbm", nu=0.05, storage="sparse")
    d3q19 = lattice_by_name("D3Q19")
    assert sparse.memory_bytes_per_node(d3q19, np.float32, fake_gpu(2**30)) is None
    estimate = memory.check_fits(d3q19, (64,) * 3, sparse, fake_gpu(2**30), np.float32)
    assert estimate.device == {} and set(estimate.host) == {"tags", "initial fields"}

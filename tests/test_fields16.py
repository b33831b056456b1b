"""ρ and u of 16-bit states in one kernel (modules/compute/lbm/fields16.py): pull, and AA after
an even step.

The kernel must give the bits of the per-population sums it replaces (``CudaLbm._fields_from``,
which probes and forces still use at a few nodes), and the moments of the stored state, which
``canonical()`` decodes by another path (``layouts.from_scheme``) and which are summed here in
float64. Run on the CPU through the host stand-in of CuPy (g++) and, marked gpu, on a GPU;
the source also compiles with nvcc.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, random_state, walled_geometry
from tests.nvcc import assert_all_compile
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.fields16 import fields_source, held_slots

CASES = [("D3Q19", "fp16s", "pull"), ("D3Q27", "fp16c", "pull"), ("D2Q9", "fp16s", "pull"),
         ("D3Q19", "fp16c", "aa"), ("D3Q27", "fp16s", "aa")]


def assert_kernel_fields_are_the_population_sums(backend, lattice_name: str, store: str,
                                                 streaming: str, steps: int = 4):
    """After ``steps`` steps (even: each node holds its own populations, in AA reversed)."""
    lattice = LATTICES[lattice_name]
    tags = walled_geometry(lattice).evaluate(lattice)
    force = (2e-5, -1e-5, 1e-5)[:lattice.d]
    params = Lbm(nu=0.04, collision="trt", store=store, force=force, streaming=streaming)
    engine = params.create(lattice, tags, backend, np.dtype(np.float32))
    engine.load_state({"f": random_state(lattice, tags.tags.shape, np.float32, seed=3)})
    engine.step(steps)
    rho, u = (backend.to_host(a) for a in engine.macroscopic())
    assert len(engine._fields_modules) == (steps % 2 == 0 or streaming == "pull")
    old_rho, old_u = (backend.to_host(a) for a in engine._fields_from(
        engine._canonical_population, engine.shape, engine.solid_index))
    np.testing.assert_array_equal(rho, old_rho)
    np.testing.assert_array_equal(u, old_u)
    canonical = backend.to_host(engine.canonical()).astype(np.float64)
    rho_ref = canonical.sum(axis=0)
    u_ref = np.tensordot(lattice.c.T.astype(np.float64), canonical, axes=1) / rho_ref
    u_ref -= 0.5 * np.asarray(force).reshape(-1, *[1] * lattice.d)
    u_ref[:, tags.solid] = 0
    # float32 sums of Q values near w_i against float64: a few ulps of ρ ≈ 1; a wrong weight,
    # sign or population shows as 1e-3 or more
    assert np.abs(rho - rho_ref).max() < 2e-6
    assert np.abs(u - u_ref).max() < 2e-6
    assert (u[:, tags.solid] == 0).all()


@pytest.mark.slow  # compiles the kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "store", "streaming"), CASES)
def test_host_fields_kernel_gives_the_bits_of_the_population_sums(host_gpu, lattice_name,
                                                                   store, streaming):
    assert_kernel_fields_are_the_population_sums(host_gpu, lattice_name, store, streaming)


@pytest.mark.slow  # compiles the kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_in_place_states_after_an_odd_step_keep_the_population_sums(host_gpu):
    """AA after an odd step holds f*_i(x) at node x + c_i: the fields come from the
    per-population path (no kernel), right against the moments of ``canonical()``."""
    assert_kernel_fields_are_the_population_sums(host_gpu, "D3Q19", "fp16s", "aa", steps=3)


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "store", "streaming"), CASES)
def test_gpu_fields_kernel_gives_the_bits_of_the_population_sums(lattice_name, store,
                                                                  streaming):
    assert_kernel_fields_are_the_population_sums(select_backend("cuda"), lattice_name, store,
                                                 streaming)


def test_fields_source_has_each_population_once_with_its_exact_weight():
    lattice = LATTICES["D3Q27"]
    source = fields_source(lattice, "fp16s")
    for i, w in enumerate(lattice.w):
        assert source.count(f"held[{i}LL * n + x]") == 1
        assert float.fromhex(source.split(f"held[{i}LL * n + x]) + ")[1].split("f;")[0]) \
            == float(np.float32(w))
    assert source.count("u0 += f") == source.count("u0 -= f") == 9


def test_held_slots_follow_the_layouts():
    """Pull: slot i; AA after an even step: slot ī (the population that streams back); push and
    AA after an odd step: at another node, no slot."""
    lattice = LATTICES["D3Q19"]
    assert held_slots(lattice, "pull", "post-odd") == tuple(range(19))
    slots = held_slots(lattice, "aa", "post-even")
    for i, j in enumerate(slots):
        assert (lattice.c[j] == -lattice.c[i]).all()
    assert held_slots(lattice, "aa", "post-odd") is None
    assert held_slots(lattice, "push", "post-even") is None


def nvcc_sources() -> list[str]:
    return [fields_source(LATTICES[name], store,
                          held_slots(LATTICES[name], streaming, "post-even"))
            for name, store, streaming in CASES]


@pytest.mark.slow
@pytest.mark.nvcc(sources=nvcc_sources)
def test_fields_kernels_compile_with_nvcc(tmp_path):
    assert_all_compile(nvcc_sources(), tmp_path, "fields16")


@pytest.mark.slow  # compiles the step kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_states_too_large_for_32_bit_node_counts_keep_the_population_sums(host_gpu,
                                                                          monkeypatch):
    """Past :data:`MAX_FIELDS_NODES` the engine sums a population at a time instead of
    launching the kernel (which counts nodes in int), with the same values."""
    from thelma_py.modules.compute.lbm import cuda

    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)
    engine = Lbm(nu=0.04, store="fp16s").create(lattice, tags, host_gpu, np.dtype(np.float32))
    engine.load_state({"f": random_state(lattice, tags.tags.shape, np.float32, seed=5)})
    engine.step(2)
    rho = host_gpu.to_host(engine.macroscopic()[0])
    engine._fields = None
    monkeypatch.setattr(cuda, "MAX_FIELDS_NODES", engine.nodes)
    monkeypatch.setattr(cuda, "fields_from_codes", lambda *a: pytest.fail("kernel launched"))
    np.testing.assert_array_equal(host_gpu.to_host(engine.macroscopic()[0]), rho)

"""ρ and u of 16-bit states in one kernel (modules/compute/lbm/fields16.py): pull, AA and
push.

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
from thelma_py.geometry import Geometry, Sphere
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.fields16 import fields_source, held_slots, streamed_source

CASES = [("D3Q19", "fp16s", "pull"), ("D3Q27", "fp16c", "pull"), ("D2Q9", "fp16s", "pull"),
         ("D3Q19", "fp16c", "aa"), ("D3Q27", "fp16s", "aa")]
"""Moving walls (:func:`walled_geometry`): the kernel where each node holds its own
populations (pull, AA after even steps)."""
STREAMED = [("D3Q19", "fp16s", "push", "resting", 4), ("D3Q27", "fp16c", "aa", "resting", 3),
            ("D2Q9", "fp16s", "push", "resting", 3), ("D2Q9", "fp16c", "aa", "closed", 5),
            ("D3Q19", "fp16c", "aa", "closed", 3), ("D3Q27", "fp16s", "push", "periodic", 2)]
"""Walls at rest, populations streamed to the neighbours (push; AA after odd steps): tags
stored (a body), computed in clean tiles (a closed box) and none (a periodic box)."""


def resting_geometry(lattice, kind: str) -> Geometry:
    """'resting': periodic along x, walls at rest beyond the other faces and a solid sphere
    (disc); 'closed': walls at rest on every face, no body; 'periodic': no wall. Odd x sizes
    (ragged tiles)."""
    shape = (37, 24) if lattice.d == 2 else (37, 14, 12)
    periodic = {"resting": (True, False, False), "closed": (False,) * 3,
                "periodic": (True,) * 3}[kind][:lattice.d]
    geo = Geometry(shape, periodic=periodic)
    if kind == "resting":
        geo.wall(Sphere((12.3, 10.7) if lattice.d == 2 else (12.3, 6.7, 5.2), 3.6))
    return geo


def assert_kernel_fields_are_the_population_sums(backend, lattice_name: str, store: str,
                                                 streaming: str, steps: int = 4,
                                                 geometry: str = "moving"):
    """After ``steps`` steps on ``geometry`` (:func:`walled_geometry` for 'moving', else
    :func:`resting_geometry`): the kernel's fields are the bits of the per-population sums
    (where populations streamed past moving walls, those sums to an ulp of Ladd's term) and
    the float64 moments of ``canonical()`` to rounding."""
    lattice = LATTICES[lattice_name]
    geo = walled_geometry(lattice) if geometry == "moving" else resting_geometry(lattice, geometry)
    tags = geo.evaluate(lattice)
    force = (2e-5, -1e-5, 1e-5)[:lattice.d]
    params = Lbm(nu=0.04, collision="trt", store=store, force=force, streaming=streaming)
    engine = params.create(lattice, tags, backend, np.dtype(np.float32))
    engine.load_state({"f": random_state(lattice, tags.tags.shape, np.float32, seed=3)})
    engine.step(steps)
    rho, u = (backend.to_host(a) for a in engine.macroscopic())
    streamed = streaming == "push" or (streaming == "aa" and steps % 2 == 1)
    assert len(engine._fields_kernels) == 1
    old_rho, old_u = (backend.to_host(a) for a in engine._fields_from(
        engine._canonical_population, engine.shape, engine.solid_index))
    if streamed and geometry == "moving":
        # the kernel takes off Ladd's term as the step kernel computed it, in float32 from the
        # wall's row; the sums take off the host's float64 term rounded to float32. They part
        # by an ulp of the term (|term| < 0.02: ~2e-9) in ρ and j; a term left out or of the
        # wrong sign moves them by ~1e-2 at the links into the lid and the sphere
        np.testing.assert_allclose(rho, old_rho, rtol=0, atol=2e-8)
        np.testing.assert_allclose(u, old_u, rtol=0, atol=2e-8)
    else:
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
    return engine


@pytest.mark.slow  # compiles the kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "store", "streaming"), CASES)
def test_host_fields_kernel_gives_the_bits_of_the_population_sums(host_gpu, lattice_name,
                                                                   store, streaming):
    assert_kernel_fields_are_the_population_sums(host_gpu, lattice_name, store, streaming)


@pytest.mark.slow  # compiles the kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "store", "streaming", "geometry", "steps"), STREAMED)
def test_host_streamed_kernel_gives_the_bits_of_the_population_sums(host_gpu, lattice_name,
                                                                     store, streaming,
                                                                     geometry, steps):
    engine = assert_kernel_fields_are_the_population_sums(host_gpu, lattice_name, store,
                                                          streaming, steps, geometry)
    assert engine.tags_stored == (geometry == "resting")  # each way of reading the tags


@pytest.mark.slow  # compiles the kernels with g++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize("streaming", ["push", "aa"])
def test_host_streamed_kernel_takes_off_ladds_term_at_moving_walls(host_gpu, streaming):
    """Push, and AA after an odd step, past moving walls (Ladd's term at their links): the
    kernel's fields against ``canonical()`` (which unstreams with the host's term). Planted:
    the term added instead of taken off, or left out, fails both (ρ by ~1e-2)."""
    assert_kernel_fields_are_the_population_sums(host_gpu, "D3Q19", "fp16s", streaming, 3)


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "streaming", "steps"),
                         [("D3Q19", "push", 3), ("D3Q27", "aa", 3), ("D2Q9", "push", 2)])
def test_gpu_streamed_kernel_takes_off_ladds_term_at_moving_walls(lattice_name, streaming,
                                                                  steps):
    assert_kernel_fields_are_the_population_sums(select_backend("cuda"), lattice_name,
                                                 "fp16s", streaming, steps)


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "store", "streaming"), CASES)
def test_gpu_fields_kernel_gives_the_bits_of_the_population_sums(lattice_name, store,
                                                                  streaming):
    assert_kernel_fields_are_the_population_sums(select_backend("cuda"), lattice_name, store,
                                                 streaming)


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "store", "streaming", "geometry", "steps"), STREAMED)
def test_gpu_streamed_kernel_gives_the_bits_of_the_population_sums(lattice_name, store,
                                                                    streaming, geometry, steps):
    assert_kernel_fields_are_the_population_sums(select_backend("cuda"), lattice_name, store,
                                                 streaming, steps, geometry)


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
    """Every layout's kernel, over all nodes and at listed nodes (``points``)."""
    return [fields_source(LATTICES[name], store,
                          held_slots(LATTICES[name], streaming, "post-even"), points)
            for name, store, streaming in CASES for points in (False, True)] + [
        streamed_source(LATTICES[name], store, streaming, walls, points)
        for name, store, streaming, walls in (("D3Q19", "fp16s", "push", 0),
                                              ("D3Q27", "fp16c", "aa", 0b111111),
                                              ("D2Q9", "fp16s", "aa", 0b1111))
        for points in (False, True)] + [
        streamed_source(LATTICES[name], "fp16s", streaming, walls, points, moving=True)
        for name, streaming, walls in (("D3Q19", "push", 0b111100), ("D2Q9", "aa", 0))
        for points in (False, True)]


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

"""Generated sparse-storage CUDA source: deterministic, complete, compiled by the local nvcc."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.lbm_setups import COMBOS, LATTICES, OPEN_SETUPS, open_geometry
from tests.nvcc import compile_cubin
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.boundaries import rule
from thelma_py.modules.compute.lbm.sparse import SparseDomain
from thelma_py.modules.compute.lbm.sparse_cuda import open_arrays
from thelma_py.modules.compute.lbm.sparse_kernels import AA_KERNELS, KERNELS, OPEN_KERNELS
from thelma_py.tags import OPEN_KINDS


def source(lattice_name, collision, dtype, moving=True, force=None, boundaries=()):
    params = Lbm(nu=0.1, collision=collision, storage="sparse", force=force)
    return params.kernel_source(LATTICES[lattice_name], dtype, moving_walls=moving,
                                boundaries=boundaries)


def open_kinds(lattice_name, setup):
    lattice = LATTICES[lattice_name]
    return open_geometry(lattice, setup).evaluate(lattice).open_kinds


VARIANTS = [(lat, coll, dtype, moving) for lat, coll in COMBOS
            for dtype, moving in (("float32", True), ("float64", False))]


def test_source_is_deterministic_and_names_its_entries():
    first = source("D3Q19", "trt", "float32", boundaries=open_kinds("D3Q19", "neighbour"))
    assert first == source("D3Q19", "trt", "float32",
                           boundaries=open_kinds("D3Q19", "neighbour"))
    for name in (*KERNELS.values(), *OPEN_KERNELS.values()):
        assert re.search(rf'extern "C" __global__ void __launch_bounds__\(128\) {name}\(',
                         first), name
    plain = source("D3Q19", "trt", "float32")
    assert "lbm_sparse_open" not in plain and "__constant__" not in plain


def test_bounce_back_decoding_is_one_load_and_a_moving_wall_term():
    text = source("D2Q9", "bgk", "float64", moving=True)
    # two entry points (plain and macro), eight directions each
    assert text.count("const int j = nbr[") == 16
    assert "src[j >= 0 ? 1 * N + j : 2 * N + n]" in text  # D2Q9: c_2 = -c_1
    assert text.count("const int r = -1 - j;") == 16
    assert "const int r" not in source("D2Q9", "bgk", "float64", moving=False)


def test_sparse_aa_has_its_entries_and_refuses_rebuilt_nodes():
    params = Lbm(nu=0.1, storage="sparse", streaming="aa")
    text = params.kernel_source(LATTICES["D2Q9"], "float32")
    for name in AA_KERNELS.values():
        assert f" {name}(" in text
    assert "lbm_sparse_step(" not in text
    with pytest.raises(ValueError, match="in-place AA"):
        params.kernel_source(LATTICES["D2Q9"], "float32",
                             boundaries=open_kinds("D2Q9", "zou-he"))
    with pytest.raises(ValueError, match="pull"):
        Lbm(nu=0.1, storage="sparse", streaming="push").kernel_source(LATTICES["D2Q9"],
                                                                      "float32")


def test_open_arrays_cover_every_open_node_once():
    lattice = LATTICES["D3Q19"]
    tags = open_geometry(lattice, "neighbour").evaluate(lattice)
    dom = SparseDomain(lattice, tags)
    boundaries = tuple(sorted(tags.open_kinds))
    arrays = open_arrays(dom, lattice, np.float32, boundaries)
    kinds = tags.kind.reshape(-1)[dom.nodes]
    is_open = np.isin(kinds, [int(k) for k in OPEN_KINDS])
    assert arrays["count"] == is_open.sum()
    np.testing.assert_array_equal(np.sort(arrays["node"]), np.flatnonzero(is_open))
    for arm, (kind, _) in enumerate(boundaries):
        copies = (arrays["src"][:, arrays["arm"] == arm] >= 0).sum()
        assert (copies > 0) == rule(kind).neighbour, kind


def forced(lat, moving):
    return (1e-5,) + (0.0,) * (LATTICES[lat].d - 1) if moving else None


def aa_source(lat, coll, dtype, moving):
    params = Lbm(nu=0.1, collision=coll, storage="sparse", streaming="aa",
                 force=forced(lat, moving))
    return params.kernel_source(LATTICES[lat], dtype, moving_walls=moving)


def interpolated_source(lat):
    params = Lbm(nu=0.1, collision="trt", storage="sparse")
    return params.kernel_source(LATTICES[lat], "float32", boundaries=open_kinds(lat, "zou-he"),
                                interpolated=True)


def open_source(lat, setup):
    coll = "trt" if lat == "D3Q27" else "mrt"
    return source(lat, coll, "float64", boundaries=open_kinds(lat, setup))


@pytest.mark.nvcc(sources=lambda lat, coll, dtype, moving: source(lat, coll, dtype, moving,
                                                                  forced(lat, moving)))
@pytest.mark.slow
@pytest.mark.parametrize(("lat", "coll", "dtype", "moving"), VARIANTS)
def test_every_sparse_kernel_compiles_with_nvcc(tmp_path, lat, coll, dtype, moving):
    result = compile_cubin(source(lat, coll, dtype, moving, forced(lat, moving)), tmp_path,
                           "sparse")
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.nvcc(sources=aa_source)
@pytest.mark.slow
@pytest.mark.parametrize(("lat", "coll", "dtype", "moving"), VARIANTS[::2])
def test_every_sparse_aa_kernel_compiles_with_nvcc(tmp_path, lat, coll, dtype, moving):
    text = aa_source(lat, coll, dtype, moving)
    result = compile_cubin(text, tmp_path, "sparse_aa")
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.nvcc(sources=interpolated_source)
@pytest.mark.slow
@pytest.mark.parametrize("lat", ["D2Q9", "D3Q19", "D3Q27"])
def test_sparse_interpolated_kernels_compile_with_nvcc(tmp_path, lat):
    text = interpolated_source(lat)
    assert "// INTERPOLATED" in text
    result = compile_cubin(text, tmp_path, "sparse_curved")
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.nvcc(sources=open_source)
@pytest.mark.slow
@pytest.mark.parametrize("setup", OPEN_SETUPS)
@pytest.mark.parametrize("lat", ["D2Q9", "D3Q19", "D3Q27"])
def test_sparse_open_boundary_kernels_compile_with_nvcc(tmp_path, lat, setup):
    text = open_source(lat, setup)
    assert "lbm_sparse_open_macro" in text
    result = compile_cubin(text, tmp_path, "sparse_open")
    assert result.returncode == 0, result.stderr[-3000:]

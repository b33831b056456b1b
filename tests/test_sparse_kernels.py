"""Generated sparse-storage CUDA source: deterministic, complete, compiled by the local nvcc."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.lbm_setups import CONFIGS, LATTICES, OPEN_SETUPS, open_geometry, relative_l2
from tests.nvcc import compile_cubin
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.sparse import SparseDomain
from thelma_py.modules.compute.lbm.sparse_cuda import open_arrays
from thelma_py.modules.compute.lbm.sparse_kernels import KERNELS, OPEN_KERNELS


def source(lattice_name, collision, dtype, moving=True, force=None, boundaries=()):
    params = Lbm(nu=0.1, collision=collision, storage="sparse", force=force)
    return params.kernel_source(LATTICES[lattice_name], dtype, moving_walls=moving,
                                boundaries=boundaries)


def open_kinds(lattice_name, setup):
    lattice = LATTICES[lattice_name]
    return open_geometry(lattice, setup).evaluate(lattice).open_kinds


VARIANTS = [(lat, coll, dtype, moving) for (lat, coll) in CONFIGS
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


def test_sparse_refuses_in_place_streaming_at_generation():
    params = Lbm(nu=0.1, storage="sparse", streaming="aa")
    with pytest.raises(ValueError, match="pull"):
        params.kernel_source(LATTICES["D2Q9"], "float32")


def test_open_arrays_cover_every_open_node_once():
    lattice = LATTICES["D3Q19"]
    tags = open_geometry(lattice, "neighbour").evaluate(lattice)
    dom = SparseDomain(lattice, tags)
    boundaries = tuple(sorted(tags.open_kinds))
    arrays = open_arrays(dom, lattice, np.float32, boundaries)
    kinds = tags.kind.reshape(-1)[dom.nodes]
    is_open = (kinds >= 3) & (kinds <= 8)
    assert arrays["count"] == is_open.sum()
    np.testing.assert_array_equal(np.sort(arrays["node"]), np.flatnonzero(is_open))
    for arm, (kind, _) in enumerate(boundaries):
        copies = (arrays["src"][:, arrays["arm"] == arm] >= 0).sum()
        assert (copies > 0) == (kind in ("OUTFLOW", "FREE_SLIP")), kind


@pytest.mark.nvcc
@pytest.mark.parametrize(("lat", "coll", "dtype", "moving"), VARIANTS)
def test_every_sparse_kernel_compiles_with_nvcc(tmp_path, lat, coll, dtype, moving):
    force = (1e-5,) + (0.0,) * (LATTICES[lat].d - 1) if moving else None
    result = compile_cubin(source(lat, coll, dtype, moving, force), tmp_path, "sparse")
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.nvcc
@pytest.mark.parametrize("lat", ["D2Q9", "D3Q19", "D3Q27"])
def test_sparse_interpolated_kernels_compile_with_nvcc(tmp_path, lat):
    params = Lbm(nu=0.1, collision="trt", storage="sparse")
    text = params.kernel_source(LATTICES[lat], "float32", boundaries=open_kinds(lat, "zou-he"),
                                interpolated=True)
    assert "// INTERPOLATED" in text
    result = compile_cubin(text, tmp_path, "sparse_curved")
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.nvcc
@pytest.mark.parametrize("setup", OPEN_SETUPS)
@pytest.mark.parametrize("lat", ["D2Q9", "D3Q19", "D3Q27"])
def test_sparse_open_boundary_kernels_compile_with_nvcc(tmp_path, lat, setup):
    coll = "trt" if lat == "D3Q27" else "mrt"
    text = source(lat, coll, "float64", boundaries=open_kinds(lat, setup))
    assert "lbm_sparse_open_macro" in text
    result = compile_cubin(text, tmp_path, "sparse_open")
    assert result.returncode == 0, result.stderr[-3000:]


# -- the generated kernels run on the host -----------------------------------------------------
# Without a GPU, the generated source is compiled as C++ with the CUDA keywords defined away
# and every thread run in turn. Pull with two buffers has no ordering between threads, so this
# is the kernel's arithmetic and indexing exactly; it must equal the sparse NumPy engine.

HOST_PRELUDE = """
#include <cstddef>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
struct thread_index { unsigned x, y, z; };
static thread_index blockIdx, blockDim, threadIdx;
"""

HOST_DRIVER = """
template <typename K, typename... A> static void run(K kernel, int threads, A... args) {
    blockDim.x = 128;
    for (unsigned b = 0; b * 128 < (unsigned)threads; ++b)
        for (unsigned t = 0; t < 128; ++t) { blockIdx.x = b; threadIdx.x = t; kernel(args...); }
}
extern "C" void host_step(int store, const real_t* src, real_t* dst, const int* nbr,
                          const real_t* bc, real_t omega, real_t omega_minus, int n,
                          real_t* rho, real_t* u, int n_open, const int* node, const int* arm,
                          const real_t* values, const int* copy_src, const real_t* curved) {
    run(store ? lbm_sparse_step_macro : lbm_sparse_step, n, src, dst, nbr, bc, omega,
        omega_minus, n, rho, u);
    OPEN
}
"""


def host_library(text: str, folder, with_open: bool):
    import ctypes
    import shutil
    import subprocess

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not on PATH")
    launch = ("if (n_open) run(store ? lbm_sparse_open_macro : lbm_sparse_open, n_open, src, "
              "dst, nbr, bc, omega, omega_minus, n, rho, u, n_open, node, arm, values, "
              "copy_src, curved);" if with_open else "(void)n_open;")
    path = folder / "host.cpp"
    path.write_text(HOST_PRELUDE + text + HOST_DRIVER.replace("OPEN", launch))
    subprocess.run([gxx, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o",
                    str(folder / "host.so"), str(path)], check=True, capture_output=True)
    return ctypes.CDLL(str(folder / "host.so"))


@pytest.mark.parametrize(("lat", "coll", "geometry"), [
    ("D2Q9", "mrt", "walled"), ("D2Q9", "trt", "neighbour"), ("D2Q9", "bgk", "zou-he"),
    ("D3Q19", "trt", "porous"), ("D3Q19", "mrt", "equilibrium"), ("D3Q27", "bgk", "neighbour"),
    ("D2Q9", "trt", "curved"), ("D3Q19", "mrt", "curved")])
def test_generated_kernels_run_on_the_host_equal_numpy(tmp_path, lat, coll, geometry):
    import ctypes

    from tests.test_sparse import GEOMETRIES, dense_and_sparse

    lattice = LATTICES[lat]
    force = (2e-5, -1e-5, 1e-5)[: lattice.d] if coll == "trt" else None
    _, reference, tags = dense_and_sparse(lattice, GEOMETRIES[geometry](lattice),
                                          collision=coll, force=force)
    params = reference.params
    boundaries = tuple(sorted(tags.open_kinds))
    curved = bool(len(tags.curved_nodes))
    text = params.kernel_source(lattice, np.float64, moving_walls=True, boundaries=boundaries,
                                interpolated=curved)
    lib = host_library(text, tmp_path, bool(boundaries) or curved)
    dom = reference.domain
    opened = open_arrays(dom, lattice, np.float64, boundaries)
    arrays = [reference.f.copy(), np.empty_like(reference.f)]
    nbr = np.ascontiguousarray(dom.nbr)
    bc = np.ascontiguousarray(tags.bc_table.astype(np.float64).reshape(-1))
    rho = np.full(dom.count, np.nan)
    u = np.full((lattice.d, dom.count), np.nan)

    def ptr(a):
        return a.ctypes.data_as(ctypes.c_void_p)

    steps = 20
    for step in range(steps):
        src, dst = arrays[step % 2], arrays[1 - step % 2]
        dst.fill(np.nan)
        lib.host_step(ctypes.c_int(step == steps - 1), ptr(src), ptr(dst), ptr(nbr), ptr(bc),
                      ctypes.c_double(params.omega), ctypes.c_double(params.omega_minus),
                      ctypes.c_int(dom.count), ptr(rho), ptr(u), ctypes.c_int(opened["count"]),
                      ptr(opened["node"]), ptr(opened["arm"]), ptr(opened["values"]),
                      ptr(opened["src"]), ptr(opened["curved"]))
    reference.step(steps)
    f_host = arrays[steps % 2]
    assert np.isfinite(f_host).all()
    assert relative_l2(f_host, reference.f) < 1e-14
    rho_ref, u_ref = reference.fluid_macroscopic()
    assert relative_l2(rho, rho_ref) < 1e-14 and relative_l2(u, u_ref) < 1e-13

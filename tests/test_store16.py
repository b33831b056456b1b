"""16-bit population storage (thelma_py.store16, ``Lbm(store=...)``).

* The formats against independent references: IEEE binary16 against NumPy's float16 cast on
  millions of float32 bit patterns (subnormals, ties, overflow, ∞, NaN); the 4 + 11 bit format
  against the nearest code found by search in the exact float64 values of all 65,536 codes.
* The CUDA kernels with 16-bit storage, compiled for the host (tests/host_cupy.py), against the
  NumPy engine that rounds through the same format after each step.
* Physics: Poiseuille flow keeps second order with 16-bit storage; a lid-driven cavity stays
  within a stated distance of the fp32 run.
"""

from __future__ import annotations

import shutil

import attrs
import numpy as np
import pytest

from tests.lbm_setups import LATTICES, random_state, walled_geometry
from thelma_py.backend import select_backend
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.store16 import FORMATS, cuda_functions, decode, encode, round_trip

RNG = np.random.default_rng(7)
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, 1e30, -1e30, np.inf,
                    -np.inf, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14, 2.0**-13, 1.9995,
                    1.99951171875, 1.9998, 2.0, 1e-40, -1e-40, 0.1, -0.05], dtype=np.float32)


def samples() -> np.ndarray:
    """Random float32 bit patterns, small normal values (populations) and special values."""
    bits = RNG.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    small = (RNG.standard_normal(500_000) * 10.0 ** RNG.uniform(-8, 0, 500_000))
    return np.concatenate([bits.view(np.float32), small.astype(np.float32), SPECIAL])


def test_fp16s_is_ieee_half_round_to_nearest_even():
    x = samples()
    with np.errstate(over="ignore"):
        reference = x.astype(np.float16)
    codes = encode(FORMATS["fp16s"], x)
    nan = np.isnan(x)
    assert np.array_equal(codes[~nan], reference.view(np.uint16)[~nan])
    assert np.isnan(decode(FORMATS["fp16s"], codes[nan])).all()
    every = np.arange(65536, dtype=np.uint16)
    exact = every.view(np.float16).astype(np.float32)
    finite = ~np.isnan(exact)
    assert np.array_equal(decode(FORMATS["fp16s"], every)[finite].view(np.uint32),
                          exact[finite].view(np.uint32))


def test_fp16c_rounds_to_the_nearest_code_ties_to_even():
    fmt = FORMATS["fp16c"]
    every = np.arange(65536, dtype=np.uint16)
    exact = fmt.value(every)  # independent float64 decoding of every code
    finite = np.isfinite(exact)
    assert np.array_equal(decode(fmt, every)[finite].astype(np.float64), exact[finite])
    assert fmt.largest == 1.0 - 2.0**-12 and fmt.smallest_normal == 2.0**-14
    positive = np.flatnonzero(finite & (every < 0x8000))  # codes 0 .. largest, ascending
    values = exact[positive]
    assert np.all(np.diff(values) > 0)
    x = samples()
    x = x[np.isfinite(x)]
    a = np.abs(x.astype(np.float64))
    k = np.clip(np.searchsorted(values, a), 1, len(values) - 1)
    lo, hi = values[k - 1], values[k]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (positive[k] % 2 == 0))
    nearest = np.where(pick_hi, positive[k], positive[k - 1])
    # above the largest value: the overflow threshold is largest + half a step (→ ∞)
    half_step = 2.0 ** (fmt.exp_max - 1 - fmt.bias - fmt.man_bits - 1)
    nearest = np.where(a >= fmt.largest + half_step, fmt.inf_code, nearest)
    nearest = np.where(a <= values[0], 0, nearest) | np.where(np.signbit(x), 0x8000, 0)
    assert np.array_equal(encode(fmt, x), nearest.astype(np.uint16))
    assert np.isnan(decode(fmt, encode(fmt, np.array([np.nan], np.float32)))).all()


@pytest.mark.parametrize("store", ["fp16s", "fp16c"])
def test_generated_c_functions_equal_numpy(tmp_path, store):
    """The C text of :func:`cuda_functions` compiled for the host, on the same samples."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not on PATH")
    import ctypes
    import subprocess

    code = ("#include <algorithm>\nusing std::min;\n#define __device__\n"
            "#define __forceinline__ inline\n" + cuda_functions(FORMATS[store]) +
            'extern "C" void enc(const float* x, unsigned short* h, long n) '
            "{ for (long i = 0; i < n; ++i) h[i] = pop_encode(x[i]); }\n"
            'extern "C" void dec(const unsigned short* h, float* x, long n) '
            "{ for (long i = 0; i < n; ++i) x[i] = pop_decode(h[i]); }\n")
    (tmp_path / "f.cpp").write_text(code)
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(tmp_path / "f.so"),
                    str(tmp_path / "f.cpp")], check=True)
    lib = ctypes.CDLL(str(tmp_path / "f.so"))
    x = samples()
    h = np.empty(len(x), np.uint16)
    lib.enc(x.ctypes.data_as(ctypes.c_void_p), h.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_long(len(x)))
    assert np.array_equal(h, encode(FORMATS[store], x))
    every = np.arange(65536, dtype=np.uint16)
    back = np.empty(65536, np.float32)
    lib.dec(every.ctypes.data_as(ctypes.c_void_p), back.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_long(65536))
    assert np.array_equal(back.view(np.uint32), decode(FORMATS[store], every).view(np.uint32))


def test_store_needs_float32():
    lattice = LATTICES["D2Q9"]
    tags = walled_geometry(lattice).evaluate(lattice)
    cpu = select_backend("cpu")
    for storage in ("dense", "sparse"):
        with pytest.raises(ValueError, match="use precision float32"):
            Lbm(nu=0.04, store="fp16c", storage=storage).create(lattice, tags, cpu,
                                                                 np.dtype(np.float64))
    with pytest.raises(ValueError, match="store"):
        Lbm(nu=0.04, store="fp8")


def test_checkpoint_records_the_store_and_refuses_another():
    lattice = LATTICES["D2Q9"]
    tags = walled_geometry(lattice).evaluate(lattice)
    cpu = select_backend("cpu")
    make = {s: Lbm(nu=0.04, store=s).create(lattice, tags, cpu, np.dtype(np.float32))
            for s in ("fp32", "fp16s", "fp16c")}
    make["fp16c"].load_state({"f": random_state(lattice, tags.tags.shape, np.float32)})
    state = make["fp16c"].state()
    assert str(state["store"]) == "fp16c"
    with pytest.raises(ValueError, match="stores populations as fp16c, this run as fp16s"):
        make["fp16s"].load_state(state)
    with pytest.raises(ValueError, match="as fp32, this run as fp16c"):
        make["fp16c"].load_state(make["fp32"].state())
    make["fp16c"].load_state({"f": state["f"] + 1e-5})  # bare populations: rounded
    w = np.asarray(lattice.w, np.float32).reshape(-1, 1, 1)
    assert np.array_equal(make["fp16c"].f, round_trip("fp16c", state["f"] + 1e-5, w))
    make["fp32"].load_state({**state, "convert": True})  # explicit conversion
    assert np.array_equal(make["fp32"].f, state["f"])


K17 = {"name": "cumulant", "parametrized": True, "limiter": 0.01}
HOST_CASES = [("D2Q9", "bgk", "pull", "fp16s"), ("D2Q9", "trt", "pull", "fp16c"),
              ("D2Q9", "mrt", "push", "fp16c"), ("D2Q9", "bgk", "aa", "fp16s"),
              ("D3Q19", "bgk", "pull", "fp16c"), ("D3Q19", "trt", "aa", "fp16c"),
              ("D3Q19", "mrt", "push", "fp16s")]
OPEN_CASES = [("D2Q9", "trt", "pull", "fp16c", "zou-he"), ("D2Q9", "mrt", "push", "fp16s",
                                                            "neighbour"),
              ("D2Q9", "bgk", "aa", "fp16c", "equilibrium"), ("D2Q9", "trt", "pull", "fp16s",
                                                              "curved"),
              ("D3Q19", "mrt", "pull", "fp16c", "curved"), ("D3Q19", "bgk", "pull", "fp16s",
                                                           "neighbour"),
              # what the sphere at Re 10 000 runs: the parametrized cumulant with its limiter
              # past a curved body, and between characteristic faces
              ("D3Q27", K17, "pull", "fp16s", "curved"),
              ("D3Q27", K17, "pull", "fp16c", "characteristic")]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "collision", "scheme", "store"), HOST_CASES)
def test_host_cuda_16bit_equals_numpy(host_gpu, lattice_name, collision, scheme, store):
    """Walls at rest and moving (a lid, a moving sphere), TRT with a body force. Pull stores
    round(f*) as the reference does; push and AA store some populations after Ladd's term is
    added (round(f* + term) against round(f*) + term), and fp32 arithmetic on either side may
    differ by an ulp that flips a rounding: the bound is 3 steps of the format at the largest
    |f − w| (measured: pull bit for bit in D2Q9 and D3Q19, 99.85 % in D3Q27, whose C and
    NumPy fp32 arithmetic differ in a last bit now and then; push and AA at most 0.9 step
    after 7 and 13 steps, 47–84 % of values identical), against O(1e-2) for a wrong link."""
    assert_16bit_equals_numpy(host_gpu, lattice_name, collision, scheme, store, (7, 6))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "collision", "scheme", "store", "geometry"),
                         OPEN_CASES)
def test_host_cuda_16bit_open_boundaries_and_curved_bodies_equal_numpy(
        host_gpu, lattice_name, collision, scheme, store, geometry):
    """Open faces (Zou-He, equilibrium, outflow and free slip) and interpolated bodies read
    neighbour populations through the decode: the same bound. D3Q27's C and NumPy fp32
    arithmetic differ in a last bit now and then, and each flipped rounding spreads: after 13
    steps 97 % of the K17 cumulant's populations (72 % of BGK's) are identical and the largest
    difference is 0.65 of a step, so there only the bound is asserted."""
    exact = None if lattice_name == "D3Q27" else 0.995
    assert_16bit_equals_numpy(host_gpu, lattice_name, collision, scheme, store, (7, 6),
                              geometry=geometry, exact_fraction=exact)


STOCHASTIC_CASES = [("D2Q9", "bgk", "fp16s", "walled"), ("D2Q9", "trt", "fp16c", "walled"),
                    ("D3Q19", "mrt", "fp16s", "walled"), ("D3Q19", "bgk", "fp16c", "curved"),
                    ("D3Q27", "bgk", "fp16s", "characteristic")]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "collision", "store", "geometry"), STOCHASTIC_CASES)
def test_host_cuda_stochastic_rounding_equals_numpy(host_gpu, lattice_name, collision, store,
                                                    geometry):
    """Stochastic rounding (pull): the kernels hash the same random bits per node, population
    and step as the reference, so their codes agree as with rounding to nearest (fp16s with
    shifted populations on walled boxes; whole populations past curved bodies and open
    faces). Measured: bit for bit after 13 steps in every case, D3Q27 BGK between
    characteristic faces included (its fp32 arithmetic may differ from NumPy's in a last bit
    now and then, which flips a rounding: 99 % is asked). Planted, a seed one step ahead in the
    reference or the bits of population Q − 1 − i in the kernels fail every case (about half
    the values differ by a step)."""
    assert_16bit_equals_numpy(host_gpu, lattice_name, collision, "pull", store, (7, 6),
                              geometry=geometry, exact_fraction=0.99, rounding="stochastic")


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_host_cuda_stochastic_rounding_launches_without_graphs(host_gpu):
    """A run long enough for graph batches (small domains replay 32 captured steps) launches
    each step with its own seed: still bit for bit against the reference (a replayed graph
    would repeat its captured seeds; planted, half the values differ)."""
    from thelma_py.cuda_steps import GRAPH_STEPS

    assert_16bit_equals_numpy(host_gpu, "D2Q9", "bgk", "pull", "fp16s", (2 * GRAPH_STEPS + 3,),
                              exact_fraction=0.99, rounding="stochastic")


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "collision", "store", "geometry"), [
    ("D2Q9", "mrt", "fp16c", "characteristic"), ("D3Q19", "bgk", "fp16s", "walled"),
    ("D3Q27", K17, "fp16s", "curved")])
def test_gpu_stochastic_rounding_equals_numpy(lattice_name, collision, store, geometry):
    """Stochastic rounding on the GPU, 120 steps launched one by one (K17 13, as in the test
    above: its limiter amplifies a last-bit difference): within 8 steps of the format, the
    bound of the GPU cases rounding to nearest (fused multiply-adds flip a rounding now and
    then; a seed or population mixed up is a step in half the values from the first step,
    which the host test above catches)."""
    batches = (7, 6) if isinstance(collision, dict) else (73, 47)
    assert_16bit_equals_numpy(select_backend("cuda"), lattice_name, collision, "pull", store,
                              batches, exact_fraction=None, bound=8.0, geometry=geometry,
                              rounding="stochastic")


GPU_CASES = [(lat, coll, scheme, store) for lat, coll in (("D2Q9", "mrt"), ("D3Q19", "bgk"),
                                                          ("D3Q19", "trt"), ("D3Q27", "bgk"))
             for scheme in ("pull", "push", "aa") for store in ("fp16s", "fp16c")]


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "collision", "scheme", "store"), GPU_CASES)
def test_gpu_16bit_equals_numpy(lattice_name, collision, scheme, store):
    """The same on the GPU, 120 steps (graph batches included). Fused multiply-adds change
    fp32 results by an ulp, which flips a 16-bit rounding now and then, and each flip spreads
    to the neighbours over the steps: the bound is 8 steps of the format, no bit-for-bit
    fraction (measured on the host after 120 steps: at most 1.1 steps, 45–53 % identical in
    D3Q19 AA and D3Q27 pull; a wrong link or shift is O(1e-2), hundreds of steps)."""
    assert_16bit_equals_numpy(select_backend("cuda"), lattice_name, collision, scheme, store,
                              (73, 47), exact_fraction=None, bound=8.0)


SPARSE_CASES = [("D2Q9", "trt", "pull", "fp16c", "zou-he"), ("D2Q9", "bgk", "aa", "fp16s",
                                                             "walled"),
                ("D3Q19", "mrt", "pull", "fp16s", "curved"), ("D3Q19", "bgk", "aa", "fp16c",
                                                             "porous"),
                ("D3Q19", "trt", "pull", "fp16c", "neighbour")]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("lattice_name", "collision", "scheme", "store", "geometry"),
                         SPARSE_CASES)
def test_host_cuda_16bit_sparse_equals_numpy(host_gpu, lattice_name, collision, scheme, store,
                                             geometry):
    """Sparse storage (pull with open faces and curved bodies, AA): the same bound."""
    assert_16bit_equals_numpy(host_gpu, lattice_name, collision, scheme, store, (7, 6),
                              geometry=geometry, storage="sparse")


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "collision", "scheme", "store", "geometry"),
                         SPARSE_CASES)
def test_gpu_16bit_sparse_equals_numpy(lattice_name, collision, scheme, store, geometry):
    assert_16bit_equals_numpy(select_backend("cuda"), lattice_name, collision, scheme, store,
                              (73, 47), exact_fraction=None, bound=8.0, geometry=geometry,
                              storage="sparse")


@pytest.mark.gpu
@pytest.mark.parametrize(("lattice_name", "collision", "scheme", "store", "geometry"),
                         OPEN_CASES + [("D3Q19", "trt", "push", "fp16c", "zou-he")])
def test_gpu_16bit_open_boundaries_and_curved_bodies_equal_numpy(lattice_name, collision,
                                                                  scheme, store, geometry):
    """As on the host, 120 steps; the K17 cumulant 13. Its limiter's rate ω + (1 − ω) |C| /
    (λρ + |C|) changes by up to 1/λ = 100 per unit of C near C = 0, so on a random state it
    amplifies a last-bit difference: fp32 C against NumPy 1e-8 → 2e-5 in 120 steps, a flipped
    16-bit rounding to 200 steps of the format (host, measured; the plain cumulant stays at
    0.65). Over 13 steps both stay within 0.65 of a step on the host."""
    batches = (7, 6) if isinstance(collision, dict) else (73, 47)
    assert_16bit_equals_numpy(select_backend("cuda"), lattice_name, collision, scheme, store,
                              batches, exact_fraction=None, bound=8.0, geometry=geometry)


def assert_16bit_equals_numpy(backend, lattice_name, collision, scheme, store, batches,
                              exact_fraction: float | None = 0.995, geometry: str = "walled",
                              storage: str = "dense", bound: float = 3.0,
                              rounding: str = "nearest") -> None:
    """Both engines from one random state, ``batches`` of steps: every population within
    ``bound`` steps of the format (at the largest |f − w|) of the reference, and for pull at
    least ``exact_fraction`` of them bit for bit (None: not checked)."""
    from tests.test_sparse import GEOMETRIES

    lattice = LATTICES[lattice_name]
    tags = GEOMETRIES[geometry](lattice).evaluate(lattice)
    force = (2e-5, -1e-5, 1e-5)[: lattice.d] if collision == "trt" else None
    params = Lbm(nu=0.04, collision=collision, streaming=scheme, force=force, store=store,
                 storage=storage, rounding=rounding)
    f = random_state(lattice, tags.tags.shape, np.float32)
    cpu, gpu = (params.create(lattice, tags, b, np.dtype(np.float32))
                for b in (select_backend("cpu"), backend))
    for engine in (cpu, gpu):
        engine.load_state({"f": f})
    assert gpu.buffers[0].dtype == np.uint16
    gpu.poison()
    fluid = tags.fluid
    stored = slice(None) if storage == "sparse" else fluid  # sparse f is (Q, stored nodes)
    fmt = FORMATS[store]
    w = np.asarray(lattice.w, np.float32).reshape(-1, 1)
    for steps in batches:
        cpu.step(steps)
        gpu.step(steps)
        f_gpu, f_cpu = gpu.state()["f"][:, stored], cpu.f[:, stored]
        assert np.isfinite(f_gpu).all()
        step = float(np.abs(f_cpu - w).max()) * 2.0 ** -fmt.man_bits
        diff = float(np.abs(f_gpu - f_cpu).max())
        same = float(np.mean(f_gpu == f_cpu))
        assert diff <= bound * step, (diff, step, same)
        if scheme == "pull" and exact_fraction is not None:
            assert same > exact_fraction, (diff, step, same)
    rho_c, u_c = cpu.macroscopic()
    rho_g, u_g = (backend.to_host(a) for a in gpu.macroscopic())
    assert np.abs(rho_g[fluid] - rho_c[fluid]).max() < 1e-3
    assert np.abs(u_g[:, fluid] - u_c[:, fluid]).max() < 1e-3


def sparse_16bit_source(scheme):
    kinds = (("OUTFLOW", "+x"), ("VELOCITY", "-x")) if scheme == "pull" else ()
    return Lbm(nu=0.04, collision="trt", streaming=scheme, storage="sparse",
               store="fp16c").kernel_source(LATTICES["D3Q19"], np.float32, boundaries=kinds,
                                            interpolated=scheme == "pull")


@pytest.mark.nvcc(sources=sparse_16bit_source)
@pytest.mark.parametrize("scheme", ["pull", "aa"])
def test_16bit_sparse_kernels_compile_with_nvcc(tmp_path, scheme):
    """Sparse D3Q19 TRT with moving walls (pull: open faces and interpolated links)."""
    from tests.nvcc import compile_cubin

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    source = sparse_16bit_source(scheme)
    assert "pop_t" in source
    result = compile_cubin(source, tmp_path, "k")
    assert result.returncode == 0, result.stderr[-3000:]


def dense_16bit_source(scheme, store):
    kinds = (("OUTFLOW", "+x"), ("PRESSURE", "+y"), ("VELOCITY", "-x"))
    return Lbm(nu=0.04, streaming=scheme, store=store, force=(1e-5, 0.0, 0.0)).kernel_source(
        LATTICES["D3Q19"], np.float32, boundaries=kinds if scheme != "aa" else (),
        interpolated=scheme == "pull")


@pytest.mark.nvcc(sources=lambda scheme, store: [(dense_16bit_source(scheme, store),
                                                  ["--resource-usage"])])
@pytest.mark.parametrize("scheme", ["pull", "push", "aa"])
@pytest.mark.parametrize("store", ["fp16s", "fp16c"])
def test_16bit_kernels_compile_with_nvcc(tmp_path, scheme, store):
    """D3Q19 BGK with moving walls, a force, Zou-He faces (pull, push) and interpolated links
    (pull): nvcc compiles the 16-bit kernels (the PTX
    conversions of fp16s included). Registers (sm_90, measured): 64–72 against 56–64 in fp32;
    ``cuda_options={"min_blocks": 8}`` caps them at 64 where occupancy matters."""
    import re

    from tests.nvcc import compile_cubin

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    source = dense_16bit_source(scheme, store)
    assert "pop_t" in source and ("cvt.rn.f16.f32" in source) == (store == "fp16s")
    result = compile_cubin(source, tmp_path, "k", ["--resource-usage"])
    assert result.returncode == 0, result.stderr[-3000:]
    used = [int(n) for n in re.findall(r"Used (\d+) registers", result.stdout + result.stderr)]
    assert used and max(used) <= 80, used


def stochastic_16bit_source(store, lattice_name="D3Q19"):
    kinds = (("OUTFLOW", "+x"), ("PRESSURE", "+y"), ("VELOCITY", "-x"))
    return Lbm(nu=0.04, store=store, rounding="stochastic", force=(1e-5, 0.0, 0.0)[
        :LATTICES[lattice_name].d]).kernel_source(LATTICES[lattice_name], np.float32,
                                                   boundaries=kinds, interpolated=True)


@pytest.mark.nvcc(sources=lambda store: [(stochastic_16bit_source(store), ["--resource-usage"])])
@pytest.mark.parametrize("store", ["fp16s", "fp16c"])
def test_stochastic_16bit_kernels_compile_with_nvcc(tmp_path, store):
    """D3Q19 pull with stochastic rounding, moving walls, a force, open faces and interpolated
    links: nvcc compiles it (sm_90). Registers: at most 80, as the kernels rounding to nearest
    (measured with the local nvcc: 48–56, against 56–64 rounding to nearest)."""
    import re

    from tests.nvcc import compile_cubin

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    source = stochastic_16bit_source(store)
    assert "pop_encode_sr(" in source and "mix32(" in source
    result = compile_cubin(source, tmp_path, "k", ["--resource-usage"])
    assert result.returncode == 0, result.stderr[-3000:]
    used = [int(n) for n in re.findall(r"Used (\d+) registers", result.stdout + result.stderr)]
    assert used and max(used) <= 80, used


def test_stochastic_rounding_says_what_it_needs():
    """Bad input: a one-line error that names what is allowed."""
    with pytest.raises(ValueError, match="for 16-bit populations; give store='fp16s' or"):
        Lbm(nu=0.04, rounding="stochastic")
    for wrong in ({"streaming": "aa"}, {"streaming": "push"}, {"storage": "sparse"}):
        with pytest.raises(ValueError, match="runs with streaming='pull' and storage='dense'"):
            Lbm(nu=0.04, store="fp16s", rounding="stochastic", **wrong)
    with pytest.raises(ValueError, match="'rounding' must be in"):
        Lbm(nu=0.04, store="fp16s", rounding="up")


def test_seed_words_are_the_hashes_of_the_step_seed():
    """The launch's seed words (kernel arguments since run 68 of NOTES.md) are mix32(P seed + k)
    as the kernels once hashed them, P = ⌈Q/2⌉, the seed modulo 2³¹; the kernels name them
    in order and a stochastic kernel without them is refused."""
    from thelma_py.modules.compute.lbm.kernels import step_args
    from thelma_py.store16 import mix32, seed_arguments, seed_launch_values, seed_words

    for seed, values in ((0, 19), (12345, 27), (2**31 + 7, 9), (2**31 - 1, 4)):
        pairs = -(-values // 2)
        assert seed_words(seed, values) == [
            int(mix32(np.uint64((pairs * (seed % 2**31) + k) % 2**32))) for k in range(pairs)]
        assert seed_launch_values(seed, values) == dict(
            zip(seed_arguments(values), seed_words(seed, values), strict=True))
    assert seed_arguments(19) == [f"sr_seed{k}" for k in range(10)]
    names = [a.name for a in step_args("pull", "fp16s", (), "stochastic", 19).args]
    assert [n for n in names if n.startswith("sr_seed")] == seed_arguments(19)
    with pytest.raises(ValueError, match="stochastic rounding needs q"):
        step_args("pull", "fp16s", (), "stochastic")


def test_bench_sweeps_stochastic_rounding_of_dense_pull_populations():
    from thelma_py.tools.bench import BenchConfig, _wanted, compute_params

    pull = BenchConfig(compute="lbm", store="fp16s", rounding="stochastic")
    assert _wanted(pull, 0.3) and " sr" in pull.label
    assert compute_params(pull).rounding == "stochastic"
    for other in ({"streaming": "aa"}, {"streaming": "push"}, {"storage": "sparse"},
                  {"store": "fp32"}):
        assert not _wanted(BenchConfig(**{**attrs.asdict(pull), **other}), 0.3), other


def _poiseuille_error(n: int, store: str, tau: float = 1.0, u_max: float = 0.1,
                      rounding: str = "nearest") -> float:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from half_accuracy import poiseuille_error

    return poiseuille_error(n, store, "cpu", tau=tau, u_max=u_max, rounding=rounding)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_poiseuille_with_16bit_storage_is_within_the_stagnation_level():
    """Force-driven channel from rest (D2Q9 BGK, τ = 1, U = 0.1). fp32: second order (the
    scheme's own error, measured 2.00). 16-bit: rounding loses every per-step change below half
    a storage step ε|f − w|, so the approach to the steady state stalls where the diffusive
    change 3 w ν π²/N² δ per step falls below it: δ/U ≈ ε |f − w| N² / (6 π² ν w U) (4.6 % for
    fp16s, 2.3 % for fp16c at N = 16; measured 1.6 % and 0.8 % more than fp32). The bound is
    fp32's error plus that level; the order is lost at fine grids and low velocities (see
    docs/DESIGN.md)."""
    e32 = [_poiseuille_error(n, "fp32") for n in (8, 16)]
    assert 1.9 < np.log2(e32[0] / e32[1]) < 2.1
    nu, w, dev = 1 / 6, 1 / 9, 0.04  # ν at τ = 1, w of the axis links, largest |f − w|
    for store in ("fp16s", "fp16c"):
        eps = 2.0 ** -(FORMATS[store].man_bits + 1)  # half a step, relative
        for n, fp32 in zip((8, 16), e32, strict=True):
            level = 2 * eps * dev * n**2 / (6 * np.pi**2 * nu * w * 0.1)
            assert _poiseuille_error(n, store) <= fp32 + level, (store, n, level)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_poiseuille_with_stochastic_rounding_converges_like_fp32():
    """The same channel with ``rounding='stochastic'``: a step's change below half a storage
    step now survives on average, so nothing stalls. Measured (relative L2 error against the
    parabola, N = 8 / 16 / 32): fp32 7.12e-3 / 1.78e-3 / 3.6e-4; fp16s 7.34e-3 / 1.80e-3 /
    3.9e-4, fp16c 7.32e-3 / 1.74e-3 / 3.0e-4 (to nearest at N = 16: 1.8e-2 and 7.7e-3).
    Asked: within 10 % of fp32's error and its second order from 8 to 16 (1.9–2.1). The
    answer is the parabola's, not the code's; rounding to nearest fails both bounds."""
    e32 = [_poiseuille_error(n, "fp32") for n in (8, 16)]
    for store in ("fp16s", "fp16c"):
        errors = [_poiseuille_error(n, store, rounding="stochastic") for n in (8, 16)]
        for error, fp32 in zip(errors, e32, strict=True):
            assert abs(error - fp32) <= 0.1 * fp32, (store, errors, e32)
        assert 1.9 < np.log2(errors[0] / errors[1]) < 2.1, (store, errors)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cavity_with_16bit_storage_stays_near_fp32():
    """2D cavity 32², Re 100, U = 0.1, 1,500 steps (MRT): the centre-line velocities of each
    16-bit store against the fp32 run, within the issue's bar of 0.002 U (measured: fp16s
    9.8e-5 U, fp16c 5.3e-5 U; storing f instead of f − w gives 3.3e-3 U and fails)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from half_accuracy import cavity

    result = cavity(32, 100.0, 0.1, 1500, "cpu")
    for store in ("fp16s", "fp16c"):
        s = result["stores"][store]
        assert max(s["max_du_over_U"], s["max_dv_over_U"]) < 0.002, (store, s["max_du_over_U"])
    c, s = result["stores"]["fp16c"], result["stores"]["fp16s"]
    assert max(c["max_du_over_U"], c["max_dv_over_U"]) < max(s["max_du_over_U"],
                                                             s["max_dv_over_U"])


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("store", "rounding"), [("fp16s", "nearest"), ("fp16c", "nearest"),
                                                 ("fp16s", "stochastic")])
def test_host_cuda_16bit_ranks_equal_one_domain_bit_for_bit(host_gpu, store, rounding):
    """Three ranks along z (a lid on the cut axis), the overlapped schedule, 16-bit halo
    layers moved as stored words: the owned nodes equal one domain's bit for bit (stochastic
    rounding too: a rank hashes global coordinates, its origin added, and counts the steps)."""
    from tests.test_parallel_host_cuda import (
        assert_overlapped_ranks_equal_one_domain,
        decomposed,
        geometry,
    )

    lattice = LATTICES["D3Q19"]
    geo = geometry("lid")
    params = Lbm(nu=0.03, collision="trt", store=store, rounding=rounding)
    boxes, ranks, plans, whole = decomposed(params, lattice, geo, (1, 1, 3),
                                            np.dtype("float32"), host_gpu)
    assert ranks[0].halo_arrays()[0].dtype == np.uint16
    assert_overlapped_ranks_equal_one_domain(boxes, ranks, plans, whole,
                                             geo.evaluate(lattice).fluid, overlap=True)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("streaming", "store", "plugin_bytes", "periodic_bytes"), [
    ("pull", "fp32", 2 * 19 * 4 + 16 + 4, 2 * 19 * 4 + 16),
    ("pull", "fp16c", 2 * 19 * 2 + 4, 2 * 19 * 2),
    ("aa", "fp16s", 19 * 2 + 4, 19 * 2)])
def test_memory_per_node_counts_16bit_populations_and_skips_unread_tags(
        host_gpu, streaming, store, plugin_bytes, periodic_bytes):
    """D3Q19: 2 B per stored population, and no ρ, u arrays in 16-bit storage (38 B/node for
    AA in a periodic box, the issue's ≤ 42 B); a box without a flagged tile holds no tag
    array."""
    from thelma_py.geometry import Geometry

    lattice = LATTICES["D3Q19"]
    params = Lbm(nu=0.04, streaming=streaming, store=store)
    assert params.memory_bytes_per_node(lattice, np.float32, host_gpu) == plugin_bytes
    periodic = Geometry((32, 4, 4), periodic=(True, True, True)).evaluate(lattice)
    engine = params.create(lattice, periodic, host_gpu, np.dtype(np.float32))
    assert engine.memory_bytes_per_node == periodic_bytes and engine.tag_words.size == 1
    f = random_state(lattice, periodic.tags.shape, np.float32)
    cpu = params.create(lattice, periodic, select_backend("cpu"), np.dtype(np.float32))
    for e in (engine, cpu):
        e.load_state({"f": f})
        e.step(3)
    assert np.abs(engine.state()["f"] - cpu.f).max() < 1e-4  # steps without the tag array
    closed = walled_geometry(lattice).evaluate(lattice)
    engine = params.create(lattice, closed, host_gpu, np.dtype(np.float32))
    assert engine.memory_bytes_per_node == plugin_bytes
    assert engine.traffic_bytes_per_node == 2 * 19 * (4 if store == "fp32" else 2)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("scheme", "store", "steps"), [
    ("pull", "fp16s", 3), ("push", "fp16c", 3), ("aa", "fp16c", 3), ("aa", "fp16s", 4)])
def test_16bit_fields_on_demand_are_the_moments_of_the_stored_state(host_gpu, scheme, store,
                                                                     steps):
    """16-bit storage holds no ρ, u: macroscopic() computes them from the held codes, one
    population at a time. Against the moments of f* decoded and unstreamed whole by
    :func:`layouts.from_scheme` (``canonical()``, another path), in every layout: pull, push
    and AA after an odd (3) and an even (4) step, with a moving lid, a moving solid sphere and
    a force. Same float32 values summed in another order: 1e-6 (a few ulps of ρ ≈ 1; a wrong
    link or wall term shows as 1e-2); and near the NumPy reference, which rounds through the
    same format (3 steps of the format: 1e-3)."""
    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)
    params = Lbm(nu=0.04, collision="trt", streaming=scheme, store=store,
                 force=(2e-5, -1e-5, 1e-5))
    gpu, cpu = (params.create(lattice, tags, b, np.dtype(np.float32))
                for b in (host_gpu, select_backend("cpu")))
    assert not hasattr(gpu, "rho") and not hasattr(gpu, "u")
    f = random_state(lattice, tags.tags.shape, np.float32)
    for engine in (gpu, cpu):
        engine.load_state({"f": f})
        engine.step(steps)
    rho, u = (np.array(a) for a in gpu.macroscopic())
    assert gpu.macroscopic()[0] is gpu.macroscopic()[0]  # kept until the next step
    canonical = np.array(gpu.canonical()).astype(np.float64)
    rho_ref = canonical.sum(axis=0)
    u_ref = np.tensordot(lattice.c.T.astype(np.float64), canonical, axes=1) / rho_ref
    u_ref -= 0.5 * np.asarray(params.force).reshape(-1, 1, 1, 1)
    u_ref[:, tags.solid] = 0
    assert np.abs(rho - rho_ref).max() < 1e-6
    assert np.abs(u - u_ref).max() < 1e-6
    fluid = tags.fluid
    rho_c, u_c = cpu.macroscopic()
    assert np.abs(rho[fluid] - rho_c[fluid]).max() < 1e-3
    assert np.abs(u[:, fluid] - u_c[:, fluid]).max() < 1e-3
    assert gpu.all_finite()
    gpu.buffers[gpu.current][5, 3, 4, 2] = 0x7E00  # a NaN code in either format
    assert not gpu.all_finite()


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_bench_largest_16bit_aa_cube_sizes_by_38_bytes_and_runs(host_gpu, monkeypatch):
    """``thelma bench --largest --store fp16s``: the cube is sized by the engine's own 38 B per
    node (no ρ, u arrays, no tag array in a periodic box), built from uniform broadcast fields
    and timed; the timing's finiteness check reads the stored codes (``all_finite``), not
    ρ, u. On the host stand-in, with a device of 170 kB and events that report 1 s."""
    import types

    from thelma_py.modules.compute.lbm.cuda import CudaLbm
    from thelma_py.tools.bench import BenchConfig, largest_cube

    cp = host_gpu.xp
    cp.broadcast_to = np.broadcast_to
    cp.isfinite = np.isfinite
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    event = types.SimpleNamespace(record=lambda *a: None, synchronize=lambda: None)
    cp.cuda.Event = lambda *a, **k: event
    cp.cuda.Device = lambda *a: types.SimpleNamespace(synchronize=lambda: None)
    cp.cuda.get_elapsed_time = lambda start, stop: 1000.0  # ms: K = 8 steps per batch
    monkeypatch.setattr(type(host_gpu), "memory", lambda self: (180_000, 200_000))

    def no_fields(self):
        raise AssertionError("the bench asked for rho, u (16 B per node more)")

    monkeypatch.setattr(CudaLbm, "_fields_from_store", no_fields)
    cfg = BenchConfig(collision="bgk", streaming="aa", case="periodic", size=0, store="fp16s")
    record = largest_cube(cp, host_gpu, cfg, memory_limit=170_000)
    assert record["memory_bytes_per_node"] == 38, record
    assert record["size"] == 16 and record.get("ran"), record  # (0.95 · 170 kB / 38)^⅓ = 16.2
    assert record["mlups"] > 0


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize("scheme", ["pull", "aa"])
def test_host_cuda_16bit_forces_decode_only_the_links(host_gpu, monkeypatch, scheme):
    """The momentum exchange of a 16-bit engine decodes the codes at its links only (pull) or
    one population at a time (AA), never the whole state (a D3Q27 sphere of 129 M nodes ran
    out of memory decoding it: 28 GB of int64 temporaries). The force on a moving curved
    sphere and on the lid equals the sum over the fully decoded state bit for bit (the same
    values summed in the same order), and the NumPy engine's within 16-bit rounding. (AA
    takes no interpolated body: there the sphere is a moving staircase wall.)"""
    from tests.test_sparse import GEOMETRIES
    from thelma_py.modules.compute.lbm.forces import MomentumExchange, forces

    lattice = LATTICES["D3Q19"]
    tags = GEOMETRIES["curved" if scheme == "pull" else "walled"](lattice).evaluate(lattice)
    params = Lbm(nu=0.04, collision="trt", streaming=scheme, store="fp16s")
    f = random_state(lattice, tags.tags.shape, np.float32)
    cpu, gpu = (params.create(lattice, tags, b, np.dtype(np.float32))
                for b in (select_backend("cpu"), host_gpu))
    for engine in (cpu, gpu):
        engine.load_state({"f": f})
        engine.step(5)  # AA: an odd step, its reversed layout
    whole = MomentumExchange(lattice, tags, np.float32, host_gpu.xp)(gpu.canonical())
    if scheme == "pull":
        monkeypatch.setattr(type(gpu), "canonical", lambda self: pytest.fail("full decode"))
    on_gpu, on_cpu = forces(gpu), forces(cpu)
    assert set(on_gpu) == set(whole) == set(on_cpu) == {0, 1, 2}  # walls, lid, sphere
    for body in on_gpu:
        np.testing.assert_array_equal(on_gpu[body], whole[body])
        np.testing.assert_allclose(on_gpu[body], on_cpu[body], rtol=1e-3, atol=1e-6)
    assert np.abs(on_gpu[2]).max() > 1e-3  # the sphere moves through a random state


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.parametrize(("scheme", "geometry", "steps"), [
    ("pull", "curved", 4), ("aa", "walled", 4), ("aa", "porous", 5), ("push", "porous", 4),
    ("push", "walled", 4)])
def test_host_cuda_16bit_probes_decode_only_their_nodes(host_gpu, scheme, geometry, steps):
    """ρ and u at a few nodes of a 16-bit engine come from those nodes' codes alone, in one
    kernel (the sphere's wake rings were decoding the whole state every 44 steps, then
    gathering and summing their codes population by population) and equal the whole fields'
    values there bit for bit, u = 0 at a solid node included, in every layout (AA after an
    even and an odd step, push: streamed codes read by the nodes' tags, past walls at rest
    and moving ones); the NumPy engine's within 16-bit rounding. Planted: the points kernel
    storing at npoints − 1 − k fails every case."""
    from tests.test_sparse import GEOMETRIES

    lattice = LATTICES["D3Q19"]
    tags = GEOMETRIES[geometry](lattice).evaluate(lattice)
    params = Lbm(nu=0.04, collision="trt", store="fp16s", force=(2e-5, -1e-5, 1e-5),
                 streaming=scheme)
    f = random_state(lattice, tags.tags.shape, np.float32)
    cpu, gpu = (params.create(lattice, tags, b, np.dtype(np.float32))
                for b in (select_backend("cpu"), host_gpu))
    for engine in (cpu, gpu):
        engine.load_state({"f": f})
        engine.step(steps)
    solid, fluid = np.argwhere(tags.solid)[0], np.argwhere(tags.fluid)
    picked = [*fluid[[len(fluid) // 7, len(fluid) // 3, len(fluid) // 2]], solid]
    index = tuple(np.array([p[a] for p in picked], dtype=np.intp) for a in range(3))
    assert tags.solid[tuple(k[-1] for k in index)]

    def whole_state_refused(patch):
        patch.setattr(type(gpu), "_fields_from_store",
                      lambda self: pytest.fail("whole state decoded"))

    with pytest.MonkeyPatch.context() as patch:  # (undo() would take cupy's stand-in too)
        whole_state_refused(patch)
        rho, u = (host_gpu.to_host(a) for a in gpu.macroscopic_at(index))
    rho_all, u_all = (host_gpu.to_host(a) for a in gpu.macroscopic())
    np.testing.assert_array_equal(rho, rho_all[index])
    np.testing.assert_array_equal(u, u_all[(slice(None), *index)])
    assert (u[:, -1] == 0).all() and (u[:, :-1] != 0).all()
    rho_c, u_c = cpu.macroscopic()
    np.testing.assert_allclose(rho, rho_c[index], atol=1e-4)
    np.testing.assert_allclose(u, u_c[(slice(None), *index)], atol=1e-4)
    gpu._fields = None  # a profile's line (ints and a slice) and a plane, from their codes
    for line in ((solid[0], slice(None), solid[2]), (slice(2, 9), 4, slice(None))):
        with pytest.MonkeyPatch.context() as patch:
            whole_state_refused(patch)
            rho, u = (host_gpu.to_host(a) for a in gpu.macroscopic_at(line))
        np.testing.assert_array_equal(rho, rho_all[line])
        np.testing.assert_array_equal(u, u_all[(slice(None), *line)])


def assert_divergence_check_reads_codes(backend) -> None:
    """The periodic divergence check of a 16-bit engine looks at its codes, without decoding ρ
    and u (0.5 s every 1000 steps at 100 M D3Q27 nodes); one NaN population still stops the
    run with its step and node."""
    import types

    from thelma_py.divergence import DivergenceError, check_finite

    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)  # 37 x 14 x 12
    params = Lbm(nu=0.04, collision="trt", store="fp16s")
    engine = params.create(lattice, tags, backend, np.dtype(np.float32))
    engine.load_state({"f": random_state(lattice, tags.tags.shape, np.float32)})
    engine.step(2)
    solver = types.SimpleNamespace(engine=engine, backend=backend, rank_box=None, tags=tags,
                                   time_step=2, compute=params)
    with pytest.MonkeyPatch.context() as patch:  # (undo() would take cupy's stand-in too)
        patch.setattr(type(engine), "macroscopic", lambda self: pytest.fail("decoded"))
        check_finite(solver)  # finite codes: no decode
    fmt = FORMATS["fp16s"]
    engine.buffers[engine.current][5][3, 2, 30] = fmt.inf_code | 1  # NaN: x 30, y 2, z 3
    engine._fields = None
    with pytest.raises(DivergenceError, match=r"step 2, node \(x, y, z\) = \(30, 2, 3\)"):
        check_finite(solver)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the planted NaN, decoded
def test_host_cuda_16bit_divergence_check_reads_codes_and_names_the_node(host_gpu):
    assert_divergence_check_reads_codes(host_gpu)


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_gpu_16bit_divergence_check_reads_codes_and_names_the_node():
    assert_divergence_check_reads_codes(select_backend("cuda"))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_host_cuda_16bit_rank_probes_read_their_own_nodes(host_gpu):
    """On a rank of a distributed 16-bit run, ρ and u at points, a line and a reversed plane of
    the owned box come from those nodes' codes in the grown arrays (the rank's whole state was
    decoded at every sample before), equal to the owned fields there bit for bit."""
    from tests.test_parallel_host_cuda import decomposed, geometry
    from thelma_py.parallel import DistributedEngine

    lattice = LATTICES["D3Q19"]
    params = Lbm(nu=0.03, collision="trt", store="fp16s")
    boxes, ranks, _, _ = decomposed(params, lattice, geometry("lid"), (1, 1, 3),
                                    np.dtype("float32"), host_gpu)
    box, engine = boxes[1], ranks[1]  # ghost layers on both sides of z
    engine.load_state({"f": random_state(lattice, engine.tags.tags.shape, np.float32)})
    rank = object.__new__(DistributedEngine)  # no halo exchange needed to read fields
    rank.engine, rank.box = engine, box
    nz, ny, nx = box.shape[::-1]
    cases = [tuple(np.array(v) for v in ([0, nz - 1, 2], [3, 0, ny - 1], [nx - 1, 5, 0])),
             (nz - 1, 2, slice(None)), (0, slice(1, 4), slice(None, None, -1))]
    for index in cases:
        with pytest.MonkeyPatch.context() as patch:  # (undo() would take cupy's stand-in too)
            patch.setattr(type(engine), "_fields_from_store",
                          lambda self: pytest.fail("whole state decoded"))
            rho, u = (host_gpu.to_host(a) for a in rank.macroscopic_at(index))
        engine._fields = None
        rho_all, u_all = (host_gpu.to_host(a) for a in rank.macroscopic())
        np.testing.assert_array_equal(rho, rho_all[index])
        np.testing.assert_array_equal(u, u_all[(slice(None), *index)])
        assert np.abs(u).max() > 0

"""A stand-in for the few CuPy calls the CUDA engines (LBM dense and sparse, LW-ACM) make, for
machines without a GPU.

Arrays are NumPy arrays with a ``get()``; ``RawModule`` compiles the generated CUDA source as
C++ for the host (CUDA keywords defined away) and runs every thread of a launch in turn. For
kernels whose threads never touch each other's locations within a launch (pull with two
buffers, in-place AA) this is the kernel's arithmetic and indexing exactly, so the engines'
Python side (state layouts, launches, conversions) can be tested on the CPU. Kernels with
shared memory and ``__syncthreads`` (the single-step LW-ACM) are told so by
``THELMA_HOST_THREADS``: there every thread stages whole planes itself, so a thread run alone
sees the same shared values as in a block. Kernels with ``__syncthreads`` or warp shuffles
(``__shfl_up_sync`` / ``__shfl_down_sync``) run each block twice: the first pass fills the
shared arrays and records every thread's shuffled values (in the order of its shuffle calls),
writing into scratch copies of the kernel's writable arrays; the second pass, which writes the
real arrays, reads the neighbours' values recorded by the first. That is exact for kernels
whose shared and shuffled values depend only on what the launch does not write (two-buffer
kernels). Streams and events run everything in
the order it is enqueued (the distributed schedule's launches read no value another one of the
same step writes, so that order is one the GPU may take); stream capture records the launches
instead of running them, and the graph it returns replays them with the same arguments, as a
CUDA graph does.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np

from tests import build_cache

PRELUDE = """
#include <algorithm>
#include <cmath>
#include <cstddef>
using std::min;
using std::sqrt;  // CUDA's sqrt(float) and sqrt(double) overloads
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }  // CUDA's rsqrt overloads
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double __dmul_rn(double a, double b) { return a * b; }  // g++ runs -ffp-contract=off
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static
#define __syncthreads()
#define __align__(n) alignas(n)
#define THELMA_HOST_THREADS 1
#include <cstring>
struct thread_index { unsigned x, y, z; };
static thread_index blockIdx, blockDim, threadIdx;
static unsigned char host_lanes[1024][64][8];
static unsigned host_shuffle_call;
template <class T> T host_shuffle(T v, int delta) {
    const unsigned call = host_shuffle_call++;
    std::memcpy(host_lanes[threadIdx.x][call], &v, sizeof(T));
    const int lane = (int)(threadIdx.x & 31) + delta;
    if (lane < 0 || lane > 31) return v;
    T out;
    std::memcpy(&out, host_lanes[threadIdx.x + delta][call], sizeof(T));
    return out;
}
template <class T> T __shfl_up_sync(unsigned, T v, unsigned d) { return host_shuffle(v, -(int)d); }
template <class T> T __shfl_down_sync(unsigned, T v, unsigned d) { return host_shuffle(v, (int)d); }
"""

KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\)')


_CAPTURE: list | None = None
"""Launches recorded by the stream being captured (None: launches run at once)."""


class Event:
    """A CUDA event whose work is always done (launches run when enqueued)."""

    def __init__(self, disable_timing: bool = False):
        pass


class Stream:
    """A CUDA stream that runs what is enqueued at once (``with stream:``, events, priority);
    its capture records kernel launches into a :class:`Graph` instead."""

    def __init__(self, non_blocking: bool = False, priority: int | None = None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def record(self, event: Event | None = None) -> Event:
        return event or Event()

    def wait_event(self, event: Event) -> None:
        pass

    def begin_capture(self) -> None:
        global _CAPTURE
        _CAPTURE = []

    def end_capture(self) -> Graph:
        global _CAPTURE
        graph, _CAPTURE = Graph(_CAPTURE), None
        return graph

    def synchronize(self) -> None:
        pass


class Graph:
    """Captured launches, replayed in order by :meth:`launch`."""

    def __init__(self, launches: list):
        self.launches = launches

    def launch(self, stream=None) -> None:
        for launch in self.launches:
            launch()


class DeviceArray(np.ndarray):
    """A NumPy array that answers ``get()`` like a CuPy array."""

    def get(self) -> np.ndarray:
        return np.array(self)


def _device(array) -> DeviceArray:
    return np.ascontiguousarray(array).view(DeviceArray)


def asarray(a, dtype=None):
    return _device(np.array(a, dtype=dtype, copy=True))


def _wrap(function):
    def call(*args, **kwargs):
        out = function(*args, **kwargs)
        return _device(out) if isinstance(out, np.ndarray) else out
    return call


_BUILT: dict[str, Path] = {}
"""Shared libraries built this session, by the hash of their C++ text: a module whose text
is byte-identical to one built before (the same kernels asked for by another test) loads
that library instead of running g++ again (in another pytest-xdist worker too:
:mod:`tests.build_cache`)."""
built = {"g++": 0, "reused": 0}
GXX_FLAGS = ("-O1", "-ffp-contract=off", "-shared", "-fPIC")


def _build(text: str) -> Path:
    key = build_cache.key("g++", *GXX_FLAGS, text)
    if key in _BUILT:
        built["reused"] += 1
        return _BUILT[key]

    def gxx(folder: Path) -> None:
        source = folder / "module.cpp"
        source.write_text(text)
        subprocess.run([shutil.which("g++"), *GXX_FLAGS, "-o", str(folder / "module.so"),
                        str(source)], check=True, capture_output=True)
        built["g++"] += 1

    _BUILT[key] = build_cache.shared(key, gxx) / "module.so"
    return _BUILT[key]


_INTEGER_TYPES = {"int": ctypes.c_int, "unsigned": ctypes.c_uint,
                  "unsigned int": ctypes.c_uint, "unsigned char": ctypes.c_ubyte}


def _integer_type(parameter: str):
    """The ctypes type of a scalar integer kernel parameter (``int n``, ``unsigned s``), None
    for a pointer or a real."""
    if "*" in parameter:
        return None
    return _INTEGER_TYPES.get(" ".join(w for w in parameter.split()[:-1] if w != "const"))


class RawModule:
    """Compiles ``code`` with g++ and gives each ``extern "C"`` kernel a host launcher."""

    def __init__(self, code: str, options=()):
        real = "double" if "typedef double real_t;" in code else "float"
        self._scalar = ctypes.c_double if real == "double" else ctypes.c_float
        self._params = {}
        launchers = []
        self._passes = 2 if "__syncthreads" in code or "__shfl_" in code else 1
        for name, params in KERNEL.findall(code):
            names = [p.split()[-1] for p in params.split(",")]
            writable = ["*" in p and "const" not in p for p in params.split(",")]
            self._params[name] = ["*" in p for p in params.split(",")], [
                _integer_type(p) for p in params.split(",")], writable
            scratch = ", ".join(p.rsplit(n, 1)[0] + n + "_scratch" for p, n, w in
                                zip(params.split(","), names, writable, strict=True) if w)
            first = [n + "_scratch" if w else n for n, w in zip(names, writable, strict=True)]
            launchers.append(
                f'extern "C" void launch_{name}(unsigned gx, unsigned gy, unsigned gz, '
                f"unsigned bx, unsigned by, unsigned bz, {params}"
                f"{', ' + scratch if scratch else ''}) {{\n"
                "    blockDim.x = bx; blockDim.y = by; blockDim.z = bz;\n"
                "    for (unsigned c = 0; c < gz; ++c) for (unsigned b = 0; b < gy; ++b) "
                "for (unsigned a = 0; a < gx; ++a)\n"
                f"    for (int pass = 0; pass < {self._passes}; ++pass)\n"
                "    for (unsigned z = 0; z < bz; ++z) for (unsigned y = 0; y < by; ++y) "
                "for (unsigned x = 0; x < bx; ++x) {\n"
                "        blockIdx.x = a; blockIdx.y = b; blockIdx.z = c;\n"
                "        threadIdx.x = x; threadIdx.y = y; threadIdx.z = z;\n"
                "        host_shuffle_call = 0;\n"
                f"        if (pass + 1 < {self._passes}) {name}({', '.join(first)});\n"
                f"        else {name}({', '.join(names)});\n    }}\n}}\n")
        self._lib = ctypes.CDLL(str(_build(PRELUDE + code + "\n".join(launchers))))

    def get_function(self, name: str):
        pointers, ints, writable = self._params[name]
        launcher = getattr(self._lib, f"launch_{name}")

        def kernel(grid, block, args):
            if _CAPTURE is not None:
                _CAPTURE.append(lambda: kernel(grid, block, args))
                return
            values = [ctypes.c_uint(int(v)) for v in (*grid, 1, 1, 1)[:3]]
            values += [ctypes.c_uint(int(v)) for v in (*block, 1, 1, 1)[:3]]
            for arg, pointer, integer in zip(args, pointers, ints, strict=True):
                if pointer:
                    assert arg.flags.c_contiguous
                    values.append(ctypes.c_void_p(arg.ctypes.data))
                else:
                    values.append(integer(int(arg)) if integer else self._scalar(arg))
            scratch = [np.empty_like(arg) if self._passes > 1 else arg  # first pass writes
                       for arg, w in zip(args, writable, strict=True) if w]
            values += [ctypes.c_void_p(a.ctypes.data) for a in scratch]
            launcher(*values)
        return kernel


def module() -> types.ModuleType:
    """The stand-in, to be placed at ``sys.modules['cupy']``."""
    cp = types.ModuleType("cupy")
    cp.asarray = asarray
    cp.RawModule = RawModule
    for name in ("empty", "zeros", "ones", "full", "array", "where", "tensordot", "empty_like",
                 "stack", "moveaxis", "ascontiguousarray", "roll", "isfinite", "concatenate",
                 "argmax", "multiply"):
        setattr(cp, name, _wrap(getattr(np, name)))
    cp.cuda = types.SimpleNamespace(get_current_stream=Stream, Stream=Stream, Event=Event)
    return cp


class HostBackend:
    """The parts of :class:`thelma_py.backend.Backend` the engines and a Solver use, for the
    stand-in."""

    is_gpu = True
    name = "host-cuda"
    copy_bandwidth = None

    def clock(self) -> float:
        import time

        return time.perf_counter()

    def synchronize(self) -> None:
        """Nothing to wait for: the stand-in runs each launch to its end."""

    def describe(self) -> str:
        return "host-cuda stand-in"

    def __init__(self):
        self.xp = module()

    def memory(self):
        return None

    def timer(self):
        """Wall-clock batch timing (the stand-in runs kernels on the host, synchronously)."""
        from thelma_py.backend import HostTimer

        return HostTimer()

    def sm_count(self) -> int:
        return 132  # an H100

    def to_host(self, array):
        return np.array(array)

    def to_device(self, array):
        return asarray(array)

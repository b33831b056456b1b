"""Array backends: NumPy on the CPU (the reference) and CuPy on NVIDIA GPUs.

CuPy is imported only here, and only when a GPU backend is asked for, so ``import thelma_py``
works on machines without it.
"""

from __future__ import annotations

import functools
import time
from types import ModuleType

import attrs
import numpy as np

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = {"float32": np.float32, "float64": np.float64, "fp32": np.float32,
              "fp64": np.float64, "single": np.float32, "double": np.float64}


def dtype_of(precision: str | type | np.dtype) -> np.dtype:
    """numpy dtype for a precision name ('float32', 'fp64', ...) or dtype."""
    if isinstance(precision, str):
        try:
            return np.dtype(PRECISIONS[precision.lower()])
        except KeyError:
            raise ValueError(f"unknown precision {precision!r}; valid: float32, float64") from None
    dtype = np.dtype(precision)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"precision must be float32 or float64, got {dtype}")
    return dtype


def host_copy(array) -> np.ndarray:
    """``array`` as a NumPy array: a device (CuPy) array is copied, a host array kept as it is
    (the fields of a GPU run mix both: ρ and u on the device, the node kinds on the host)."""
    return array.get() if hasattr(array, "get") else np.asarray(array)


@attrs.frozen
class Backend:
    """Where arrays live: ``xp`` is numpy or cupy."""

    name: str
    xp: ModuleType = attrs.field(repr=False, eq=False)
    copy_bandwidth: float | None = attrs.field(default=None, kw_only=True, repr=False, eq=False)
    """Measured device copy bandwidth in bytes/s (the run summary relates MLUPS to it), or None."""

    @property
    def is_gpu(self) -> bool:
        return self.name == "cuda"

    def to_host(self, array) -> np.ndarray:
        """``array`` as a NumPy array (:func:`host_copy`)."""
        return host_copy(array)

    def to_device(self, array: np.ndarray):
        return self.xp.asarray(array)

    def synchronize(self) -> None:
        if self.is_gpu:
            self.xp.cuda.get_current_stream().synchronize()

    def timer(self):
        """A timer started now: ``.stop()`` marks its end and returns it; ``.ready()`` says
        whether its seconds are known without waiting; ``.seconds()`` waits if needed. On a
        GPU the marks are events in the stream, so timing a batch of steps does not make the
        host wait for the device (results rendered on the device queue behind the steps)."""
        cuda = getattr(self.xp, "cuda", None) if self.is_gpu else None
        if cuda is None or not hasattr(cuda, "Event"):
            return HostTimer()
        return _EventTimer(cuda)

    def clock(self) -> float:
        """Seconds, after the device has finished what it was given."""
        self.synchronize()
        return time.perf_counter()

    def memory(self) -> tuple[int, int] | None:
        """(free, total) device bytes, or None on the CPU."""
        if not self.is_gpu:
            return None
        free, total = self.xp.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def sm_count(self) -> int:
        """Streaming multiprocessors of the device (kernels size their grids by it)."""
        props = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        return int(props["multiProcessorCount"])

    def describe(self) -> str:
        if not self.is_gpu:
            return "cpu (numpy)"
        props = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        return f"cuda ({name})"


def array_module(array) -> ModuleType:
    """numpy or cupy, whichever owns ``array`` (cupy is imported only for a cupy array)."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


@functools.cache
def _cupy_or_reason() -> tuple[ModuleType | None, str]:
    try:
        import cupy
    except ImportError as error:
        return None, f"cupy is not installed ({error}); pip install 'thelma-py[cuda13]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDARuntimeError when no driver is present
        return None, f"no CUDA device is usable ({error})"
    if count < 1:
        return None, "no CUDA device found"
    return cupy, ""


def gpu_available() -> bool:
    return _cupy_or_reason()[0] is not None


def gpu_unavailable_reason() -> str:
    """Why no GPU can be used (cupy missing, no device), or '' when one can."""
    return _cupy_or_reason()[1]


def select_backend(device: str = "auto") -> Backend:
    """'cpu', 'cuda' or 'auto' (the GPU when one is usable, else the CPU)."""
    device = {"numpy": "cpu", "cupy": "cuda", "gpu": "cuda"}.get(device, device)
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; valid: {', '.join(DEVICES)}")
    if device == "cpu":
        return Backend("cpu", np)
    cupy, reason = _cupy_or_reason()
    if cupy is not None:
        return Backend("cuda", cupy)
    if device == "cuda":
        raise RuntimeError(f"device 'cuda' was asked for but {reason}; use --device cpu")
    return Backend("cpu", np)


class HostTimer:
    """Wall-clock seconds of work done by the time :meth:`stop` is called (NumPy)."""

    def __init__(self) -> None:
        self.start, self.end = time.perf_counter(), None

    def stop(self) -> HostTimer:
        self.end = time.perf_counter()
        return self

    def ready(self) -> bool:
        return True

    def seconds(self) -> float:
        return self.end - self.start


class _EventTimer:
    """Device seconds between two CUDA events recorded on the current stream."""

    def __init__(self, cuda) -> None:
        self._cuda = cuda
        self.start, self.end = cuda.Event(), None
        self.start.record()

    def stop(self) -> _EventTimer:
        self.end = self._cuda.Event()
        self.end.record()
        return self

    def ready(self) -> bool:
        return bool(self.end.done)

    def seconds(self) -> float:
        self.end.synchronize()
        return self._cuda.get_elapsed_time(self.start, self.end) / 1e3

"""Host copies of device fields that do not hold the GPU up.

:class:`HostCopier` snapshots device arrays on the compute stream (a device-to-device copy,
a fraction of a millisecond even at 256³) and then copies the snapshot to pinned host memory
on a stream of its own, so the next steps run while the data crosses PCIe. The caller gets a
:class:`PendingCopy`: calling it waits for the copy and returns NumPy arrays (an output thread
calls it); releasing it hands its pinned buffers back for the next snapshot. Page-locking
hundreds of MB takes tens of milliseconds in the calling thread, so buffers are reused and can
be reserved when a run starts (:meth:`HostCopier.reserve`). On the CPU the copy is made at once.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

POLL_SECONDS = 0.0005
"""How often an output thread looks whether its copy has arrived."""


class PendingCopy:
    """A host copy under way: call it for the arrays (it waits for the copy); :meth:`release`
    when done with them lets a later snapshot reuse their pinned memory. A copy that is never
    released simply keeps its buffers (they are freed with the arrays)."""

    def __init__(self, arrays: dict, done=None, interleave: tuple[str, ...] = (),
                 give_back=None, extra: dict | None = None):
        self._arrays, self._done, self._interleave = arrays, done, interleave
        self._give_back, self._extra = give_back, dict(extra or {})

    def __call__(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            raise RuntimeError("this host copy was released; take a new one")
        if self._done is not None:
            # poll rather than block in the driver: a thread blocked there may hold the GIL
            # and with it the thread that launches the solver's steps
            while not self._done.done:
                time.sleep(POLL_SECONDS)
        out = {name: np.moveaxis(array, -1, 0) if name in self._interleave else array
               for name, array in self._arrays.items()}
        return {**out, **self._extra}

    def release(self) -> None:
        """The arrays are no longer used: their buffers may take the next snapshot."""
        arrays, self._arrays = self._arrays, None
        if arrays is not None and self._give_back is not None:
            self._give_back(arrays)


def _layout(arrays: dict, interleave: tuple[str, ...]) -> tuple:
    """(name, host shape, dtype) of each snapshot array: interleaved vectors (D, *S) are held
    as (*S, D)."""
    return tuple((name, tuple(a.shape[1:]) + (a.shape[0],) if name in interleave
                  else tuple(a.shape), str(a.dtype)) for name, a in arrays.items())


class HostCopier:
    """Asynchronous device-to-host copies of named arrays (one snapshot in flight at a time),
    into pinned buffers that are reused once released."""

    def __init__(self, backend):
        self.backend = backend
        self._stream = None
        self._done = None  # event: the last host copy has read the snapshot
        self._snapshot: dict = {}
        self._free: dict[tuple, list[dict]] = {}
        self._lock = threading.Lock()  # buffers come back from output threads

    def reserve(self, arrays: dict, count: int, interleave: tuple[str, ...] = (),
                memory_fraction: float = 0.25) -> int:
        """Pin ``count`` sets of host buffers for snapshots of ``arrays`` now, at most
        ``memory_fraction`` of the host memory in all. Returns the sets held (0 on the CPU)."""
        if not self.backend.is_gpu:
            return 0
        layout = _layout(arrays, interleave)
        per_set = sum(int(a.nbytes) for a in arrays.values())
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        count = max(0, min(count, int(memory_fraction * physical) // max(per_set, 1)))
        with self._lock:
            free = self._free.setdefault(layout, [])
            missing = count - len(free)
        for _ in range(missing):
            self._give_back_to(layout)(self._pinned(layout))
        return count

    def _pinned(self, layout: tuple) -> dict:
        import cupyx

        return {name: cupyx.empty_pinned(shape, dtype) for name, shape, dtype in layout}

    def _give_back_to(self, layout: tuple):
        def give_back(arrays: dict) -> None:
            with self._lock:
                self._free.setdefault(layout, []).append(arrays)
        return give_back

    def start(self, arrays: dict, interleave: tuple[str, ...] = (),
              extra: dict | None = None) -> PendingCopy:
        """Begin copying ``arrays`` (name → device or host array); ``extra`` host arrays are
        handed over as they are.

        Vector fields named in ``interleave`` (shape (D, *S)) are returned as (D, *S) views of
        host memory laid out (*S, D), the point order of VTK files: on a GPU the reordering is
        done on the device, where it costs almost nothing, instead of by the output thread.
        """
        if not self.backend.is_gpu:
            copies = {name: np.array(array, copy=True) for name, array in arrays.items()}
            return PendingCopy(copies, extra=extra)
        cp = self.backend.xp
        try:
            snapshot = self._take(cp, arrays, interleave)
        except cp.cuda.memory.OutOfMemoryError:  # no room for a snapshot: copy now
            self._snapshot.clear()
            copies = {name: cp.asnumpy(array) for name, array in arrays.items()}
            return PendingCopy(copies, extra=extra)
        layout = _layout(arrays, interleave)
        with self._lock:
            free = self._free.get(layout)
            host = free.pop() if free else None
        if host is None:
            host = self._pinned(layout)
        ready = cp.cuda.get_current_stream().record()
        self._stream.wait_event(ready)
        for name, array in snapshot.items():  # straight to the driver: never synchronous
            cp.cuda.runtime.memcpyAsync(host[name].ctypes.data, array.data.ptr, array.nbytes,
                                        cp.cuda.runtime.memcpyDeviceToHost, self._stream.ptr)
        done = self._done = self._stream.record()
        return PendingCopy(host, done, interleave, self._give_back_to(layout), extra)

    def _take(self, cp, arrays: dict, interleave: tuple[str, ...]) -> dict:
        """Device snapshot of ``arrays`` on the compute stream, after the last copy read it."""
        if self._stream is None:
            self._stream = cp.cuda.Stream(non_blocking=True)
        compute = cp.cuda.get_current_stream()
        if self._done is not None:
            compute.wait_event(self._done)
        snapshot = {}
        for name, array in arrays.items():
            array = cp.asarray(array)
            if name in interleave:
                array = cp.moveaxis(array, 0, -1)
            held = self._snapshot.get(name)
            if held is None or held.shape != array.shape or held.dtype != array.dtype:
                held = self._snapshot[name] = cp.empty(array.shape, array.dtype)  # C order
            held[...] = array
            snapshot[name] = held
        return snapshot

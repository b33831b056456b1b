"""Host copies of device fields that do not hold the GPU up.

:class:`HostCopier` snapshots device arrays on the compute stream (a device-to-device copy,
a fraction of a millisecond even at 256³) and then copies the snapshot to pinned host memory
on a stream of its own, so the next steps run while the data crosses PCIe. The caller gets a
function that waits for the copy and returns NumPy arrays; an output thread calls it. On the
CPU the copy is made at once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class HostCopier:
    """Asynchronous device-to-host copies of named arrays (one snapshot in flight at a time)."""

    def __init__(self, backend):
        self.backend = backend
        self._stream = None
        self._done = None  # event: the last host copy has read the snapshot
        self._snapshot: dict = {}

    def reserve(self, arrays: dict, count: int, memory_fraction: float = 0.25) -> int:
        """Allocate ``count`` sets of pinned host buffers for snapshots of ``arrays`` and hand
        them to CuPy's pinned memory pool, so that later snapshots reuse them: page-locking
        hundreds of MB takes tens of milliseconds, which would otherwise stall the run at the
        first snapshots. At most ``memory_fraction`` of the host memory is reserved. Returns
        the sets reserved (0 on the CPU)."""
        if not self.backend.is_gpu:
            return 0
        import os

        import cupyx

        per_set = sum(int(a.nbytes) for a in arrays.values())
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        count = max(0, min(count, int(memory_fraction * physical) // max(per_set, 1)))
        held = [cupyx.empty_pinned(a.shape, a.dtype) for _ in range(count)
                for a in arrays.values()]
        del held  # back to the pool, still pinned
        return count

    def start(self, arrays: dict, interleave: tuple[str, ...] = ()
              ) -> Callable[[], dict[str, np.ndarray]]:
        """Begin copying ``arrays`` (name → device or host array); return the waiter.

        Vector fields named in ``interleave`` (shape (D, *S)) are returned as (D, *S) views of
        host memory laid out (*S, D), the point order of VTK files: on a GPU the reordering is
        done on the device, where it costs almost nothing, instead of by the output thread.
        """
        if not self.backend.is_gpu:
            copies = {name: np.array(array, copy=True) for name, array in arrays.items()}
            return lambda: copies
        cp = self.backend.xp
        try:
            snapshot = self._take(cp, arrays, interleave)
        except cp.cuda.memory.OutOfMemoryError:  # no room for a snapshot: copy now
            self._snapshot.clear()
            copies = {name: cp.asnumpy(array) for name, array in arrays.items()}
            return lambda: copies
        import cupyx

        ready = cp.cuda.get_current_stream().record()
        self._stream.wait_event(ready)
        host = {}
        for name, array in snapshot.items():
            host[name] = cupyx.empty_pinned(array.shape, array.dtype)
            cp.asnumpy(array, stream=self._stream, out=host[name], blocking=False)
        done = self._done = self._stream.record()

        def wait() -> dict[str, np.ndarray]:
            done.synchronize()
            return {name: np.moveaxis(array, -1, 0) if name in interleave else array
                    for name, array in host.items()}

        return wait

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

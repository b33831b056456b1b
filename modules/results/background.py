"""A one-thread background writer with a bounded queue, so that output does not stall a run.

The solver hands over host copies (or functions that return them); one worker writes them in
submission order, several write different files at once. At most
``depth`` jobs wait or run: a further :meth:`BackgroundWriter.submit` blocks until the oldest
is done (back-pressure instead of unbounded memory). An exception in the worker is raised again
in the calling thread at the next :meth:`~BackgroundWriter.submit`, :meth:`~BackgroundWriter.check`
or :meth:`~BackgroundWriter.drain`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class BackgroundWriter:
    """Runs ``submit(fn, *args)`` jobs on ``workers`` threads (in order when there is one), at
    most ``depth`` queued or running."""

    def __init__(self, depth: int = 2, name: str = "thelma-writer", workers: int = 1):
        for label, value in (("depth", depth), ("workers", workers)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        self.depth, self.workers = depth, workers
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[Future] = deque()

    def submit(self, fn: Callable, *args) -> None:
        self.check()
        while len(self._pending) >= self.depth:
            self._pending.popleft().result()  # wait for the oldest; re-raises its error
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix=self._name)
        self._pending.append(self._pool.submit(fn, *args))

    def check(self) -> None:
        """Raise the error of the first finished job that failed (and forget finished jobs)."""
        while self._pending and self._pending[0].done():
            self._pending.popleft().result()

    def drain(self) -> None:
        """Wait for every job; raise the first error. The worker thread ends."""
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pending.clear()
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    @property
    def pending(self) -> int:
        return len(self._pending)

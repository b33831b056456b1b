"""SIGINT and SIGTERM during a run: finish the batch, write the checkpoints, stop cleanly.

:class:`SignalWatch` records a signal while :meth:`Solver.run` is inside it (main thread
only); the run loop asks :meth:`SignalWatch.pending` after each batch. A second signal stops
at once, without waiting for the batch.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from thelma_py.solver import Solver


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the solver finished its batch, wrote its checkpoints, stopped.

    ``signal_name`` is 'SIGINT' or 'SIGTERM', ``step`` the step reached, ``checkpoints`` the
    directories written.
    """

    def __init__(self, signal_name: str, step: int, checkpoints: list[Path]):
        self.signal_name, self.step, self.checkpoints = signal_name, step, checkpoints
        where = (f"; checkpoint written to {', '.join(map(str, checkpoints))}" if checkpoints
                 else "; no checkpoint plug-in, nothing saved")
        super().__init__(f"{signal_name} received: stopped cleanly at step {step}{where}")


@attrs.define
class SignalWatch:
    """Context manager: while inside, SIGINT/SIGTERM are recorded instead of raising
    (``enabled`` and on the main thread only); the previous handlers come back on exit."""

    enabled: bool = True
    received: int | None = attrs.field(default=None, init=False)
    _previous: dict = attrs.field(factory=dict, init=False, repr=False)

    def _on_signal(self, signum, frame) -> None:
        if self.received is not None:  # a second signal: stop now, without waiting
            raise KeyboardInterrupt(f"{signal.Signals(signum).name} received twice")
        self.received = signum

    def __enter__(self) -> SignalWatch:
        if self.enabled and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        self.received = None

    def pending(self, solver: Solver) -> int:
        """The signal to act on after this batch (0: none). In a distributed run the ranks
        agree on it, so that all of them write the checkpoint at the same step."""
        local = int(self.received or 0)
        if solver.rank_box is None:
            return local
        return int(solver.reduce([local], op="max")[0])

    def take(self, signum: int) -> str:
        """Act on ``signum`` now: the watch is cleared (a further signal is recorded anew)
        and the signal's name returned."""
        self.received = None
        return signal.Signals(signum).name

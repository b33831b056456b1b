"""Output scheduling: when the solver calls its results plug-ins, and in which order.

The run loop cuts a run into batches that end where a results plug-in is due
(:meth:`Outputs.next_stop`); after each batch, the due plug-ins are called, those that
declare ``runs_last`` (checkpoints) after the others. Plain results objects are adapted to
the :class:`~thelma_py.results.Results` interface on every access, so that the solver's
``results`` list may be extended between runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from thelma_py.registry import available
from thelma_py.results import Results, as_results, distributable

if TYPE_CHECKING:
    from thelma_py.solver import Solver


def check_distributed(results: Iterable) -> None:
    """Refuse results plug-ins that do not declare ``supports_distributed``, naming those that
    do."""
    unsupported = sorted({type(r).__name__ for r in results
                          if not as_results(r).supports_distributed})
    if unsupported:
        able = sorted(name for name, factory in available("results").items()
                      if distributable(factory))
        raise ValueError(f"results plug-in(s) {unsupported} do not run distributed yet; "
                         f"distributed runs take {', '.join(able)}")


@attrs.define
class Outputs:
    """Calls the results plug-ins of one solver: the start hooks once, then the due ones."""

    started: bool = False
    resumed_step: int | None = None
    """The step a checkpoint was loaded at: its results were called before it was written."""

    @staticmethod
    def plugins(solver: Solver) -> list[Results]:
        return [as_results(r) for r in solver.results]

    def start(self, solver: Solver) -> None:
        """Before the first run: every ``start`` hook, then the results due at this step."""
        if self.started:
            return
        self.started = True
        for result in self.plugins(solver):
            result.start(solver)
        if solver.time_step != self.resumed_step:  # a checkpoint is written after those ran
            self.call_due(solver)

    def begin_run(self, solver: Solver, end_step: int) -> None:
        for result in self.plugins(solver):  # progress bars need the target step
            result.begin_run(solver, end_step)

    def next_stop(self, solver: Solver, end_step: int) -> int:
        """The first step after the current one where a plug-in is due, at most ``end_step``."""
        stops = [end_step]
        for result in self.plugins(solver):
            schedule = result.schedule
            if schedule is not None:
                stops.append(schedule.next_after(solver.time_step))
        return min(stops)

    def call_due(self, solver: Solver) -> None:
        """Call the plug-ins due at this step, ``runs_last`` ones after the others, timed into
        ``solver.results_seconds``."""
        start = time.perf_counter()
        for result in sorted(self.plugins(solver), key=lambda r: r.runs_last):
            schedule = result.schedule
            if schedule is not None and schedule.due(solver.time_step):
                result(solver)
        solver.results_seconds += time.perf_counter() - start

    def finish(self, solver: Solver) -> None:
        for result in self.plugins(solver):
            result.finish(solver)

    def interrupt(self, solver: Solver) -> list[Path]:
        """A signal stopped the run: the checkpoints the plug-ins wrote at this step."""
        written = (result.on_interrupt(solver) for result in self.plugins(solver))
        return [path for path in written if path is not None]

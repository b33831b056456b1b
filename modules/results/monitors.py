"""Run monitors: a progress bar on stderr and a history of global quantities.

``progress`` adapts how often it is called to the measured step rate, so it interrupts the
compute loop about twice a second whatever the domain size: a one-step schedule would break the
batches the GPU engine runs between results calls.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import TextIO

import attrs

from thelma_py.files import atomic_write_text, ensure_writable_dir
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule


@attrs.define
class WallClockSchedule:
    """Due at ``next_step``, which the owner moves on after each call (see :class:`Progress`)."""

    next_step: int = 0

    def due(self, step: int) -> bool:
        return step >= self.next_step

    def next_after(self, step: int) -> int:
        return max(self.next_step, step + 1)


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


@register("results", "progress")
@attrs.define(kw_only=True)
class Progress(Results):
    """One-line progress bar on stderr: step/total, MLUPS (wall clock), ETA.

    Silent when stderr is not a terminal, unless ``force``.
    """

    supports_distributed = True  # reads only the step count and the clock

    interval: float = attrs.field(default=0.5, validator=attrs.validators.gt(0.0))
    """Least wall time between two updates of the line [s]."""
    force: bool = False
    """Draw even when the stream is not a terminal (log files, tests)."""
    stream: TextIO | None = None
    """Where to draw; None means ``sys.stderr`` at run time."""
    width: int = attrs.field(default=30, validator=attrs.validators.ge(0))
    """Bar width in characters (0: numbers only)."""
    clock_schedule: WallClockSchedule = attrs.field(
        factory=WallClockSchedule, init=False, repr=False
    )
    _active: bool = attrs.field(default=False, init=False, repr=False)
    _begin: tuple[int, float] = attrs.field(default=(0, 0.0), init=False, repr=False)
    _last: tuple[int, float] = attrs.field(default=(0, 0.0), init=False, repr=False)
    _end: int = attrs.field(default=0, init=False, repr=False)
    _drawn: bool = attrs.field(default=False, init=False, repr=False)
    _width_drawn: int = attrs.field(default=0, init=False, repr=False)

    @property
    def schedule(self) -> WallClockSchedule | None:
        """None while silent, so that a silent bar never splits the compute batches."""
        return self.clock_schedule if self._active else None

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def begin_run(self, solver, end_step: int) -> None:
        stream = self._out()
        self._active = self.force or (hasattr(stream, "isatty") and stream.isatty())
        now = time.perf_counter()
        self._begin = self._last = (solver.time_step, now)
        self._end = end_step
        self.clock_schedule.next_step = min(solver.time_step + 1, end_step)

    def __call__(self, solver) -> None:
        if not self._active:
            return
        step, now = solver.time_step, time.perf_counter()
        last_step, last_time = self._last
        if step > last_step and now > last_time:
            # aim the next call one interval ahead at the rate just measured
            stride = max(1, int((step - last_step) * self.interval / (now - last_time)))
        else:
            stride = 1
        # the last call of a run lands exactly on its end step, so the bar ends at 100 %
        self.clock_schedule.next_step = min(step + stride, max(self._end, step + 1))
        if step < self._end and now - last_time < self.interval and self._drawn:
            return
        self._last = (step, now)
        self._draw(solver, step, now)

    def _draw(self, solver, step: int, now: float) -> None:
        begin_step, begin_time = self._begin
        total = max(self._end - begin_step, 1)
        done = step - begin_step
        elapsed = now - begin_time
        rate = done / elapsed if elapsed > 0 else math.nan  # steps per second
        mlups = rate * solver.node_count / 1e6
        eta = (self._end - step) / rate if rate > 0 else math.inf
        fraction = min(max(done / total, 0.0), 1.0)
        filled = int(round(self.width * fraction))
        bar = f"[{'#' * filled}{'.' * (self.width - filled)}] " if self.width else ""
        line = (
            f"{bar}{step}/{self._end} {100 * fraction:5.1f}%  {mlups:8.2f} MLUPS  "
            f"ETA {_duration(eta)}  elapsed {_duration(elapsed)}"
        )
        padded = line.ljust(self._width_drawn)  # blank out the rest of a longer previous line
        self._width_drawn = len(line)
        stream = self._out()
        stream.write("\r" + padded + ("\n" if step >= self._end else ""))
        stream.flush()
        self._drawn = step < self._end
        if not self._drawn:
            self._width_drawn = 0

    def finish(self, solver) -> None:
        """End the line if a run was interrupted mid-bar."""
        if self._active and self._drawn:
            self._out().write("\n")
            self._out().flush()
            self._drawn, self._width_drawn = False, 0


HISTORY_COLUMNS = ("step", "mean_rho", "max_speed", "kinetic_energy")


@register("results", "history")
@attrs.define(kw_only=True)
class History(Results):
    """Global quantities over the fluid nodes every N steps: mean ρ, max |u|, kinetic energy.

    Kinetic energy is Σ ½ ρ |u|² over fluid nodes (lattice units). Records are kept in
    ``records`` and, with ``path``, rewritten atomically to a CSV file after each one. In a
    distributed run the sums and the maximum are reduced over the ranks (every rank keeps the
    same records) and rank 0 writes the file.
    """

    supports_distributed = True

    schedule: Every = attrs.field(
        alias="every",
        default=100,
        converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to record: every N steps (an int) or an :class:`~thelma_py.schedule.Every`."""
    path: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    """Optional CSV file (its directory is created by :meth:`start`)."""
    records: list[tuple[int, float, float, float]] = attrs.field(
        factory=list, init=False, repr=False
    )
    """(step, mean rho, max |u|, kinetic energy) per call, in order."""
    _fluid: object = attrs.field(default=None, init=False, repr=False)

    def start(self, solver) -> None:
        if self.path is not None and solver.lead:
            ensure_writable_dir(self.path.parent, who="history results")
        self._fluid = solver.backend.to_device(solver.tags.fluid)

    def __call__(self, solver) -> None:
        if self._fluid is None:
            self.start(solver)
        rho, u = solver.engine.macroscopic()  # reduced on the device; four scalars come back
        xp = solver.backend.xp
        fluid = self._fluid
        usq = (u * u).sum(axis=0)
        count, mass, energy = solver.reduce([
            float(fluid.sum()),
            float(xp.where(fluid, rho, 0).sum()),
            float(0.5 * xp.where(fluid, rho * usq, 0).sum()),
        ])
        (max_speed,) = solver.reduce([float(xp.sqrt(xp.where(fluid, usq, 0).max()))], op="max")
        record = (
            int(solver.time_step),
            float(mass) / max(int(count), 1),
            float(max_speed),
            float(energy),
        )
        self.records = [r for r in self.records if r[0] != record[0]] + [record]
        if self.path is not None and solver.lead:
            atomic_write_text(self.path, self.csv())

    def csv(self) -> str:
        """The records as CSV text with a header row."""
        rows = [",".join(HISTORY_COLUMNS)]
        rows += [
            f"{step},{rho!r},{speed!r},{energy!r}" for step, rho, speed, energy in self.records
        ]
        return "\n".join(rows) + "\n"

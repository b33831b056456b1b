"""Per-step timing record and its spectrum: is the step time steady, or does it pulse?

Every N steps the ``timings`` plug-in records the mean compute time per step of the last N
steps (compute time only, results excluded). At the end it prints mean, spread and the dominant
period of the record (numpy FFT), which points at periodic disturbances such as output,
garbage collection or another process sharing the device.

In a distributed run every rank times its own batches and each record keeps the slowest rank's
time (the ranks wait for each other in the halo exchange, so the maximum is the run's wall
time per step); every rank holds the same records, rank 0 writes and prints them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import attrs
import numpy as np

from thelma_py.files import atomic_write_text, ensure_writable_dir
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule


def dominant_period(samples) -> tuple[float, float]:
    """(period in samples, relative amplitude) of the strongest non-constant Fourier mode.

    The amplitude is that of the sinusoid at that frequency divided by the mean.
    ``(nan, 0.0)`` for fewer than 4 samples.

    >>> t = np.arange(64)
    >>> period, amplitude = dominant_period(1.0 + 0.1 * np.sin(2 * np.pi * t / 8))
    >>> round(period, 6), round(amplitude, 6)
    (8.0, 0.1)
    """
    x = np.asarray(samples, dtype=np.float64)
    if len(x) < 4:
        return float("nan"), 0.0
    mean = x.mean()
    spectrum = np.abs(np.fft.rfft(x - mean))
    k = int(np.argmax(spectrum[1:])) + 1
    amplitude = 2.0 * spectrum[k] / len(x) / mean if mean else 0.0
    return len(x) / k, float(amplitude)


@register("results", "timings")
@attrs.define(kw_only=True)
class Timings(Results):
    """Compute time per step, averaged over every N steps; mean, spread and dominant period."""

    supports_distributed = True  # per record the maximum over the ranks; rank 0 writes

    schedule: Every = attrs.field(
        alias="every", default=100, converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """Steps per record (each record is one batch of the run loop at most)."""
    path: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    """Optional CSV file step,seconds_per_step, written at the end."""
    stream: TextIO | None = None
    """Where :meth:`finish` prints the report (None: stdout; False: nowhere)."""
    records: list[tuple[int, float]] = attrs.field(factory=list, init=False, repr=False)
    """(step at the end of the interval, mean compute seconds per step over it)."""
    ranks: int = attrs.field(default=1, init=False, repr=False)
    """MPI ranks whose maximum each record is (1: one domain)."""
    _mark: tuple[int, float] | None = attrs.field(default=None, init=False, repr=False)

    def start(self, solver) -> None:
        box = solver.rank_box
        self.ranks = 1 if box is None else int(box.cart.size)
        if self.path is not None and solver.lead:
            ensure_writable_dir(self.path.parent, who="timings results")

    def __call__(self, solver) -> None:
        mark = (solver.steps_timed, solver.compute_seconds)
        if self._mark is not None and mark[0] > self._mark[0]:
            steps = mark[0] - self._mark[0]  # the same on every rank: all reduce or none
            seconds = float(solver.reduce([(mark[1] - self._mark[1]) / steps], op="max")[0])
            self.records.append((int(solver.time_step), seconds))
        self._mark = mark

    def report(self) -> dict:
        """Mean and standard deviation of the step time, dominant period (records, steps)."""
        times = np.array([t for _, t in self.records])
        period, amplitude = dominant_period(times)
        return {
            "records": len(times),
            "mean_step_seconds": float(times.mean()) if len(times) else None,
            "std_step_seconds": float(times.std()) if len(times) else None,
            "dominant_period_records": period,
            "dominant_period_steps": period * self.schedule.steps,
            "dominant_relative_amplitude": amplitude,
        }

    def text(self) -> str:
        r = self.report()
        if not r["records"]:
            return "timings: no complete interval recorded"
        line = (f"timings: {r['records']} intervals of {self.schedule.steps} steps, step time "
                f"{r['mean_step_seconds'] * 1e6:.1f} ± {r['std_step_seconds'] * 1e6:.1f} µs")
        if self.ranks > 1:
            line += f" (slowest of {self.ranks} ranks)"
        if np.isfinite(r["dominant_period_records"]):
            line += (f"; dominant period {r['dominant_period_records']:.1f} intervals "
                     f"({r['dominant_period_steps']:.0f} steps), amplitude "
                     f"{100 * r['dominant_relative_amplitude']:.1f} % of the mean")
        return line

    def finish(self, solver) -> None:
        if not solver.lead:
            return
        if self.path is not None:
            atomic_write_text(self.path, "step,seconds_per_step\n"
                              + "".join(f"{s},{t!r}\n" for s, t in self.records))
        if self.stream is not False:
            print(self.text(), file=self.stream or sys.stdout, flush=True)

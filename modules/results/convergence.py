"""Residual monitor: how much the velocity still changes, with an optional convergence stop.

Every k steps it records r = ‖u_n − u_{n−k}‖₁ / ‖u_n‖₁ (sums over all nodes and components,
reduced on the device; in a distributed run the two norms are summed over the ranks, so every
rank sees the same r). With ``tolerance``, the first r below it stops the run through
:meth:`Solver.stop` on every rank.
"""

from __future__ import annotations

import math
from pathlib import Path

import attrs

from thelma_py.files import atomic_write_text, ensure_writable_dir
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule


def _check_tolerance(instance, attribute, value) -> None:
    if value is not None and not (isinstance(value, int | float) and 0 < value < math.inf):
        raise ValueError(f"tolerance must be a positive number (e.g. 1e-6) or None for no "
                         f"stop, got {value!r}")


def relative_change(xp, u, previous, reduce=None) -> float:
    """‖u − previous‖₁ / ‖u‖₁ (0 if both are zero, inf if only u is); ``reduce`` (e.g.
    :meth:`Solver.reduce`) sums the two norms over the ranks of a distributed run."""
    norms = (float(xp.abs(u - previous).sum()), float(xp.abs(u).sum()))
    change, size = (float(v) for v in reduce(norms)) if reduce is not None else norms
    if size == 0.0:
        return 0.0 if change == 0.0 else math.inf
    return change / size


@register("results", "residual")
@attrs.define(kw_only=True)
class Residual(Results):
    """Velocity residual ‖u_n − u_(n−k)‖₁/‖u_n‖₁ every k steps; stops the run below tolerance."""

    supports_distributed = True  # global norms through Solver.reduce; rank 0 writes the CSV

    schedule: Every = attrs.field(
        alias="every", default=100, converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """k: steps between the two velocity fields compared (an int or an Every)."""
    tolerance: float | None = attrs.field(default=None, validator=_check_tolerance)
    """Stop the run once the residual falls below this (None: only record)."""
    path: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    """Optional CSV file step,residual, rewritten atomically after each record."""
    records: list[tuple[int, float]] = attrs.field(factory=list, init=False, repr=False)
    """(step, residual) per comparison."""
    converged_at: int | None = attrs.field(default=None, init=False)
    _previous: object = attrs.field(default=None, init=False, repr=False)
    _previous_step: int | None = attrs.field(default=None, init=False, repr=False)

    def start(self, solver) -> None:
        if self.path is not None and solver.lead:
            ensure_writable_dir(self.path.parent, who="residual results")

    def __call__(self, solver) -> None:
        u = solver.engine.macroscopic()[1]
        xp = solver.backend.xp
        step = int(solver.time_step)
        if self._previous is not None and step > self._previous_step:
            residual = relative_change(xp, u, self._previous, solver.reduce)
            self.records.append((step, residual))
            if self.path is not None and solver.lead:
                atomic_write_text(self.path, self.csv())
            if self.tolerance is not None and residual < self.tolerance:
                self.converged_at = step
                solver.stop(f"converged: residual {residual:.3e} < tolerance "
                            f"{self.tolerance:g} at step {step}")
        self._previous, self._previous_step = xp.array(u, copy=True), step

    @property
    def last(self) -> float | None:
        return self.records[-1][1] if self.records else None

    def csv(self) -> str:
        return "step,residual\n" + "".join(f"{s},{r!r}\n" for s, r in self.records)

"""Convergence stops: the velocity residual, and a scalar that has settled.

``residual``: every k steps it records r = ‖u_n − u_{n−k}‖₁ / ‖u_n‖₁ (sums over all nodes and
components, reduced on the device; in a distributed run the two norms are summed over the
ranks, so every rank sees the same r). With ``tolerance``, the first r below it stops the run
through :meth:`Solver.stop` on every rank. Rounding sets a floor under r: a tolerance below
the floor of the run's precision (:data:`RESIDUAL_FLOOR`) gets a warning when the run starts.

``steady``: every N steps it evaluates a scalar of the flow (a drag force, a probe) and stops
the run once the last ``window`` values lie within ``tolerance`` of each other.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
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


RESIDUAL_FLOOR = {"float32": 4e-7, "float64": 7e-16}
"""Per precision, the residual floor times the flow's lattice speed U. Rounding keeps the
velocity of a converged flow changing by about ε / 3 per node, so r levels off near
RESIDUAL_FLOOR / U, whatever k. Measured in float32 (k = 10, 100, 1000 alike): 3.6e-6 to 4.1e-6
(cavity 32², lid speed 0.1), 7.0e-6 to 7.9e-6 (64², 0.05), 3.5e-5 to 4.0e-5 (32², 0.01),
2.3e-6 to 2.9e-6 (Schäfer-Turek 2D-1, n = 10, u_max = 0.1); float64 6e-15 to 2e-14 (cavity,
0.1). A smooth 1D flow (a Poiseuille channel) may instead freeze to r = 0."""

ADVISED_TOLERANCE = {"float32": 1e-4, "float64": 1e-10}
"""Tolerances above the floor down to lattice speeds of 0.004 (float32)."""


def check_reachable(tolerance: float | None, precision: str) -> None:
    """Warn when ``tolerance`` lies below the floor of ``precision`` at lattice speed 0.1 (the
    fastest usual flows, whose floor is the lowest)."""
    floor = RESIDUAL_FLOOR.get(precision)
    if tolerance is None or floor is None or tolerance >= floor / 0.1:
        return
    warnings.warn(f"residual tolerance {tolerance:g} is below the {precision} rounding floor: "
                  f"the residual of a converged {precision} flow levels off near {floor:g} / U "
                  f"at lattice speed U ({floor / 0.1:.0e} at U = 0.1), so this run may never "
                  f"stop on it; use tolerance={ADVISED_TOLERANCE[precision]:g} or more"
                  + (", or precision='float64'" if precision == "float32" else ""), stacklevel=2)


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
        if solver.lead:
            check_reachable(self.tolerance, solver.dtype.name)
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


def relative_spread(values) -> float:
    """(max − min) / |mean| of a sequence (inf if the mean is zero and the values differ)."""
    low, high = min(values), max(values)
    mean = abs(sum(values) / len(values))
    if mean == 0.0:
        return 0.0 if high == low else math.inf
    return (high - low) / mean


@register("results", "steady")
@attrs.define(kw_only=True)
class Steady:
    """Stops the run once a scalar has settled: its last ``window`` values, taken every N
    steps, lie within ``tolerance`` of their mean ((max − min) / |mean| < tolerance).

    Not the change between two checks, which a signal oscillating around its drift (acoustic
    waves in an open channel) can make small by chance: the whole window must be flat, so the
    window should span the slowest oscillation and ``every`` resolve it.
    """

    quantity: Callable = attrs.field(validator=attrs.validators.is_callable(),
                                     repr=lambda f: getattr(f, "__qualname__", repr(f)))
    """What to watch: a function of the solver returning one number (e.g. a drag force)."""
    schedule: Every = attrs.field(
        alias="every", default=100, converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """Steps between two values (an int or an Every)."""
    window: int = attrs.field(default=10, validator=[attrs.validators.instance_of(int),
                                                      attrs.validators.ge(2)])
    """How many of the latest values must agree."""
    tolerance: float | None = attrs.field(default=1e-6, validator=_check_tolerance)
    """Largest relative spread (max − min) / |mean| of the window that counts as settled
    (None: only record)."""
    records: list[tuple[int, float]] = attrs.field(factory=list, init=False, repr=False)
    """(step, value) per evaluation."""
    converged_at: int | None = attrs.field(default=None, init=False)

    def __call__(self, solver) -> None:
        step = int(solver.time_step)
        self.records = [r for r in self.records if r[0] != step] + [
            (step, float(self.quantity(solver)))]
        if self.tolerance is None or len(self.records) < self.window:
            return
        spread = relative_spread([value for _, value in self.records[-self.window:]])
        if spread < self.tolerance:
            self.converged_at = step
            solver.stop(f"steady: {self.window} values over {step - self.records[-self.window][0]}"
                        f" steps within {spread:.2e} < tolerance {self.tolerance:g} at step {step}")

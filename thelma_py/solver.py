"""The solver: composes a lattice, a geometry, an init, a compute and results plug-ins, and runs.

The run loop advances the compute engine in chunks that end exactly on the steps where a
results plug-in is due, so the engine sees long uninterrupted batches and results never force
extra host copies.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import attrs
import numpy as np

from thelma_py.backend import Backend, dtype_of, select_backend
from thelma_py.geometry.domain import Geometry, NodeTags
from thelma_py.lattice import Lattice, lattice_by_name
from thelma_py.modules.init.fields import Equilibrium


class DivergenceError(RuntimeError):
    """The run produced NaN or infinity; the message gives the step and the first bad node."""


def _lattice(value: Lattice | str) -> Lattice:
    return value if isinstance(value, Lattice) else lattice_by_name(value)


@attrs.define(eq=False)
class Solver:
    """A runnable simulation. Build with :func:`compose` or directly.

    ``results`` are results plug-ins (objects with ``schedule``, ``__call__(solver)`` and
    optionally ``start(solver)`` / ``finish(solver)``).
    """

    lattice: Lattice = attrs.field(converter=_lattice)
    geometry: Geometry
    compute: object
    init: object = attrs.field(factory=Equilibrium)
    results: list = attrs.field(factory=list, converter=list)
    device: str = "auto"
    precision: str = "float64"
    check_every: int = attrs.field(default=1000, validator=attrs.validators.ge(0))
    """Steps between NaN checks of the density (0 turns the check off)."""

    dtype: np.dtype = attrs.field(init=False)
    backend: Backend = attrs.field(init=False)
    tags: NodeTags = attrs.field(init=False)
    engine: object = attrs.field(init=False)
    time_step: int = attrs.field(init=False, default=0)
    compute_seconds: float = attrs.field(init=False, default=0.0)
    results_seconds: float = attrs.field(init=False, default=0.0)
    steps_timed: int = attrs.field(init=False, default=0)
    _started: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self.dtype = dtype_of(self.precision)
        self.backend = select_backend(self.device)
        self.tags = self.geometry.evaluate(self.lattice)
        self.engine = self.compute.create(self.lattice, self.tags, self.backend, self.dtype)
        coords = self.geometry.coordinates()
        rho, u = self.init.fields(coords, self.geometry.array_shape)
        self.engine.initialize(self.backend.to_device(rho.astype(self.dtype)),
                               self.backend.to_device(u.astype(self.dtype)))

    # -- information -------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        return self.geometry.node_count

    @property
    def shape(self) -> tuple[int, ...]:
        return self.geometry.shape

    def __repr__(self) -> str:
        lines = [f"Solver({self.lattice.name}, {'x'.join(map(str, self.shape))}, "
                 f"backend={self.backend.name}, {self.dtype.name})",
                 f"  init:    {self.init!r}",
                 f"  compute: {self.compute!r}"]
        lines += [f"  results: {r!r}" for r in self.results]
        return "\n".join(lines)

    # -- fields ------------------------------------------------------------------------------
    def density(self) -> np.ndarray:
        """Host copy of ρ, shape (Nz, Ny, Nx) or (Ny, Nx)."""
        return self.backend.to_host(self.engine.macroscopic()[0])

    def velocity(self) -> np.ndarray:
        """Host copy of u, shape (D, Nz, Ny, Nx) or (D, Ny, Nx); zero in solid nodes."""
        return self.backend.to_host(self.engine.macroscopic()[1])

    def fields(self) -> dict[str, np.ndarray]:
        """Host copies of the standard fields: rho, u and node kind."""
        rho, u = self.engine.macroscopic()
        return {"rho": self.backend.to_host(rho), "u": self.backend.to_host(u),
                "kind": self.tags.kind}

    # -- running -----------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        """Advance ``n`` steps without calling results plug-ins."""
        if n < 0:
            raise ValueError(f"steps must be >= 0, got {n}")
        start = self.backend.clock()
        self.engine.step(n)
        self.compute_seconds += self.backend.clock() - start
        self.steps_timed += n
        self.time_step += n

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        for result in self.results:
            if hasattr(result, "start"):
                result.start(self)
        self._call_due()

    def _call_due(self) -> None:
        start = time.perf_counter()
        for result in self.results:
            schedule = getattr(result, "schedule", None)
            if schedule is not None and schedule.due(self.time_step):
                result(self)
        self.results_seconds += time.perf_counter() - start

    def run(self, steps: int) -> dict:
        """Advance ``steps`` steps, calling results plug-ins when due; returns :meth:`summary`."""
        if not isinstance(steps, int | np.integer) or steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
        self._start()
        end = self.time_step + int(steps)
        for result in self.results:  # optional hook: progress bars need the target step
            if hasattr(result, "begin_run"):
                result.begin_run(self, end)
        while self.time_step < end:
            stops = [end]
            for result in self.results:
                schedule = getattr(result, "schedule", None)
                if schedule is not None:
                    stops.append(schedule.next_after(self.time_step))
            if self.check_every:
                stops.append((self.time_step // self.check_every + 1) * self.check_every)
            target = min(stops)
            self.step(target - self.time_step)
            if self.check_every and self.time_step % self.check_every == 0:
                self.check_finite()
            self._call_due()
        return self.summary()

    def finish(self) -> None:
        """Let results plug-ins close their files (time-series indexes, CSV files)."""
        for result in self.results:
            if hasattr(result, "finish"):
                result.finish(self)

    def check_finite(self) -> None:
        """Raise :class:`DivergenceError` naming the first node where ρ or u is not finite."""
        rho, u = self.engine.macroscopic()
        xp = self.backend.xp
        bad = ~xp.isfinite(rho) | ~xp.isfinite(u).all(axis=0)
        if not bool(bad.any()):
            return
        flat = int(xp.argmax(bad.reshape(-1)))
        index = np.unravel_index(flat, bad.shape)
        position = tuple(int(i) + lo for i, lo in zip(reversed(index), self.tags.lower,
                                                       strict=True))
        raise DivergenceError(
            f"the run diverged: first non-finite value at step {self.time_step}, node "
            f"(x, y{', z' if len(position) == 3 else ''}) = {position}. Lower the lattice "
            "velocity, raise the resolution, or use collision='mrt'.")

    @property
    def mlups(self) -> float:
        """Million lattice-node updates per second over the compute time so far (all nodes)."""
        if self.compute_seconds <= 0:
            return math.nan
        return self.node_count * self.steps_timed / self.compute_seconds / 1e6

    def summary(self) -> dict:
        return {
            "lattice": self.lattice.name,
            "shape": list(self.shape),
            "backend": self.backend.describe(),
            "precision": self.dtype.name,
            "steps": self.time_step,
            "compute_seconds": round(self.compute_seconds, 6),
            "results_seconds": round(self.results_seconds, 6),
            "mlups": round(self.mlups, 3),
            "bytes_per_node": self.engine.traffic_bytes_per_node,
        }


def compose(lattice: Lattice | str, geometry: Geometry, compute, init=None,
            results: Sequence = (), device: str = "auto", precision: str = "float64",
            check_every: int = 1000) -> Solver:
    """Build a :class:`Solver` from plug-ins (see :func:`thelma_py.plugin`)."""
    return Solver(lattice=lattice, geometry=geometry, compute=compute,
                  init=init if init is not None else Equilibrium(), results=list(results),
                  device=device, precision=precision, check_every=check_every)

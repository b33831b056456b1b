"""Point probes and line profiles written as CSV files (atomically) every N steps.

``probes`` follows a few nodes over time (one CSV, one row per output step); ``profile`` samples
a whole line of nodes along one axis through a point (one CSV per output step). Coordinates are
global node indices (x, y[, z]). Values are read on the device and only the samples are copied.
"""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import numpy as np

from thelma_py.files import atomic_write_text, ensure_writable_dir
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule

PROBE_FIELDS = ("rho", "p", "u", "speed")


def _check_fields(instance, attribute, value) -> None:
    unknown = [name for name in value if name not in PROBE_FIELDS]
    if unknown or not value:
        raise ValueError(f"{attribute.name} must be a non-empty subset of {PROBE_FIELDS}, "
                         f"got {value!r}")


def _points(value) -> tuple[tuple[int, ...], ...]:
    try:
        points = tuple(tuple(int(c) for c in point) for point in value)
    except (TypeError, ValueError):
        raise ValueError(f"points must be a list of node coordinates (x, y[, z]), got "
                         f"{value!r}") from None
    if not points or any(len(p) not in (2, 3) for p in points):
        raise ValueError(f"points must be a non-empty list of (x, y[, z]) node indices, "
                         f"got {value!r}")
    return points


def _local_index(solver, point: tuple[int, ...], who: str) -> tuple[int, ...] | None:
    """Array index (z, y, x) of a global node in this rank's arrays, None where another rank
    owns it; the node must lie in the (global) domain."""
    shape = tuple(solver.shape)
    if len(point) != len(shape):
        raise ValueError(f"{who}: point {point} has {len(point)} coordinates, the domain is "
                         f"{len(shape)}D")
    if any(not 0 <= p < n for p, n in zip(point, shape, strict=True)):
        raise ValueError(f"{who}: point {point} lies outside the nodes {(0,) * len(shape)}.."
                         f"{tuple(n - 1 for n in shape)}")
    local = tuple(p - lo for p, lo in zip(point, solver.tags.lower, strict=True))
    if any(not 0 <= i < n for i, n in zip(local, solver.tags.tags.shape[::-1], strict=True)):
        return None
    return tuple(reversed(local))


def sample(solver, index: tuple, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Host values of ``fields`` at an array index of the node arrays (u gives ux, uy[, uz])."""
    at = getattr(solver.engine, "macroscopic_at", None)  # 16-bit LBM: only these nodes
    if at is None:
        rho, u = solver.engine.macroscopic()
        rho, u = rho[index], u[(slice(None), *index)]
    else:
        rho, u = at(index)
    host = solver.backend.to_host
    r = np.asarray(host(rho), dtype=np.float64)
    v = np.asarray(host(u), dtype=np.float64)
    out = {}
    for name in fields:
        if name == "rho":
            out["rho"] = r
        elif name == "p":
            out["p"] = (r - 1.0) / 3.0
        elif name == "speed":
            out["speed"] = np.sqrt((v**2).sum(axis=0))
        else:
            for axis, component in zip("xyz", v, strict=False):
                out[f"u{axis}"] = component
    return out


def _number(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "nan"


@register("results", "probes")
@attrs.define(kw_only=True)
class Probes(Results):
    """Values at a few nodes every N steps, one CSV row per step: step, <field>_x<i>_y<j>...
    (without ``path``, the rows are kept in :attr:`rows` only).

    In a distributed run each point is sampled by the rank that owns it, the rows are summed
    over the ranks (the others add zeros) and rank 0 writes the file."""

    supports_distributed = True

    points: tuple = attrs.field(converter=_points)
    """Node coordinates (x, y[, z]), global indices."""
    path: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    """CSV file (its directory is created by :meth:`start`), rewritten at each sample; None:
    no file."""
    fields: tuple[str, ...] = attrs.field(default=("rho", "u"), converter=tuple,
                                          validator=_check_fields)
    """Which of rho, p = (ρ − 1)/3, u (components), speed."""
    schedule: Every = attrs.field(
        alias="every", default=100, converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to sample: every N steps (an int) or an Every."""
    columns: list[str] = attrs.field(factory=list, init=False, repr=False)
    rows: list[tuple[int, list[float]]] = attrs.field(factory=list, init=False, repr=False)
    _order: list[str] = attrs.field(factory=list, init=False, repr=False)
    _index: tuple | None = attrs.field(default=None, init=False, repr=False)
    _owned: list[int] = attrs.field(factory=list, init=False, repr=False)
    """Which of ``points`` this rank owns (all of them in one domain)."""

    def start(self, solver) -> None:
        if self.path is not None and solver.lead:
            ensure_writable_dir(self.path.parent, who="probes results")
        local = [_local_index(solver, p, "probes") for p in self.points]
        self._owned = [k for k, index in enumerate(local) if index is not None]
        self._index = tuple(np.array([local[k][a] for k in self._owned], dtype=np.intp)
                            for a in range(len(solver.shape)))

    def __call__(self, solver) -> None:
        if self._index is None:
            self.start(solver)
        values = sample(solver, self._index, self.fields)
        if not self.columns:
            self.columns = ["step"] + [
                f"{name}_" + "_".join(f"{a}{c}" for a, c in zip("xyz", point, strict=False))
                for point in self.points for name in values]
            self._order = list(values)
        table = np.zeros((len(self.points), len(self._order)))
        table[self._owned] = np.stack([values[name] for name in self._order], axis=-1)
        row = [float(v) for v in solver.reduce(table).reshape(-1)]
        step = int(solver.time_step)
        if self.rows and self.rows[-1][0] == step:  # sampled again at the end of a run
            self.rows[-1] = (step, row)
        else:
            self.rows.append((step, row))
        if self.path is not None and solver.lead:
            atomic_write_text(self.path, self.csv())

    def csv(self) -> str:
        lines = [",".join(self.columns)]
        lines += [",".join([str(step)] + [_number(v) for v in row]) for step, row in self.rows]
        return "\n".join(lines) + "\n"

    def state_dict(self) -> dict:
        return {"rows": [[step, row] for step, row in self.rows]}

    def load_state_dict(self, state: dict) -> None:
        self.rows = [(int(step), [float(v) for v in row]) for step, row in state.get("rows", [])]


@register("results", "profile")
@attrs.define(kw_only=True)
class Profile(Results):
    """A line of nodes along ``axis`` through ``through``, as <path>/<prefix>_<step>.csv.

    In a distributed run each rank samples the part of the line it owns and rank 0 gathers
    the parts and writes the file (the same bytes as one domain)."""

    supports_distributed = True

    axis: str = attrs.field(validator=attrs.validators.in_(("x", "y", "z")))
    """Direction of the line: x, y or z."""
    through: tuple = attrs.field(converter=lambda p: _points([p])[0])
    """A node (x, y[, z]) on the line (global indices; its coordinate along axis is ignored)."""
    path: Path = attrs.field(converter=Path)
    """Output directory."""
    fields: tuple[str, ...] = attrs.field(default=("rho", "u"), converter=tuple,
                                          validator=_check_fields)
    """Which of rho, p, u (components), speed."""
    schedule: Every = attrs.field(
        alias="every", default=1000, converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to write: every N steps (an int) or an Every."""
    prefix: str = attrs.field(default="profile", validator=attrs.validators.min_len(1))
    """File name stem."""
    written: list[Path] = attrs.field(factory=list, init=False, repr=False)
    _index: tuple | None = attrs.field(default=None, init=False, repr=False)
    _coordinate: np.ndarray | None = attrs.field(default=None, init=False, repr=False)

    def start(self, solver) -> None:
        if solver.lead:
            ensure_writable_dir(self.path, who="profile results")
        axis = "xyz".index(self.axis)
        if axis >= len(self.through):
            raise ValueError(f"profile: axis {self.axis!r} does not exist in a "
                             f"{len(self.through)}D domain")
        _local_index(solver, self.through, "profile")  # refuses a point outside the domain
        # the line's node in this rank's first layer along the axis (None: not on this rank)
        first = list(self.through)
        first[axis] = solver.tags.lower[axis]
        local = _local_index(solver, tuple(first), "profile")
        if local is None:  # samples nothing, still joins the gather
            self._index = tuple(np.zeros(0, dtype=np.intp) for _ in first)
            self._coordinate = np.zeros(0, dtype=np.int64)
            return
        index = list(local)
        array_axis = len(index) - 1 - axis
        index[array_axis] = slice(None)
        self._index = tuple(index)
        self._coordinate = np.arange(solver.tags.tags.shape[array_axis]) + first[axis]

    def __call__(self, solver) -> None:
        if self._index is None:
            self.start(solver)
        values = sample(solver, self._index, self.fields)
        pieces = solver.gather((self._coordinate, values))
        if pieces is None:  # the lead rank writes the whole line
            return
        coordinate = np.concatenate([c for c, _ in pieces])
        order = np.argsort(coordinate, kind="stable")
        names = list(values)
        columns = {n: np.concatenate([v[n] for _, v in pieces])[order] for n in names}
        lines = [",".join([self.axis, *names])]
        for k, c in enumerate(coordinate[order]):
            lines.append(",".join([str(int(c))] + [_number(columns[n][k]) for n in names]))
        target = self.path / f"{self.prefix}_{int(solver.time_step):08d}.csv"
        atomic_write_text(target, "\n".join(lines) + "\n")
        self.written = [p for p in self.written if p != target] + [target]

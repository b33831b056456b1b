"""Forces on solid bodies (momentum exchange) every N steps: CSV written atomically and a
``history`` list in Python.

Columns: step, then per body b: Fx_b, Fy_b[, Fz_b], cD_b, cL_b with
c = 2 F / (ρ_ref U_ref² A_ref): drag along ``drag_axis``, lift along ``lift_axis``. In 2D the
force is per unit depth and ``area`` is the reference length (the diameter).

In a distributed run each rank sums the links of the nodes it owns, the sums are added over
the ranks (every rank holds the same history) and rank 0 writes the CSV.
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


def _bodies(value):
    if value is None:
        return None
    return tuple(int(b) for b in value)


@register("results", "forces")
@attrs.define(kw_only=True)
class Forces(Results):
    """Momentum-exchange force on each body (boundary id) every N steps, with c_D and c_L."""

    supports_distributed = True  # owned links per rank, summed over the ranks; rank 0 writes

    bodies: tuple | None = attrs.field(default=None, converter=_bodies)
    """Boundary ids to report (default: every id that owns a wall link, 0 = walls at rest)."""
    path: Path | None = attrs.field(default=None, converter=lambda p: None if p is None
                                    else Path(p))
    """CSV file (None: keep the history in memory only)."""
    schedule: Every = attrs.field(alias="every", default=100, converter=as_schedule,
                                  validator=attrs.validators.instance_of(Every))
    """When to compute: every N steps (an int) or an Every."""
    velocity: float = attrs.field(default=1.0, validator=attrs.validators.gt(0.0))
    """Reference velocity U_ref (lattice units)."""
    rho: float = attrs.field(default=1.0, validator=attrs.validators.gt(0.0))
    """Reference density ρ_ref."""
    area: float = attrs.field(default=1.0, validator=attrs.validators.gt(0.0))
    """Reference area (3D) or length (2D), lattice units."""
    drag_axis: int = attrs.field(default=0, validator=attrs.validators.in_((0, 1, 2)))
    lift_axis: int = attrs.field(default=1, validator=attrs.validators.in_((0, 1, 2)))
    history: list[dict] = attrs.field(factory=list, init=False, repr=False)
    """One dict per output: {'step': n, b: {'F': array, 'cD': .., 'cL': ..}, ...}."""
    columns: list[str] = attrs.field(factory=list, init=False, repr=False)

    def start(self, solver) -> None:
        if self.path is not None and solver.lead:
            ensure_writable_dir(self.path.parent, who="forces results")

    def coefficients(self, force: np.ndarray) -> tuple[float, float]:
        scale = 0.5 * self.rho * self.velocity**2 * self.area
        lift = float(force[self.lift_axis]) if self.lift_axis < len(force) else math.nan
        return float(force[self.drag_axis]) / scale, lift / scale

    def __call__(self, solver) -> None:
        from thelma_py.modules.compute.lbm.forces import forces

        values = forces(solver.engine, self.bodies)
        step = int(solver.time_step)
        record = {"step": step}
        for body, force in sorted(values.items()):
            cd, cl = self.coefficients(force)
            record[body] = {"F": np.asarray(force, dtype=np.float64), "cD": cd, "cL": cl}
        if not self.columns:
            dim = solver.lattice.d
            self.columns = ["step"] + [f"{name}_{body}" for body in sorted(values)
                                       for name in [*(f"F{a}" for a in "xyz"[:dim]), "cD", "cL"]]
        if self.history and self.history[-1]["step"] == step:  # sampled again at a run's end
            self.history[-1] = record
        else:
            self.history.append(record)
        if self.path is not None and solver.lead:
            atomic_write_text(self.path, self.csv())

    def csv(self) -> str:
        lines = [",".join(self.columns)]
        for record in self.history:
            row = [str(record["step"])]
            for body in (k for k in record if k != "step"):
                entry = record[body]
                row += [repr(float(v)) for v in entry["F"]] + [repr(entry["cD"]),
                                                              repr(entry["cL"])]
            lines.append(",".join(row))
        return "\n".join(lines) + "\n"

    def state_dict(self) -> dict:
        return {"history": [{"step": r["step"], "bodies": {
            str(b): [list(map(float, e["F"])), e["cD"], e["cL"]] for b, e in r.items()
            if b != "step"}} for r in self.history]}

    def load_state_dict(self, state: dict) -> None:
        self.history = [{"step": int(r["step"]), **{
            int(b): {"F": np.array(v[0]), "cD": float(v[1]), "cL": float(v[2])}
            for b, v in r["bodies"].items()}} for r in state.get("history", [])]

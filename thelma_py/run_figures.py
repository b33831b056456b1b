"""Run figures: the step rate over the compute time and per batch, and the run summary."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from thelma_py.solver import Solver


def mlups(nodes: int, steps: int, seconds: float) -> float:
    """Million lattice-node updates per second (NaN before any timed step)."""
    if seconds <= 0:
        return math.nan
    return nodes * steps / seconds / 1e6


def batch_mlups(nodes: int, batch_times: list[tuple[int, float]]) -> np.ndarray:
    """MLUPS of every timed engine batch (batches of zero duration left out)."""
    rates = [nodes * n / t / 1e6 for n, t in batch_times if n and t > 0]
    return np.asarray(rates, dtype=np.float64)


def summary(solver: Solver) -> dict:
    """Run figures: MLUPS over the compute time and its mean/spread over batches, time in
    results (output), bytes per node and, where the backend measured its copy bandwidth,
    the fraction of it this run reached (None otherwise)."""
    rates = solver.batch_mlups()
    rate = solver.mlups
    bandwidth = solver.backend.copy_bandwidth  # bytes/s, if measured
    # per lattice node, like the MLUPS: sparse engines count per stored (fluid) node
    traffic = solver.engine.traffic_bytes_per_node * solver.engine.stored_fraction
    fraction = (None if not bandwidth or not math.isfinite(rate)
                else round(rate * 1e6 * traffic / bandwidth, 4))
    return {
        "lattice": solver.lattice.name,
        "shape": list(solver.shape),
        "backend": solver.backend.describe(),
        "precision": solver.dtype.name,
        "steps": solver.steps_timed,  # computed by this solver (not since step 0: resumed)
        "time_step": solver.time_step,
        "compute_seconds": round(solver.compute_seconds, 6),
        "results_seconds": round(solver.results_seconds, 6),
        "mlups": round(rate, 3),
        "mlups_batch_mean": round(float(rates.mean()), 3) if len(rates) else None,
        "mlups_batch_std": round(float(rates.std()), 3) if len(rates) else None,
        "batches": len(rates),
        "bytes_per_node": traffic,
        "copy_bandwidth_fraction": fraction,
        "stopped": solver.stop_reason,
    }

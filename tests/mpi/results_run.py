"""Run under mpiexec: residual, history and probes reduced over the ranks equal one domain.

    mpiexec -n 2 python tests/mpi/results_run.py OUT_DIR 2x1
runs the set-up of decomposed_run.py with the three plug-ins distributed (CSV files in
OUT_DIR/parts) and in one domain (OUT_DIR/whole), and checks: probes bit for bit, history and
residual to 1e-12, the convergence stop at the same step on every rank. Rank 0 prints 'equal'.
"""

import sys
from pathlib import Path

import numpy as np
from decomposed_run import build
from mpi4py import MPI

import thelma_py as tp

STEPS, EVERY = 200, 20
POINTS = [(3, 4), (16, 11), (29, 21), (12, 17), (22, 2)]


def results(out: Path, tolerance):
    return [tp.plugin("results", "residual", every=EVERY, tolerance=tolerance,
                      path=out / "residual.csv"),
            tp.plugin("results", "history", every=EVERY, path=out / "history.csv"),
            tp.plugin("results", "probes", points=POINTS, every=EVERY, fields=("rho", "u", "p"),
                      path=out / "probes.csv")]


def run(out: Path, tolerance, **kwargs):
    plugins = results(out, tolerance)
    solver = build("D2Q9", "bgk", results=plugins, **kwargs)
    solver.run(STEPS)
    return solver, plugins


def main(out: str, dims: str) -> int:
    comm, out = MPI.COMM_WORLD, Path(out)
    # a tolerance half-way through the run, from a one-domain run of every rank
    free = build("D2Q9", "bgk", comm=MPI.COMM_SELF,
                 results=[tp.plugin("results", "residual", every=EVERY)])
    free.run(STEPS)
    tolerance = free.results[0].records[4][1] * (1 + 1e-6)
    stop = next(step for step, r in free.results[0].records if r < tolerance)
    parts, (residual, history, probes) = run(out / "parts", tolerance, decomposition=dims,
                                             comm=comm)
    steps = comm.allgather(parts.time_step)
    assert steps == [stop] * comm.size, f"stopped at {steps}, one domain at {stop}"
    assert all(r.records == residual.records for r in comm.allgather(residual)), "ranks differ"
    if comm.rank != 0:
        return 0
    whole, (w_residual, w_history, w_probes) = run(out / "whole", tolerance, comm=MPI.COMM_SELF)
    assert whole.time_step == stop
    assert (out / "parts" / "probes.csv").read_text() == (out / "whole" / "probes.csv").read_text()
    assert probes.rows == w_probes.rows and len(probes.rows) == stop // EVERY + 1
    for mine, theirs in ((residual.records, w_residual.records),
                         (history.records, w_history.records)):
        assert len(mine) == len(theirs) >= 3, (mine, theirs)
        np.testing.assert_allclose(np.array(mine), np.array(theirs), rtol=1e-12, atol=0)
    lines = (out / "parts" / "history.csv").read_text().splitlines()
    assert len(lines) == len(history.records) + 1
    print(f"equal: residual, history, probes on {dims}, {comm.size} ranks, stop at {stop}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

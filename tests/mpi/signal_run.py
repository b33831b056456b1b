"""Run under mpiexec: SIGTERM reaches rank 0 only; every rank must stop at the same step with a
checkpoint written, and none may hang. Prints 'stopped together at step N' on rank 0."""

import contextlib
import signal
import sys

from mpi4py import MPI

import thelma_py as tp
from thelma_py.solver import RunInterrupted


class SignalRankZero:
    """A results plug-in that sends SIGTERM to its own process on rank 0 at one step."""

    supports_distributed = True

    def __init__(self, step: int):
        self.schedule = tp.Every(step, at_start=False)

    def __call__(self, solver) -> None:
        if solver.rank_box.cart.rank == 0 and solver.time_step == self.schedule.steps:
            signal.raise_signal(signal.SIGTERM)


def main(path: str) -> int:
    comm = MPI.COMM_WORLD
    geo = tp.geometry.cavity((24, 16), (0.05, 0.0))
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05), device="cpu",
                        check_every=10, comm=comm,
                        results=[SignalRankZero(20),
                                 tp.plugin("results", "checkpoint", path=path, every=1000)])
    with contextlib.suppress(RunInterrupted):
        solver.run(100)
    steps = comm.gather(solver.time_step, root=0)
    if comm.rank == 0:
        if len(set(steps)) != 1:
            print(f"ranks stopped at different steps: {steps}")
            return 1
        print(f"stopped together at step {steps[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""Run under mpiexec: the statistics plug-in distributed equals one domain, and resumes.

    mpiexec -n 2 python tests/mpi/statistics_run.py OUT_DIR 2x1
runs the set-up of decomposed_run.py with ``statistics`` (every 10 steps from step 20, 100
steps) on the decomposition (files in OUT_DIR/parts), stopped at step 50 into a checkpoint and
resumed (OUT_DIR/resumed), and in one domain on rank 0 (OUT_DIR/whole). It checks, bit for
bit: every array of the .pvti as ParaView reads it against the one domain's .vti, and each
rank's sums after the resume against the straight run's. Rank 0 prints 'equal'.
"""

import sys
from pathlib import Path

import numpy as np
from decomposed_run import build
from mpi4py import MPI
from pieces import read_with_vtk

import thelma_py as tp

STEPS = 100


def statistics(out: Path):
    return tp.plugin("results", "statistics", path=out, every=10, begin=20, precision="float64")


def main(out: str, dims: str) -> int:
    comm, out = MPI.COMM_WORLD, Path(out)
    parts = statistics(out / "parts")
    straight = build("D2Q9", "bgk", results=[parts], decomposition=dims, comm=comm)
    straight.run(STEPS)
    straight.finish()

    first = statistics(out / "resumed")
    checkpoint = tp.plugin("results", "checkpoint", path=out / "ck", every=50)
    build("D2Q9", "bgk", results=[first, checkpoint], decomposition=dims, comm=comm).run(50)
    second = statistics(out / "resumed")
    resumed = build("D2Q9", "bgk", results=[second], decomposition=dims, comm=comm)
    resumed.load_checkpoint(out / "ck")
    resumed.run(STEPS - 50)
    assert second.samples == parts.samples == 9, (second.samples, parts.samples)
    for name, value in parts.fields(straight).items():
        assert np.array_equal(second.fields(resumed)[name], value), f"rank {comm.rank}: {name}"
    comm.Barrier()
    if comm.rank != 0:
        return 0

    whole_stats = statistics(out / "whole")
    whole = build("D2Q9", "bgk", results=[whole_stats], comm=MPI.COMM_SELF)
    whole.run(STEPS)
    whole.finish()
    _, joined = read_with_vtk(out / "parts" / "statistics.pvti")
    _, single = read_with_vtk(out / "whole" / "statistics.vti")
    assert set(joined) == set(single) == {"rho_mean", "u_mean", "reynolds_stress", "u_rms",
                                          "tke"}
    for name, value in single.items():
        assert value.any(), name
        assert np.array_equal(joined[name], value), name
    print(f"equal: statistics on {dims}, {comm.size} ranks, {parts.samples} samples, resumed "
          "bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

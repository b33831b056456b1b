"""Run under mpiexec: distributed checkpoints restart bit for bit, on their decomposition only.

    mpiexec -n 2 python tests/mpi/checkpoint_run.py restart DIR 2x1 1x2 [SCHEME]
runs 60 steps with a checkpoint every 30 into DIR, restarts a fresh solver from step 30 and
compares it after step 60 with the uninterrupted run and with one domain (bit for bit), then
checks that decomposition 1x2 refuses the checkpoint on every rank. SCHEME: an LBM collision
(default trt) or an LW-ACM plug-in (lwacm, lwacm-fused), as in decomposed_run.py.

    mpiexec -n 4 python tests/mpi/checkpoint_run.py refuse DIR 2x2
checks that a checkpoint of DIR (written on another rank count) is refused on every rank.
Rank 0 prints 'identical' / 'refused: MESSAGE'; any failure exits non-zero.
"""

import sys
from pathlib import Path

import numpy as np
from decomposed_run import build
from mpi4py import MPI

import thelma_py as tp
from thelma_py.checkpoints import CheckpointError


def solver(dims: str, results=(), scheme: str = "trt"):
    return build("D2Q9", scheme, decomposition=dims, comm=MPI.COMM_WORLD, results=list(results))


def gathered(run) -> dict:
    """Global state arrays of a distributed run, on rank 0 (None elsewhere)."""
    box, state = run.rank_box, run.engine.state()
    pieces = MPI.COMM_WORLD.gather((box.lower, box.shape, state), root=0)
    if pieces is None:
        return None
    shape = tuple(reversed(run.shape))
    fields = {k: v for k, v in state.items() if v.ndim}  # 0-d entries (the store) are labels
    whole = {k: np.zeros(v.shape[:v.ndim - len(shape)] + shape, v.dtype) for k, v in fields.items()}
    whole.update({k: v for k, v in state.items() if not v.ndim})
    for lower, sub, part in pieces:
        window = tuple(slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(sub),
                                                          strict=True))
        for key in fields:
            whole[key][(Ellipsis, *window)] = part[key]
    return whole


def refused(root: Path, dims: str) -> str:
    try:
        solver(dims).load_checkpoint(root)
    except CheckpointError as error:
        return str(error)
    raise AssertionError(f"decomposition {dims} loaded a checkpoint of another decomposition")


def restart(root: Path, dims: str, other: str, scheme: str = "trt") -> None:
    checkpoint = tp.plugin("results", "checkpoint", path=root, every=30, keep=5)
    straight = solver(dims, [checkpoint], scheme)
    straight.run(60)
    reference = gathered(straight)
    resumed = solver(dims, scheme=scheme)
    assert resumed.load_checkpoint(root / "step_0000000030") == 30
    resumed.run(30)
    state = gathered(resumed)
    if MPI.COMM_WORLD.rank == 0:
        whole = build("D2Q9", scheme, comm=MPI.COMM_SELF)
        whole.run(60)
        for key, value in whole.engine.state().items():
            assert np.array_equal(state[key], reference[key]), f"{key}: restart != uninterrupted"
            assert np.array_equal(state[key], value), f"{key}: restart != one domain"
        assert sorted(p.name for p in (root / "step_0000000060").iterdir()) == [
            "meta.json", *(f"rank_{r}.npz" for r in range(MPI.COMM_WORLD.size))]
        assert (root / "latest").read_text().strip() == "step_0000000060"
        print(f"identical: restart at 30 of {dims} on {MPI.COMM_WORLD.size} ranks ({scheme})")
    message = refused(root, other)
    if MPI.COMM_WORLD.rank == 0:
        print(f"refused: {message}")


if __name__ == "__main__":
    mode, root, *dims = sys.argv[1:]
    if mode == "restart":
        restart(Path(root), *dims)
    else:
        message = refused(Path(root), dims[0])
        if MPI.COMM_WORLD.rank == 0:
            print(f"refused: {message}")

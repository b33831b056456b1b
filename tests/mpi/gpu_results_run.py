"""Run under mpiexec on GPUs: the writers of a decomposed CUDA run against one GPU.

    mpiexec -n 2 python -m mpi4py tests/mpi/gpu_results_run.py OUT_DIR [DIMS]
runs the 'lid' set-up of gpu_decomposed_run.py (fp64, TRT) with the vtk writer, the image
slices and views of image_run.py and the statistics plug-in, distributed (OUT_DIR/parts) and
on one GPU (OUT_DIR/whole, rank 0). On a GPU ρ and u of a rank's piece are device arrays, which
each writer must copy to the host itself. Checks: every array of every .vti piece (vtk and
statistics) equals the same window of the one-GPU file bit for bit; the images agree to one
colour level (the one GPU colours on the device, the ranks' images are coloured on the host).
Rank 0 prints 'equal' and exits 0; a difference exits 1.
"""

import sys
from pathlib import Path

import numpy as np
from gpu_decomposed_run import build
from image_run import images
from mpi4py import MPI
from pieces import read_builtin_vti

import thelma_py as tp
from thelma_py.modules.results.png import read_png

STEPS = 40


def writers(out: Path) -> list:
    return [tp.plugin("results", "vtk", path=out, every=STEPS, compression="none"),
            tp.plugin("results", "statistics", path=out, every=5, begin=10,
                      precision="float64", compression="none"),
            *images(out)]


def window(extent) -> tuple[slice, ...]:
    return tuple(slice(extent[2 * a], extent[2 * a + 1] + 1) for a in (2, 1, 0))


def compare_pieces(out: Path, stem: str, whole_name: str) -> int:
    """Pieces ``<stem>_r<k>.vti`` against the window of the one-GPU file; the count of pieces."""
    _, whole = read_builtin_vti(out / "whole" / whole_name)
    pieces = sorted((out / "parts").glob(f"{stem}_r*.vti"))
    for path in pieces:
        extent, arrays = read_builtin_vti(path)
        assert set(arrays) == set(whole), (path.name, sorted(arrays), sorted(whole))
        for name, value in arrays.items():
            expected = whole[name][window(extent)]
            if not np.array_equal(value, expected):
                raise AssertionError(f"{path.name}: {name} differs from one GPU by up to "
                                     f"{np.abs(value - expected).max():.3e}")
    return len(pieces)


def main(out: str, dims: str = "auto") -> int:
    comm, out = MPI.COMM_WORLD, Path(out)
    parts = build("lid", "float64", comm=comm, decomposition=None if dims == "auto" else dims,
                  results=writers(out / "parts"))
    parts.run(STEPS)
    parts.finish()
    parts.engine.exchange.close()  # NCCL: all ranks together, before rank 0 works alone
    comm.Barrier()
    if comm.rank != 0:
        return 0
    whole = build("lid", "float64", comm=MPI.COMM_SELF, results=writers(out / "whole"))
    whole.run(STEPS)
    whole.finish()
    counts = [compare_pieces(out, f"fields_{STEPS:08d}", f"fields_{STEPS:08d}.vti"),
              compare_pieces(out, "statistics", "statistics.vti")]
    assert counts == [comm.size, comm.size], counts
    names = sorted(p.name for p in (out / "whole").glob("*.png"))
    assert len(names) >= 8, names
    for name in names:
        a, b = (read_png(out / kind / name).astype(int) for kind in ("parts", "whole"))
        step = np.abs(a - b).max()
        if step > 1:
            print(f"different: {name}, {(a != b).any(axis=2).sum()} pixels, up to {step} levels")
            return 1
    print(f"equal: vtk and statistics pieces bit for bit, {len(names)} images, {comm.size} "
          f"ranks, {STEPS} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

"""Run under mpiexec: slices and 3D views of a decomposed run against the single-domain
images, pixel for pixel.

    mpiexec -n 2 python tests/mpi/image_run.py 2x1 OUT_DIR
prints 'identical images' on rank 0 and exits 0, or exits 1 naming the first file that differs.
"""

import sys
from pathlib import Path

import numpy as np
from decomposed_run import build
from mpi4py import MPI

import thelma_py as tp
from thelma_py.modules.results.png import read_png

SLICES = (("vorticity", "y", 7), ("q_criterion", "x", 0), ("speed", "z", 5), ("ux", "y", 13))


VIEWS = (("q_criterion", "speed"), ("vorticity", "ux"))


def images(out: Path) -> list:
    slices = [tp.plugin("results", "image", path=out, every=20, field=field, axis=axis,
                        position=position, size=(120, 90), prefix=f"{field}_{axis}",
                        background=False) for field, axis, position in SLICES]
    views = [tp.plugin("results", "image", path=out, every=20, view="3d", field=field,
                       colour_field=colour, size=(120, 90), background=False, stride=2,
                       azimuth=-50, elevation=35) for field, colour in VIEWS]
    return slices + views


def main(dims: str, out: str) -> int:
    comm = MPI.COMM_WORLD
    parts = build("D3Q19", "trt", decomposition=dims, comm=comm,
                  results=images(Path(out) / "parts"))
    parts.run(20)
    parts.finish()
    if comm.rank != 0:
        return 0
    whole = build("D3Q19", "trt", comm=MPI.COMM_SELF, results=images(Path(out) / "whole"))
    whole.run(20)
    whole.finish()
    names = sorted(p.name for p in (Path(out) / "whole").glob("*.png"))
    assert len(names) == 2 * (len(SLICES) + len(VIEWS)), names
    for name in names:
        a, b = (read_png(Path(out) / kind / name) for kind in ("parts", "whole"))
        if not np.array_equal(a, b):
            print(f"different: {name}, {(a != b).any(axis=2).sum()} pixels")
            return 1
    print(f"identical images: {len(names)} files, {comm.size} ranks as {dims}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

"""Run under mpiexec: a decomposed run against the single-domain run, bit for bit.

    mpiexec -n 4 python tests/mpi/decomposed_run.py 2x2 D2Q9 mrt [OUT_DIR]
prints 'identical' on rank 0 and exits 0, or exits 1 naming the first difference. With
OUT_DIR, the decomposed run also writes VTK pieces and a .pvti there.
"""

import sys

import numpy as np
from mpi4py import MPI

import thelma_py as tp
from thelma_py.geometry import Geometry, Sphere


def build(lattice: str, collision: str, **kwargs) -> tp.Solver:
    """Walls beyond the non-periodic faces, a moving lid, a solid sphere, x periodic."""
    if lattice == "D2Q9":
        geo = Geometry((30, 22), periodic=(True, False))
        geo.edge("+y", velocity=(0.06, 0.0))
        geo.wall(Sphere((9.5, 10.2), 3.7), velocity=(0.0, 0.01))

        def u(x, y):
            return 0.02 * np.sin(x / 3.0) + 0 * y, 0.01 * np.cos(y / 4.0) + 0 * x
    else:
        geo = Geometry((18, 14, 12), periodic=(True, False, True))
        geo.edge("+y", velocity=(0.05, 0.0, 0.01))
        geo.wall(Sphere((6.5, 7.2, 5.1), 2.8))

        def u(x, y, z):
            zero = 0 * x + 0 * y + 0 * z
            return 0.02 * np.sin(x / 3.0) + zero, 0.01 * np.cos(z / 2.0) + zero, 0.01 + zero
    init = tp.plugin("init", "equilibrium", rho=1.0, u=u)
    compute = tp.plugin("compute", "lbm", nu=0.03, collision=collision)
    return tp.compose(lattice, geo, compute, init=init, device="cpu", **kwargs)


def main(dims: str, lattice: str, collision: str, out: str = "", steps: int = 60) -> int:
    comm = MPI.COMM_WORLD
    results = [tp.plugin("results", "vtk", path=out, every=steps)] if out else []
    parts = build(lattice, collision, decomposition=None if dims == "auto" else dims, comm=comm,
                  results=results)
    parts.run(steps)
    parts.finish()
    box = parts.rank_box
    pieces = comm.gather((box.lower, box.shape, parts.density(), parts.velocity()), root=0)
    if comm.rank != 0:
        return 0
    whole = build(lattice, collision, comm=MPI.COMM_SELF)
    whole.run(steps)
    rho, u = whole.density(), whole.velocity()
    for lower, shape, rho_part, u_part in pieces:
        window = tuple(slice(lo, lo + n)
                       for lo, n in zip(reversed(lower), reversed(shape), strict=True))
        if not (np.array_equal(rho[window], rho_part)
                and np.array_equal(u[(slice(None), *window)], u_part)):
            diff = np.abs(rho[window] - rho_part).max()
            print(f"different: sub-box lower={lower} shape={shape}, max |drho| = {diff:.3e}")
            return 1
    print(f"identical: {dims} {lattice} {collision}, {comm.size} ranks, {steps} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))

"""Run under mpiexec: a decomposed run against the single-domain run, bit for bit.

    mpiexec -n 4 python tests/mpi/decomposed_run.py 2x2 D2Q9 mrt [OUT_DIR]
prints 'identical' and the decomposition used on rank 0 and exits 0, or exits 1 naming the first
difference. The scheme is an LBM collision (bgk, trt, mrt; "+les" adds Smagorinsky LES, "+sr"
16-bit populations rounded stochastically) or an LW-ACM plug-in (lwacm, lwacm-fused; "+sr":
16-bit records). Compared: ρ, u, the state (f of LBM, f* and j of the
two-step LW-ACM) on fluid nodes, and ρ on the output piece (owned nodes and the seam layer of
the + neighbour). With OUT_DIR, the decomposed run also writes VTK pieces and a .pvti there.
"""

import sys

import numpy as np
from mpi4py import MPI
from pieces import piece_checks, stored

import thelma_py as tp
from thelma_py.geometry import Geometry, Sphere

LWACM = ("lwacm", "lwacm-fused")


def build(lattice: str, scheme: str, **kwargs) -> tp.Solver:
    """Walls beyond the non-periodic faces, a moving lid, a solid sphere, x periodic.
    ``scheme``: an LBM collision or an LW-ACM plug-in name (``+les``: with Smagorinsky)."""
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
    name, *extras = scheme.split("+")
    les = "smagorinsky" if "les" in extras else None
    # "+sr": 16-bit storage rounded stochastically (fp16s populations or records, fp32)
    store = {"store": "fp16s", "rounding": "stochastic"} if "sr" in extras else {}
    precision = {"precision": "float32"} if store else {}
    compute = (tp.plugin("compute", name, nu=0.03, les=les, **store) if name in LWACM
               else tp.plugin("compute", "lbm", nu=0.03, collision=name, les=les, **store))
    return tp.compose(lattice, geo, compute, init=init, device="cpu", **precision, **kwargs)


def main(dims: str, lattice: str, scheme: str, out: str = "", steps: int = 60) -> int:
    comm = MPI.COMM_WORLD
    results = [tp.plugin("results", "vtk", path=out, every=steps)] if out else []
    parts = build(lattice, scheme, decomposition=None if dims == "auto" else dims, comm=comm,
                  results=results)
    parts.run(steps)
    parts.finish()
    box = parts.rank_box
    rho_piece = parts.piece_fields()[0]
    pieces = comm.gather((box.lower, box.shape, parts.density(), parts.velocity(),
                          stored(parts.engine.state()), ~parts.tags.solid, box.piece(),
                          rho_piece), root=0)
    if comm.rank != 0:
        return 0
    whole = build(lattice, scheme, comm=MPI.COMM_SELF)
    whole.run(steps)
    rho, u, arrays = whole.density(), whole.velocity(), stored(whole.engine.state())
    for part in pieces:
        for name, (expected, got) in piece_checks(rho, u, arrays, *part).items():
            if not np.array_equal(expected, got):
                diff = np.abs(expected - got).max()
                print(f"different: {name} in sub-box lower={part[0]} shape={part[1]}, "
                      f"max |diff| = {diff:.3e}")
                return 1
    used = "x".join(map(str, box.decomposition.dims))
    print(f"identical: {dims} {lattice} {scheme}, {comm.size} ranks as {used}, {steps} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))

"""Run under mpiexec on GPUs: a decomposed CUDA run against a single-GPU run, bit for bit.

    mpiexec -n 2 python -m mpi4py tests/mpi/gpu_decomposed_run.py float64 lid overlap \
        [DIMS [SCHEME]]
prints 'identical' on rank 0 and exits 0, or exits 1 naming the first difference.

Cases: 'lid' (x periodic, walls beyond the y and z faces, a moving lid on +z, a moving sphere
across the cut) and 'zperiodic' (x and z periodic: with 2 ranks both neighbours are the same
rank; walls beyond the y faces, a lid on +y, a sphere across the cut). Mode 'overlap' or
'serial' (exchange, then update); an optional decomposition such as 1x2x1 (default: auto, a z
cut); an optional compute plug-in: lbm (default, TRT), lwacm or lwacm-fused (these always
exchange, then update). The rank count and the transport (THELMA_HALO) come from the
launcher; ranks sharing one GPU exchange through the host.
"""

import sys

import numpy as np
from mpi4py import MPI
from pieces import piece_checks, stored

import thelma_py as tp
from thelma_py.geometry import Geometry, Sphere

STEPS = (45, 31)
"""Two runs: batches end with the ρ, u storing kernel, at odd and even parities."""


def build(case: str, precision: str, scheme: str = "lbm", **kwargs) -> tp.Solver:
    if case == "lid":
        geo = Geometry((37, 14, 24), periodic=(True, False, False))
        geo.edge("+z", velocity=(0.05, 0.01, 0.0))
    elif case == "zperiodic":
        geo = Geometry((37, 14, 24), periodic=(True, False, True))
        geo.edge("+y", velocity=(0.04, 0.0, 0.01))
    elif case == "rows32":  # 32 rows: a y cut of 2 ranks keeps groups of 4 rows whole
        geo = Geometry((37, 32, 12), periodic=(True, False, False))
        geo.edge("+z", velocity=(0.05, 0.01, 0.0))
    else:
        raise ValueError(f"unknown case {case!r}: lid, zperiodic or rows32")
    geo.wall(Sphere((12.3, 6.7, 11.6) if case != "rows32" else (12.3, 18.7, 5.6), 3.1),
             velocity=(0.0, 0.02, -0.01))

    def u(x, y, z):
        zero = 0 * x + 0 * y + 0 * z
        return (0.02 * np.sin(x / 3.0) + zero, 0.01 * np.cos(z / 2.0) + zero,
                0.01 * np.sin(y / 2.5) + zero)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=u)
    if scheme == "lbm":
        compute = tp.plugin("compute", "lbm", nu=0.03, collision="trt")
    elif scheme.endswith("-fp16s"):  # 16-bit records or populations
        compute = tp.plugin("compute", scheme.removesuffix("-fp16s"), nu=0.03, store="fp16s")
    else:
        compute = tp.plugin("compute", scheme, nu=0.03)
    return tp.compose("D3Q19", geo, compute, init=init, device="cuda", precision=precision,
                      **kwargs)


def main(precision: str, case: str, mode: str, dims: str = "auto", scheme: str = "lbm") -> int:
    comm = MPI.COMM_WORLD
    if comm.size < 2:
        print(f"this test needs at least 2 ranks, the launcher started {comm.size} (is mpi4py "
              "built against the MPI of this mpiexec?)")
        return 1
    parts = build(case, precision, scheme, comm=comm,
                  decomposition=None if dims == "auto" else dims)
    parts.engine.overlap = mode == "overlap"
    for steps in STEPS:
        parts.run(steps)
    box = parts.rank_box
    fluid = ~parts.tags.solid
    rho_piece = parts.piece_fields()[0].get()  # output piece: owned + the seam plane
    pieces = comm.gather((box.lower, box.shape, parts.density(), parts.velocity(),
                          stored(parts.engine.state()), fluid, type(parts.engine.exchange).name,
                          box.piece(), rho_piece), root=0)
    parts.engine.exchange.close()  # NCCL: all ranks together, before rank 0 works alone
    comm.Barrier()
    if comm.rank != 0:
        return 0
    whole = build(case, precision, scheme, comm=MPI.COMM_SELF)
    for steps in STEPS:
        whole.run(steps)
    rho, u, arrays = whole.density(), whole.velocity(), stored(whole.engine.state())
    failed = False
    for lower, shape, rho_part, u_part, arrays_part, fluid_part, _, piece, rho_piece in pieces:
        checks = piece_checks(rho, u, arrays, lower, shape, rho_part, u_part, arrays_part,
                              fluid_part, piece, rho_piece)
        for name, (expected, got) in checks.items():
            if not np.isfinite(got).all():
                print(f"different: {name} not finite in sub-box lower={lower} shape={shape}")
                return 1
            if not np.array_equal(expected, got):
                diff = float(np.abs(expected - got).max())
                where = np.argwhere(expected != got)[0]
                print(f"different: {name} in sub-box lower={lower} shape={shape}: max |diff| "
                      f"= {diff:.3e}, first at array index {tuple(where)}")
                failed = True
    if failed:
        return 1
    print(f"identical: {case} {precision} {mode} {scheme}, {comm.size} ranks "
          f"({parts.rank_box.decomposition.dims}), halo over {pieces[0][6]}, {sum(STEPS)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))

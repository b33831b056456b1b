"""Run under mpiexec: forces, profiles and timings of a decomposed run against one domain.

    mpiexec -n 2 python tests/mpi/bodies_run.py OUT_DIR 1x2 D2Q9 halfway
runs bodies cut by the decomposition (halfway or interpolated bounce-back, one of them moving,
one across the periodic edge), a moving lid and walls, with the forces, profile and timings
plug-ins, distributed (files in OUT_DIR/parts) and in one domain (OUT_DIR/whole). Checks: the
fields bit for bit, every profile file byte for byte, the forces to FORCE_TOLERANCE, the timings
files of the same structure (every rank holds the same records: the slowest rank's time).
Rank 0 prints 'equal' and the largest force difference; any failure exits non-zero.
"""

import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import thelma_py as tp
from thelma_py.geometry import Geometry, Sphere

STEPS, EVERY = 60, 20
FORCE_TOLERANCE = 1e-13
"""Largest |F_parts − F_whole| allowed, relative to the body's momentum flux Σ |c_i| |f* + f|
over its links (a bound on the rounding of any order of the same additions; see main)."""


def build(lattice: str, kind: str, results=(), **kwargs) -> tp.Solver:
    """Walls beyond the non-periodic faces, a moving lid, x (and z) periodic, and bodies: a
    moving sphere, a sphere at rest, a sphere across the periodic edge x = 0."""
    interpolated = kind == "interpolated"
    if lattice == "D2Q9":
        geo = Geometry((30, 22), periodic=(True, False))
        geo.edge("+y", velocity=(0.06, 0.0))
        geo.body(Sphere((9.5, 10.2), 3.7), velocity=(0.0, 0.01), interpolated=interpolated)
        geo.body(Sphere((21.3, 6.4), 2.6), interpolated=interpolated)
        geo.body(Sphere((0.4, 16.6), 2.2), interpolated=interpolated)

        def u(x, y):
            return 0.02 * np.sin(x / 3.0) + 0 * y, 0.01 * np.cos(y / 4.0) + 0 * x
    else:
        geo = Geometry((18, 14, 12), periodic=(True, False, True))
        geo.edge("+y", velocity=(0.05, 0.0, 0.01))
        geo.body(Sphere((6.5, 7.2, 5.1), 2.8), velocity=(0.0, 0.0, 0.01),
                 interpolated=interpolated)
        geo.body(Sphere((13.2, 4.6, 0.3), 2.1), interpolated=interpolated)

        def u(x, y, z):
            zero = 0 * x + 0 * y + 0 * z
            return 0.02 * np.sin(x / 3.0) + zero, 0.01 * np.cos(z / 2.0) + zero, 0.01 + zero
    init = tp.plugin("init", "equilibrium", rho=1.0, u=u)
    compute = tp.plugin("compute", "lbm", nu=0.03, collision="trt")
    return tp.compose(lattice, geo, compute, init=init, results=list(results), device="cpu",
                      **kwargs)


def plugins(out: Path, lattice: str) -> list:
    lines = ([("x", (3, 10)), ("y", (9, 0))] if lattice == "D2Q9"
             else [("z", (6, 7, 0)), ("x", (0, 6, 5))])
    return [tp.plugin("results", "forces", every=EVERY, path=out / "forces.csv", velocity=0.06,
                      area=7.4),
            *(tp.plugin("results", "profile", axis=axis, through=through, every=30,
                        path=out / "profiles", prefix=f"along_{axis}",
                        fields=("rho", "u", "speed")) for axis, through in lines),
            tp.plugin("results", "timings", every=10, path=out / "timings.csv", stream=False)]


def run(out: Path, lattice: str, kind: str, **kwargs):
    results = plugins(out, lattice)
    solver = build(lattice, kind, results=results, **kwargs)
    solver.run(STEPS)
    solver.finish()
    return solver, results


def flux(solver, body: int) -> float:
    """Σ over the body's links of |c_i| |f*_ī + f_i| (one domain): the scale of its force."""
    from thelma_py.modules.compute.lbm.forces import MomentumExchange

    lat = solver.lattice
    exchange = MomentumExchange(lat, solver.tags, solver.dtype)
    f = solver.engine.f.reshape(lat.q, -1)
    norm = np.linalg.norm(lat.c.astype(float), axis=1)
    total = 0.0
    for i, index, term in exchange.links.get(body, ()):
        total += norm[i] * float(np.abs(2.0 * f[lat.opposite[i]][index] + term).sum())
    for i, index, *_ in exchange.curved.get(body, ()):
        total += norm[i] * 2.0 * float(np.abs(f[lat.opposite[i]][index]).sum())
    return total


def main(out: str, dims: str, lattice: str, kind: str) -> int:
    comm, out = MPI.COMM_WORLD, Path(out)
    parts, (forces, *profiles, timings) = run(out / "parts", lattice, kind, decomposition=dims,
                                              comm=comm)
    box = parts.rank_box
    pieces = comm.gather((box.lower, box.shape, parts.density(), parts.velocity()), root=0)
    histories = comm.allgather(forces.history)
    assert all(len(h) == len(forces.history) for h in histories)
    for history in histories[1:]:  # the same sums on every rank, bit for bit
        for mine, theirs in zip(forces.history, history, strict=True):
            assert all(np.array_equal(mine[b]["F"], theirs[b]["F"]) for b in mine if b != "step")
    # every rank's own time per record is at most the record, the slowest rank's equals it
    own = comm.allgather(local_records(parts, timings.schedule.steps))
    assert all(r == timings.records for r in comm.allgather(timings.records)), "ranks differ"
    for k, (step, seconds) in enumerate(timings.records):
        assert all(mine[k][0] == step and mine[k][1] <= seconds for mine in own)
        assert any(mine[k][1] == seconds for mine in own)
    if comm.rank != 0:
        return 0
    whole, (w_forces, *w_profiles, w_timings) = run(out / "whole", lattice, kind,
                                                    comm=MPI.COMM_SELF)
    rho, u = whole.density(), whole.velocity()
    for lower, shape, rho_part, u_part in pieces:
        window = tuple(slice(lo, lo + n)
                       for lo, n in zip(reversed(lower), reversed(shape), strict=True))
        assert np.array_equal(rho[window], rho_part), f"rho differs on sub-box {lower}"
        assert np.array_equal(u[(slice(None), *window)], u_part), f"u differs on {lower}"
    # profiles: the same files, the same bytes
    for mine, theirs in zip(profiles, w_profiles, strict=True):
        assert [p.name for p in mine.written] == [p.name for p in theirs.written] != []
        for a, b in zip(mine.written, theirs.written, strict=True):
            assert a.read_bytes() == b.read_bytes(), f"{a.name} differs"
    # forces: the same bodies and steps; each link's term is the same number (the fields are
    # bit-identical) and only the order of the additions differs
    parts_csv = (out / "parts" / "forces.csv").read_text().splitlines()
    whole_csv = (out / "whole" / "forces.csv").read_text().splitlines()
    assert parts_csv[0] == whole_csv[0] and len(parts_csv) == len(whole_csv) == STEPS // EVERY + 2
    bodies = [b for b in w_forces.history[-1] if b != "step"]
    assert len(bodies) == (5 if lattice == "D2Q9" else 4), bodies
    worst = worst_force = 0.0
    for mine, theirs in zip(forces.history, w_forces.history, strict=True):
        assert mine.keys() == theirs.keys() and mine["step"] == theirs["step"]
        for b in bodies:
            scale = flux(whole, b)
            difference = np.abs(mine[b]["F"] - theirs[b]["F"]).max()
            assert difference <= FORCE_TOLERANCE * scale, (mine["step"], b, difference, scale)
            assert abs(mine[b]["cD"] - theirs[b]["cD"]) <= 2 * FORCE_TOLERANCE * scale / (
                0.06**2 * 7.4)
            worst = max(worst, difference / scale)
            worst_force = max(worst_force, difference / np.abs(theirs[b]["F"]).max())
    # timings: the same structure
    parts_t = (out / "parts" / "timings.csv").read_text().splitlines()
    whole_t = (out / "whole" / "timings.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in parts_t] == [line.split(",")[0] for line in whole_t]
    assert len(parts_t) == STEPS // 10 + 1 and parts_t[0] == "step,seconds_per_step"
    print(f"equal: forces, profiles, timings on {dims} {lattice} {kind}, {comm.size} ranks; "
          f"largest force difference {worst:.2e} of the momentum flux, "
          f"{worst_force:.2e} of |F|")
    return 0


def local_records(solver, every: int) -> list[tuple[int, float]]:
    """(step, this rank's own compute seconds per step) per timings interval."""
    records, step, seconds, mark = [], 0, 0.0, (0, 0.0)
    for n, t in solver.batch_times:  # the additions of Solver.compute_seconds, in its order
        step, seconds = step + n, seconds + t
        if step % every == 0:
            records.append((step, (seconds - mark[1]) / (step - mark[0])))
            mark = (step, seconds)
    return records


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))

"""Lid-driven cavity: a closed square (cube) with one moving wall, Re = U N / ν.

2D (D2Q9): the lid is the wall beyond the ``+y`` face and moves in +x; this is the set-up of
Ghia, Ghia & Shin (1982), whose Re = 100 and 400 centre-line profiles are the reference.
3D (D3Q19): the lid is the wall beyond the ``+z`` face and moves in +x; the other five walls are
at rest.

Walls sit half a spacing outside the stored nodes (halfway bounce-back), so a cavity of ``n``
nodes has side N = n in lattice units and node i lies at x = (i + 1/2) / n in cavity units.

Run (about 6 s on a 2-core CPU at the defaults)::

    python cases/lid_driven_cavity.py                 # 64 x 64, Re 100, MRT, compares with Ghia
    python cases/lid_driven_cavity.py --n 128 --steps 40000 --reynolds 400
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.units import from_reynolds

DEFAULT_STEPS = 20_000  # about 16 convective times at the defaults (n=64, lid 0.05)
"""Steps of the default run: about 16 convective times L/U at n = 64, U = 0.1 (near-steady at
Re = 100; the Ghia deviation no longer changes at the 1e-3 level)."""


def build(*, device: str = "auto", precision: str = "float64", n: int = 64,
          reynolds: float = 100.0, lid_velocity: float = 0.05, collision: str = "mrt",
          dim: int = 2) -> tp.Solver:
    """A cavity of n (x n) nodes at rest, lid speed ``lid_velocity`` (lattice units).

    ν = U n / Re from :func:`thelma_py.units.from_reynolds` (which refuses τ <= 1/2 and Mach
    above 0.3, and warns above Mach 0.1). ``dim`` = 2 uses D2Q9 with the lid on +y, 3 uses
    D3Q19 with the lid on +z; the lid moves in +x in both.
    """
    if dim not in (2, 3):
        raise ValueError(f"dim must be 2 or 3, got {dim!r}")
    params = from_reynolds(reynolds, n, lid_velocity)
    if dim == 2:
        lattice, shape, lid_face, lid = "D2Q9", (n, n), "+y", (lid_velocity, 0.0)
    else:
        lattice, shape, lid_face, lid = "D3Q19", (n, n, n), "+z", (lid_velocity, 0.0, 0.0)
    geometry = tp.geometry.cavity(shape, lid_velocity=lid, lid_face=lid_face)
    compute = tp.plugin("compute", "lbm", nu=params.nu, collision=collision)
    return tp.compose(lattice, geometry, compute, device=device,
                      precision=precision)


# -- comparison with Ghia, Ghia & Shin (1982) --------------------------------------------------

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
"""Where the Ghia tables live in this work tree (``ghia1982_re{100,400}_{u,v}.csv``)."""


def load_ghia(reynolds: int, reference: Path = REFERENCE) -> dict[str, np.ndarray]:
    """Ghia's centre-line tables: {'y', 'u', 'x', 'v'}, wall rows removed (they are the
    boundary conditions, not computed values)."""
    u = np.loadtxt(reference / f"ghia1982_re{reynolds}_u.csv", delimiter=",", skiprows=2)
    v = np.loadtxt(reference / f"ghia1982_re{reynolds}_v.csv", delimiter=",", skiprows=2)
    return {"y": u[1:-1, 0], "u": u[1:-1, 1], "x": v[1:-1, 0], "v": v[1:-1, 1]}


def _interpolate(points: np.ndarray, nodes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Cubic Lagrange interpolation through the 4 nodes nearest each point (nodes sorted)."""
    out = np.empty(len(points))
    for k, p in enumerate(points):
        j = int(np.clip(np.searchsorted(nodes, p) - 2, 0, len(nodes) - 4))
        xs, ys = nodes[j:j + 4], values[j:j + 4]
        out[k] = sum(ys[a] * np.prod([(p - xs[b]) / (xs[a] - xs[b]) for b in range(4) if b != a])
                     for a in range(4))
    return out


def centerlines(solver: tp.Solver) -> dict[str, np.ndarray]:
    """Centre-line profiles of a 2D cavity in cavity units (lengths / N, velocities / U).

    Returns {'y', 'u'}: u(x = 1/2, y) and {'x', 'v'}: v(x, y = 1/2), with the wall values
    (u = 0 at y = 0, u = 1 at y = 1, v = 0 at both side walls) added at the wall positions.
    For even n the centre line falls between two node columns and is their mean.
    """
    if solver.lattice.d != 2:
        raise ValueError("centre-line profiles are defined here for the 2D cavity")
    ny, nx = solver.geometry.array_shape
    lid = solver.tags.bc_table[solver.tags.face_bc_ids["+y"], 0]
    u = solver.velocity() / lid

    def middle(array, n, axis):  # value at the mid-plane of ``axis``
        lo, hi = (n - 1) // 2, n // 2
        return 0.5 * (np.take(array, lo, axis=axis) + np.take(array, hi, axis=axis))

    y = (np.arange(ny) + 0.5) / ny
    x = (np.arange(nx) + 0.5) / nx
    return {"y": np.concatenate([[0.0], y, [1.0]]),
            "u": np.concatenate([[0.0], middle(u[0], nx, axis=1), [1.0]]),
            "x": np.concatenate([[0.0], x, [1.0]]),
            "v": np.concatenate([[0.0], middle(u[1], ny, axis=0), [0.0]])}


def ghia_deviation(solver: tp.Solver, reynolds: int = 100,
                   reference: Path = REFERENCE) -> dict[str, float]:
    """Largest |profile − Ghia| / U along each centre line, at Ghia's own sample points."""
    ghia = load_ghia(reynolds, reference)
    lines = centerlines(solver)
    du = _interpolate(ghia["y"], lines["y"], lines["u"]) - ghia["u"]
    dv = _interpolate(ghia["x"], lines["x"], lines["v"]) - ghia["v"]
    return {"u": float(np.abs(du).max()), "v": float(np.abs(dv).max())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--reynolds", type=float, default=100.0)
    parser.add_argument("--lid-velocity", type=float, default=0.05)
    parser.add_argument("--collision", default="mrt", choices=("bgk", "trt", "mrt"))
    parser.add_argument("--dim", type=int, default=2, choices=(2, 3))
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="float64")
    args = parser.parse_args(argv)
    solver = build(device=args.device, precision=args.precision, n=args.n, reynolds=args.reynolds,
                   lid_velocity=args.lid_velocity, collision=args.collision, dim=args.dim)
    print(solver)
    start = time.perf_counter()
    summary = solver.run(args.steps)
    print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s, "
          f"{summary['mlups']:.1f} MLUPS on {summary['backend']}")
    if args.dim == 2 and args.reynolds in (100, 400) and REFERENCE.is_dir():
        dev = ghia_deviation(solver, int(args.reynolds))
        print(f"max |u - Ghia| / U = {dev['u']:.4f}, max |v - Ghia| / U = {dev['v']:.4f}")


if __name__ == "__main__":
    main()

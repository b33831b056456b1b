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

import thelma_py as tp
from thelma_py.validation import REFERENCE, centerlines, ghia_deviation, load_ghia
from thelma_py.validation import interpolate_cubic as _interpolate

DEFAULT_STEPS = 20_000  # about 16 convective times at the defaults (n=64, lid 0.05)
"""Steps of the default run: about 16 convective times L/U at n = 64, U = 0.1 (near-steady at
Re = 100; the Ghia deviation no longer changes at the 1e-3 level)."""

__all__ = ["REFERENCE", "_interpolate", "build", "centerlines", "ghia_deviation", "load_ghia",
           "main"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 64,
          reynolds: float = 100.0, lid_velocity: float = 0.05, collision: str = "mrt",
          dim: int = 2, compute: str = "lbm") -> tp.Solver:
    """A cavity of n (x n) nodes at rest, lid speed ``lid_velocity`` (lattice units); see
    :func:`thelma_py.validation.cavity` (shared with ``thelma validate``). ``compute`` names
    the compute plug-in (``collision`` applies to lbm only)."""
    return tp.validation.cavity(device=device, precision=precision, n=n, reynolds=reynolds,
                                lid_velocity=lid_velocity, collision=collision, dim=dim,
                                compute=compute)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--reynolds", type=float, default=100.0)
    parser.add_argument("--lid-velocity", type=float, default=0.05)
    parser.add_argument("--collision", default="mrt", choices=("bgk", "trt", "mrt"))
    parser.add_argument("--dim", type=int, default=2, choices=(2, 3))
    parser.add_argument("--compute", default="lbm", choices=("lbm", "lwacm", "lwacm-fused"))
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="float64")
    args = parser.parse_args(argv)
    solver = build(device=args.device, precision=args.precision, n=args.n, reynolds=args.reynolds,
                   lid_velocity=args.lid_velocity, collision=args.collision, dim=args.dim,
                   compute=args.compute)
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

"""2D Taylor-Green vortex in a periodic square: the decay of an exact Navier-Stokes solution.

u = u0 e^{−ν (kx² + ky²) t} (sin kx x cos ky y, −cos kx x sin ky y), k = 2π / n, one period in
each direction, started from the "taylor-green" init plug-in (velocity and its pressure field).
Reynolds number Re = u0 L / ν with L = n / (2π) (the convention of the 3D reference data).

Run::

    python cases/taylor_green.py                       # n = 64, Re = 50, MRT; prints the decay
    python cases/taylor_green.py --collision bgk --n 128
"""

from __future__ import annotations

import argparse
import math

import thelma_py as tp
from thelma_py.validation import amplitude, decay_rate
from thelma_py.validation import tgv_viscosity as viscosity

DEFAULT_STEPS = 5_000
"""About one e-folding time 1 / (ν (kx² + ky²)) of the velocity at the defaults."""

__all__ = ["amplitude", "build", "decay_rate", "main", "viscosity"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 64, u0: float = 0.05,
          reynolds: float | None = None, nu: float | None = None,
          collision: str = "mrt") -> tp.Solver:
    """An n x n periodic box holding one Taylor-Green period. Give ``nu`` (lattice units) or
    ``reynolds`` (Re = u0 n / (2π ν)); with neither, Re = 50. See
    :func:`thelma_py.validation.taylor_green`."""
    return tp.validation.taylor_green(device=device, precision=precision, n=n, u0=u0,
                                      reynolds=reynolds, nu=nu, collision=collision)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--u0", type=float, default=0.05)
    parser.add_argument("--reynolds", type=float, default=50.0)
    parser.add_argument("--collision", default="mrt", choices=("bgk", "trt", "mrt"))
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="float64")
    args = parser.parse_args(argv)
    solver = build(device=args.device, precision=args.precision, n=args.n, u0=args.u0,
                   reynolds=args.reynolds, collision=args.collision)
    print(solver)
    nu = solver.compute.nu
    start = amplitude(solver)
    summary = solver.run(args.steps)
    measured = -math.log(amplitude(solver) / start) / args.steps
    exact = decay_rate(args.n, nu)
    print(f"{args.steps} steps, {summary['mlups']:.2f} MLUPS; decay rate {measured:.6e} "
          f"(exact {exact:.6e}, relative error {measured / exact - 1:+.2e})")


if __name__ == "__main__":
    main()

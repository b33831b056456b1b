"""Lid-driven cavity: a closed square (cube) with one moving wall, Re = U N / ν.

2D (D2Q9): the lid is the wall beyond the ``+y`` face and moves in +x; this is the set-up of
Ghia, Ghia & Shin (1982), whose Re = 100 and 400 centre-line profiles are the reference.
3D (D3Q19): the lid is the wall beyond the ``+z`` face and moves in +x; the other five walls are
at rest.

Walls sit half a spacing outside the stored nodes (halfway bounce-back), so a cavity of ``n``
nodes has side N = n in lattice units and node i lies at x = (i + 1/2) / n in cavity units.

Run (about 13 s on a 2-core CPU at the defaults)::

    thelma run cases/lid_driven_cavity.py           # 64 x 64, Re 100, MRT, compares with Ghia
    thelma run cases/lid_driven_cavity.py --set n=128 --set reynolds=400 --steps 40000
"""

from __future__ import annotations

import sys

import thelma_py as tp
from thelma_py.tools.cli import run_case
from thelma_py.tools.validation import REFERENCE, centerlines, ghia_deviation, load_ghia
from thelma_py.tools.validation import interpolate_cubic as _interpolate

DEFAULT_STEPS = 20_000  # about 16 convective times at the defaults (n=64, lid 0.05)
"""Steps of the default run: about 16 convective times L/U at n = 64, U = 0.1 (near-steady at
Re = 100; the Ghia deviation no longer changes at the 1e-3 level)."""

__all__ = ["REFERENCE", "_interpolate", "build", "centerlines", "ghia_deviation", "load_ghia",
           "main"]


def build(*, device: str = "auto", precision: str = "float64", n: int = 64,
          reynolds: float = 100.0, lid_velocity: float = 0.05, collision: str = "mrt",
          dim: int = 2, compute: str = "lbm") -> tp.Solver:
    """A cavity of n (x n) nodes at rest, lid speed ``lid_velocity`` (lattice units); see
    :func:`thelma_py.tools.validation.cavity` (shared with ``thelma validate``). ``compute`` names
    the compute plug-in (``collision`` applies to lbm only)."""
    return tp.tools.validation.cavity(device=device, precision=precision, n=n, reynolds=reynolds,
                                lid_velocity=lid_velocity, collision=collision, dim=dim,
                                compute=compute)


def report(solver: tp.Solver, *, reynolds: float, dim: int, **_) -> str:
    """Largest deviation of the centre-line profiles from Ghia et al. (2D, Re 100 or 400)."""
    if dim != 2 or reynolds not in (100, 400):
        return "no Ghia reference for this set-up (2D, Re = 100 or 400 only)"
    if not REFERENCE.is_dir():
        return (f"Ghia tables not found in {REFERENCE} (set THELMA_REFERENCE to the folder "
                "holding ghia1982_re*.csv)")
    dev = ghia_deviation(solver, int(reynolds))
    return f"max |u - Ghia| / U = {dev['u']:.4f}, max |v - Ghia| / U = {dev['v']:.4f}"


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/lid_driven_cavity.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

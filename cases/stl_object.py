"""Flow past an object read from an STL file (D3Q19), with the force on it.

The object is voxelized with :class:`thelma_py.geometry.StlShape` (closed meshes only), scaled
to ``size`` nodes along its largest extent and centred 3 sizes behind the inlet of a channel of
10 x 4 x 4 sizes (Zou-He inlet, pressure outlet, free-slip side walls). Without ``stl`` the case
writes a sphere mesh of its own.

Run::

    thelma run cases/stl_object.py --set stl="'part.stl'" --set size=24 --device cuda
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import thelma_py as tp
from thelma_py.geometry.stl import StlShape, sphere_stl
from thelma_py.modules.compute.lbm.forces import forces
from thelma_py.tools.cli import run_case

DEFAULT_STEPS = 5_000
BODY_ID = 7
"""Boundary id of the object (after 4 free-slip rows, the inlet and the outlet)."""

__all__ = ["build", "main", "place", "report"]


def place(path: Path, size: int, centre) -> StlShape:
    """The mesh scaled so that its largest extent is ``size`` nodes, centred at ``centre``."""
    raw = StlShape(path)
    b = raw.bounds
    extent = max(b[1] - b[0], b[3] - b[2], b[5] - b[4])
    scale = size / extent
    middle = [(b[2 * a] + b[2 * a + 1]) / 2 * scale for a in range(3)]
    return StlShape(path, scale=scale,
                    translate=tuple(c - m for c, m in zip(centre, middle, strict=True)))


def build(*, device: str = "auto", precision: str = "float64", stl: str | None = None,
          size: int = 10, reynolds: float = 20.0, u: float = 0.05,
          collision: str = "trt", interpolated: bool = True) -> tp.Solver:
    path = Path(stl) if stl else sphere_stl(Path(tempfile.gettempdir()) / "thelma_sphere.stl")
    nu = u * size / reynolds
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    geometry = tp.geometry.Geometry((10 * size, 4 * size, 4 * size))
    for face in ("-y", "+y", "-z", "+z"):
        geometry.free_slip(face)
    geometry.inlet("-x", velocity=(u, 0.0, 0.0))
    geometry.outlet("+x", rho=1.0)
    body = geometry.body(place(path, size, (3 * size, 2 * size - 0.5, 2 * size - 0.5)),
                         interpolated=interpolated)  # wall distances by ray-triangle tests
    assert body == BODY_ID
    init = tp.plugin("init", "equilibrium", rho=1.0, u=(u, 0.0, 0.0))
    return tp.compose("D3Q19", geometry, tp.plugin("compute", "lbm", nu=nu, collision=collision),
                      init=init, device=device, precision=precision)


def report(solver: tp.Solver, *, u: float, size: int, **_) -> str:
    force = forces(solver.engine, [BODY_ID])[BODY_ID]
    voxels = int((solver.tags.layout.bc_id(solver.tags.tags) == BODY_ID).sum())
    return (f"{voxels} solid nodes; force (x, y, z) = ({force[0]:.4e}, {force[1]:.4e}, "
            f"{force[2]:.4e}), c_D (frontal size²) = {force[0] / (0.5 * u**2 * size**2):.3f}")


def main(argv: list[str] | None = None) -> int:
    """Same as ``thelma run cases/stl_object.py ARGS``."""
    return run_case(__file__, argv)


if __name__ == "__main__":
    sys.exit(main())

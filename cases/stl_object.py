"""Flow past an object read from an STL file (D3Q19), with the force on it.

The object is voxelized with :class:`thelma_py.geometry.StlShape` (closed meshes only), scaled
to ``size`` nodes along its largest extent and centred 3 sizes behind the inlet of the channel
of :mod:`thelma_py.cases.sphere` (10 x 4 x 4 sizes, Zou-He inlet, pressure outlet, free-slip
side walls). Without ``stl`` the case makes a sphere mesh in a temporary folder, removed once
the solver is built.

Run::

    thelma run cases/stl_object.py --set stl="'part.stl'" --set size=24 --device cuda
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.cases.sphere import BODY_ID, channel
from thelma_py.geometry.stl import StlShape, sphere_stl
from thelma_py.modules.compute.lbm.forces import forces

DEFAULT_STEPS = 5_000

__all__ = ["BODY_ID", "DEFAULT_STEPS", "build", "place", "report"]


def place(path: Path, size: int, centre) -> StlShape:
    """The mesh scaled so that its largest extent is ``size`` nodes, centred at ``centre``."""
    raw = StlShape(path)
    b = raw.bounds
    extent = max(b[1] - b[0], b[3] - b[2], b[5] - b[4])
    scale = size / extent
    middle = [(b[2 * a] + b[2 * a + 1]) / 2 * scale for a in range(3)]
    return StlShape(path, scale=scale,
                    translate=tuple(c - m for c, m in zip(centre, middle, strict=True)))


def build(*, stl: str | None = None, size: int = 10, reynolds: float = 20.0, u: float = 0.05,
          collision: str = "trt", interpolated: bool = True, results: Sequence = (),
          device: str = "auto", precision: str = "float64") -> tp.Solver:
    """Channel of 10 x 4 x 4 ``size`` nodes around the object (wall distances of its
    interpolated links by ray-triangle tests); ``results`` are added to the run."""
    nu = u * size / reynolds
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    centre = (3 * size, 2 * size - 0.5, 2 * size - 0.5)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=(u, 0.0, 0.0))
    with tempfile.TemporaryDirectory(prefix="thelma_stl_") as folder:  # gone once built
        path = Path(stl) if stl else sphere_stl(Path(folder) / "sphere.stl")
        geometry = channel(size, u, place(path, size, centre), interpolated)
        return tp.compose("D3Q19", geometry,
                          tp.plugin("compute", "lbm", nu=nu, collision=collision), init=init,
                          results=list(results), device=device, precision=precision)


def report(solver: tp.Solver, *, u: float, size: int, **_) -> str:
    force = forces(solver.engine, [BODY_ID])[BODY_ID]
    voxels = int((solver.tags.layout.bc_id(solver.tags.tags) == BODY_ID).sum())
    return (f"{voxels} solid nodes; force (x, y, z) = ({force[0]:.4e}, {force[1]:.4e}, "
            f"{force[2]:.4e}), c_D (frontal size²) = {force[0] / (0.5 * u**2 * size**2):.3f}")


if __name__ == "__main__":
    run(sys.modules[__name__])

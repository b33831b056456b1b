"""Flow past a sphere in a square channel (D3Q19): drag from the momentum exchange.

Uniform velocity inlet on −x, pressure outlet on +x (equilibrium faces by default, ``inlet``,
``outlet``: 'equilibrium' or 'zou-he'; Zou-He faces grow disturbances at τ below 0.54 and 0.52,
docs/DESIGN.md), free-slip side walls (so the channel only blocks the flow, without boundary
layers), a sphere of diameter ``d`` nodes at rest. Re = U d / ν. The report gives
c_D = 2 F / (ρ U² π d²/4) and, for comparison, the Schiller-Naumann correlation
24/Re (1 + 0.15 Re^0.687) for an unbounded sphere (the channel's blockage raises the measured
value).

Run::

    thelma run cases/sphere.py --device cuda --set d=20
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.geometry import Geometry, Shape
from thelma_py.modules.compute.lbm.forces import forces

DEFAULT_STEPS = 6_000
BODY_ID = 7
"""Boundary id of the body (after four free-slip rows, the inlet and the outlet)."""
SPHERE_ID = BODY_ID

__all__ = ["BODY_ID", "DEFAULT_STEPS", "SPHERE_ID", "build", "channel", "drag_coefficient",
           "report"]


def channel(size: int, u: float, body: Shape, interpolated: bool, inlet: str = "equilibrium",
            outlet: str = "equilibrium") -> Geometry:
    """A channel of 10 x 4 x 4 ``size`` nodes: inlet at speed ``u`` on −x, outlet ρ = 1 on +x
    (of the kinds ``inlet``, ``outlet``), free-slip side walls, and ``body`` (boundary id
    :data:`BODY_ID`)."""
    geometry = Geometry((10 * size, 4 * size, 4 * size))
    for face in ("-y", "+y", "-z", "+z"):
        geometry.free_slip(face)
    geometry.inlet("-x", velocity=(u, 0.0, 0.0), kind=inlet)
    geometry.outlet("+x", rho=1.0, kind=outlet)
    body_id = geometry.body(body, interpolated=interpolated)
    assert body_id == BODY_ID
    return geometry


def build(*, d: int = 10, reynolds: float = 20.0, u: float = 0.05, collision: str = "trt",
          interpolated: bool = True, results: Sequence = (), device: str = "auto",
          precision: str = "float64", inlet: str = "equilibrium",
          outlet: str = "equilibrium", compute: str = "lbm") -> tp.Solver:
    """Channel of 10 d x 4 d x 4 d nodes, sphere centred 3 d behind the inlet (interpolated
    bounce-back at its exact surface unless ``interpolated`` is False: halfway staircase);
    ``results`` are added to the run. ``compute``: "lbm" (with ``collision``), or "lwacm" /
    "lwacm-fused" (no collision; curved walls at the exact surface with ``interpolated``; both
    face kinds take LW-ACM's inlet and outlet ghosts, whose faces sit half a spacing beyond
    the end nodes; where the inlet meets the free-slip sides its ring of edge nodes sees a
    wall at rest, docs/DESIGN.md "LW-ACM open boundaries")."""
    nu = u * d / reynolds
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    sphere = tp.geometry.Sphere((3 * d, 2 * d - 0.5, 2 * d - 0.5), d / 2)
    geometry = channel(d, u, sphere, interpolated, inlet, outlet)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=(u, 0.0, 0.0))
    options = {"collision": collision} if compute == "lbm" else {}
    return tp.compose("D3Q19", geometry, tp.plugin("compute", compute, nu=nu, **options),
                      init=init, results=list(results), device=device, precision=precision)


def drag_coefficient(solver: tp.Solver, d: int, u: float) -> float:
    """c_D = 2 F_x / (ρ U² π d²/4) of the sphere."""
    force = forces(solver.engine, [BODY_ID])[BODY_ID]
    return float(force[0] / (0.5 * u**2 * math.pi * d**2 / 4))


def report(solver: tp.Solver, *, d: int, u: float, reynolds: float, **_) -> str:
    cd = drag_coefficient(solver, d, u)
    reference = 24 / reynolds * (1 + 0.15 * reynolds**0.687)
    return f"c_D = {cd:.3f} (Schiller-Naumann, unbounded: {reference:.3f})"


if __name__ == "__main__":
    run(sys.modules[__name__])

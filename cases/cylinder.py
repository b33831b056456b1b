"""Flow around a cylinder in a channel: the Schäfer & Turek (1996) benchmark 2D-1 (Re = 20).

Channel H = 0.41 x L = 2.2, cylinder of diameter D = 0.1 centred at (0.2, 0.2), parabolic
Zou-He inflow, Zou-He pressure outlet, no-slip walls (halfway bounce-back). The resolution is
``n`` nodes per diameter. Re = 20 is steady: the run stops once the drag has settled, and the
report gives c_D, c_L and Δp against the published intervals. The same geometry at Re = 100
sheds vortices: :mod:`thelma_py.cases.cylinder_2d2` (test 2D-2).

The inflow speed follows the validated setting (docs/validation/schaefer_turek.md): diffusive
scaling, u_max = 1/n lattice units, so τ = 0.6 at every resolution and the compressibility
error (∝ u_max²) falls at second order with the grid error. At fixed u_max = 0.1, n = 10 gives
c_D = 5.819 against 5.666 at u_max = 0.05: most of the error is then compressibility.

Run::

    thelma run cases/cylinder.py                        # n = 20, Re = 20, u_max = 0.05
    thelma validate --only schaefer-turek               # three resolutions, in the report
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.modules.compute.lbm.forces import forces

DEFAULT_STEPS = 320_000
"""A cap, 800 n / u_max at the defaults: the steady stop ends the run first (n = 10: at 42 240
steps; n = 20 stopped at 108 000 to 129 000 under the former, early-biased rule)."""

CYLINDER_ID = 3
"""Boundary id of the cylinder (after the inlet and outlet rows)."""

SCHAEFER_TUREK = {"c_D": (5.57, 5.59), "c_L": (0.0104, 0.0110), "dp": (0.1172, 0.1176)}
"""Published intervals of benchmark 2D-1 (Re = 20, steady)."""

__all__ = ["CYLINDER_ID", "DEFAULT_STEPS", "SCHAEFER_TUREK", "build", "cylinder_drag",
           "inflow_speed", "report", "schaefer_turek_measures"]


def inflow_speed(n: int, u_max: float | None) -> float:
    """The inflow centre speed in lattice units: ``u_max``, or 1/n (diffusive scaling)."""
    return 1.0 / n if u_max is None else u_max


def cylinder_drag(solver: tp.Solver) -> float:
    """x component of the momentum-exchange force on the cylinder (lattice units)."""
    return float(forces(solver.engine, [CYLINDER_ID])[CYLINDER_ID][0])


def build(*, n: int = 20, reynolds: float = 20.0, u_max: float | None = None,
          collision: str = "trt", radius_offset: float = 0.0, interpolated: bool = True,
          tolerance: float | None = 1e-6, results: Sequence = (), device: str = "auto",
          precision: str = "float64", compute: str = "lbm", same_grid: bool = False,
          shift: float = 0.0, store: str = "fp32", rounding: str = "nearest") -> tp.Solver:
    """Channel of (22 n + 1) x 4.1 n nodes with the cylinder; Re = U D / ν with the mean
    inflow speed U = 2 u_max / 3 (``u_max`` None: 1/n).

    The inlet nodes lie on x = 0 (wet nodes) and the rows at y = (j + 1/2) dx. The cylinder is
    the set of nodes within n/2 + ``radius_offset`` of its centre; with ``interpolated``
    (default) its links use interpolated bounce-back at the exact circle, without, the halfway
    staircase. The flow starts from the inflow profile at every node. With ``tolerance``, the
    run stops once the drag is steady: 40 values 8 n steps apart (two periods of the slowest
    acoustic mode, a quarter wave along the channel, about 152 n steps) within that relative
    spread. ``results`` are added to the run. ``compute``: "lbm" (with ``collision``), or
    "lwacm" / "lwacm-fused" (their curved walls: ghost records, ``modules/compute/lwacm/
    curved.py``). LW-ACM's inlet and outlet sit half a spacing beyond the end nodes
    (the plug-in's ``open_face_offset``): its channel has 22 n nodes and the cylinder's centre is at
    x = 2 n − ½, so that inlet, cylinder and outlet are as far apart as in the benchmark (with
    ``same_grid``, the LBM grid instead: the cylinder half a spacing further from the inlet,
    an O(1/n) change of the geometry that moves c_D by −0.5 %, Δp by −0.9 % and c_L by +7 %
    at n = 10). ``shift`` (a multiple of ½) moves the cylinder that many spacings downstream
    and the outlet by its ceiling: a study of the cylinder's place on the grid. ``store`` and
    ``rounding``: LBM's 16-bit populations (docs/validation/store16.md; precision float32).
    """
    if shift * 2 != round(shift * 2):
        raise ValueError(f"shift = {shift}: the cylinder moves by multiples of 1/2 spacing")
    ny = round(4.1 * n)
    if abs(ny - 4.1 * n) > 1e-9:
        raise ValueError(f"n = {n}: H = 4.1 n must be a whole number of nodes (n = 10, 20, ...)")
    u_max = inflow_speed(n, u_max)
    u_mean = 2.0 * u_max / 3.0
    nu = u_mean * n / reynolds
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))

    def inflow(x, y):
        s = (y + 0.5) / ny
        return (4.0 * u_max * s * (1.0 - s), 0.0 * y)

    options = {"collision": collision} if compute == "lbm" else {}
    if store != "fp32":  # 16-bit populations (LBM; docs/validation/store16.md)
        options.update(store=store, rounding=rounding)
    scheme = tp.plugin("compute", compute, nu=nu, **options)
    offset = 0.0 if same_grid else getattr(scheme, "open_face_offset", 0.0)
    geometry = tp.geometry.Geometry((22 * n + 1 - round(2 * offset) + math.ceil(shift), ny))
    geometry.inlet("-x", velocity=inflow)
    geometry.outlet("+x", rho=1.0)
    body = geometry.body(tp.geometry.Cylinder((2.0 * n - offset + shift, 2.0 * n - 0.5),
                                              n / 2.0 + radius_offset),
                         interpolated=interpolated)
    assert body == CYLINDER_ID
    # start from the inflow profile everywhere: an impulsive start from rest sends pressure
    # waves of δρ ≈ 0.2 that the outlet does not absorb at τ ≈ 0.52 (Re = 100, n = 10)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=inflow)
    own = [] if tolerance is None else [tp.plugin("results", "steady", quantity=cylinder_drag,
                                                  every=8 * n, window=40, tolerance=tolerance)]
    return tp.compose("D2Q9", geometry, scheme, init=init, results=[*own, *results],
                      device=device, precision=precision)


# -- measures ----------------------------------------------------------------------------------
def schaefer_turek_measures(solver: tp.Solver, u_max: float | None = None) -> dict[str, float]:
    """c_D, c_L (from the momentum-exchange force) and Δp = p(front) − p(back) in the
    benchmark's units (ρ = 1, U = 0.2 m/s: p scaled by (0.2 / U_lattice)²). ``u_max`` is the
    lattice inflow centre speed the solver was built with (None: 1/n). p at the front and back
    points x_c ∓ n/2 is extrapolated linearly from the two nearest fluid nodes outside the
    cylinder; x_c is the mean x of the cylinder's nodes (exact: :func:`build` puts the centre
    on a node or halfway between two, about which the node set is symmetric)."""
    n = round(solver.geometry.shape[1] / 4.1)
    center = float(np.nonzero(solver.tags.solid)[1].mean())
    u_mean = 2.0 * inflow_speed(n, u_max) / 3.0
    force = forces(solver.engine, [CYLINDER_ID])[CYLINDER_ID]
    scale = 0.5 * u_mean**2 * n
    rho = solver.density()
    rows = rho[2 * n - 1: 2 * n + 1].mean(axis=0)  # y = 2n - 1/2: between two node rows
    solid = solver.tags.solid[2 * n - 1: 2 * n + 1].any(axis=0)

    def wall_value(x0, step):  # step 1: the front, fluid at x < x0; −1: the back
        x = math.floor(x0) if step > 0 else math.ceil(x0)
        while solid[x]:
            x -= step
        return rows[x] + (rows[x] - rows[x - step]) * (x0 - x) / step

    dp_lattice = (wall_value(center - n / 2, 1) - wall_value(center + n / 2, -1)) / 3.0
    return {"c_D": float(force[0] / scale), "c_L": float(force[1] / scale),
            "dp": float(dp_lattice * (0.2 / u_mean) ** 2)}


def report(solver: tp.Solver, *, u_max: float | None = None, **_) -> str:
    m = schaefer_turek_measures(solver, u_max)
    return ", ".join(f"{k} = {m[k]:.4f} (published {lo}-{hi})"
                     for k, (lo, hi) in SCHAEFER_TUREK.items())


if __name__ == "__main__":
    run(sys.modules[__name__])

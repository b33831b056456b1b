"""Flow past a sphere in the subcritical regime (Re = 3700, 10 000): mean drag and the
shedding Strouhal number, against DNS and LES of the literature (docs/validation/flows.md).

A sphere of diameter ``d`` nodes, centred ``upstream`` d behind a uniform velocity inlet (−x),
in a box of ``length`` d × ``width`` d × ``width`` d with a pressure outlet (+x) and periodic
sides: a square array of spheres ``width`` d apart, as free-slip sides
would be (their mirror images are the same array); the blockage π/4 / width² is 1.6 % at
width 7. (Periodic sides also keep clear of the inlet's edges with free-slip faces, where LBM
MRT grows unstable even at Re = 20: seen on this branch, not fixed here.) Both open faces
are equilibrium faces by default (``inlet``, ``outlet``: 'equilibrium' or 'zou-he'): Zou-He
faces grow disturbances at τ below 0.54 (inlet) and 0.52 (outlet), which made every run at
Re ≥ 100 blow up at the inlet plane within ~2 d/U (docs/DESIGN.md). The sphere's
surface is interpolated bounce-back (exact link distances). At these Reynolds numbers the
relaxation time is within 10⁻³ of ½: the run needs an LES (``les='smagorinsky'``) or the
cumulant model (D3Q27), passed through to the compute plug-in as plain parameters.

The forces plug-in records the momentum-exchange force every ``d / (16 u)`` steps (16 samples
per convective time d / U). :func:`wake_measures` gives the mean c_D and the Strouhal number
St = f d / U from the peak of the spectrum of the side force (F_y and F_z together: the wake
of a sphere sheds in a plane that turns), over the samples after ``transient`` convective
times.

Run::

    thelma run cases/sphere_wake.py --device cuda --set reynolds=3700 --set d=32 \\
        --set collision=cumulant --steps 48000
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run

BODY_ID = 3
"""Boundary id of the sphere (after the wall row 0, the inlet and the outlet)."""
DEFAULT_STEPS = 4_000

__all__ = ["BODY_ID", "DEFAULT_STEPS", "blockage", "build", "force_series", "report",
           "strouhal", "wake_measures"]


def blockage(width: float) -> float:
    """Frontal area of the sphere over the cross-section: π/4 / width²."""
    return math.pi / 4 / width**2


def build(*, d: int = 12, reynolds: float = 3700.0, u: float = 0.05, length: float = 15.0,
          width: float = 7.0, upstream: float = 4.0, collision: str = "mrt",
          les: str | dict | None = None, lattice: str = "D3Q19", results: Sequence = (),
          device: str = "auto", precision: str = "float64", inlet: str = "equilibrium",
          outlet: str = "equilibrium", compute: str = "lbm",
          interpolated: bool = True, kick: float = 0.0) -> tp.Solver:
    """The sphere channel (module docstring) at ``reynolds`` = U d / ν; ``collision``, ``les``
    and ``lattice`` go to the compute plug-in as given (cumulant: lattice D3Q27; ``compute``
    'lwacm' or 'lwacm-fused' takes no collision); ``inlet`` and ``outlet`` are the kinds of
    the open faces; ``interpolated`` False gives a staircase sphere (what LW-ACM takes).
    ``kick`` > 0 starts the flow with a side velocity (``kick`` U along y, ½ ``kick`` U along
    z) in the slab 0.5 d to 3 d behind the sphere's centre, so that an asymmetric wake does
    not have to grow from round-off (Re > 210); it is swept out within a few d/U."""
    nu = u * d / reynolds
    tp.units.check_mach(u)
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    shape = (round(length * d), round(width * d), round(width * d))
    geometry = tp.geometry.Geometry(shape, periodic=(False, True, True))
    geometry.inlet("-x", velocity=(u, 0.0, 0.0), kind=inlet)
    geometry.outlet("+x", rho=1.0, kind=outlet)
    centre = (upstream * d, shape[1] / 2 - 0.5, shape[2] / 2 - 0.5)
    body = geometry.body(tp.geometry.Sphere(centre, d / 2), interpolated=interpolated)
    assert body == BODY_ID
    every = max(1, round(d / (16 * u)))
    history = tp.plugin("results", "forces", every=every, bodies=[BODY_ID], velocity=u,
                        area=math.pi * d * d / 4)
    extra = {"les": les} if les is not None else {}
    if compute == "lbm":
        extra["collision"] = collision
    plugin = tp.plugin("compute", compute, nu=nu, **extra)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=_start(u, kick, centre[0], d))
    return tp.compose(lattice, geometry, plugin, init=init, results=[history, *results],
                      device=device, precision=precision)


def _start(u: float, kick: float, x0: float, d: float):
    """The initial velocity: uniform U, with the side ``kick`` of :func:`build` if any."""
    if kick == 0.0:
        return (u, 0.0, 0.0)

    def field(x, y, z):
        side = kick * u * ((x >= x0 + 0.5 * d) & (x <= x0 + 3.0 * d)) + 0.0 * (y + z)
        return (u + 0.0 * side, side, 0.5 * side)
    return field


# -- measures ----------------------------------------------------------------------------------
def force_series(solver: tp.Solver) -> dict[str, np.ndarray]:
    """Steps and force coefficients (c_D, c_y, c_z) of the sphere from the forces plug-in."""
    forces = next(r for r in solver.results if getattr(r, "history", None) is not None)
    records = forces.history
    scale = 0.5 * forces.rho * forces.velocity**2 * forces.area
    f = np.array([r[BODY_ID]["F"] for r in records], dtype=np.float64) / scale
    return {"step": np.array([r["step"] for r in records], dtype=np.float64),
            "c_D": f[:, 0], "c_y": f[:, 1], "c_z": f[:, 2]}


def strouhal(times: np.ndarray, side: Sequence[np.ndarray], d: float, u: float,
             band: tuple[float, float] = (0.05, 1.0)) -> dict[str, float]:
    """St = f d / U at the peak of the summed power spectra of the side-force coefficients
    (mean removed, Hann window, zero-padded 8 ×, peak in ``band``), and the bin width
    d / (U T) of the record of length T that limits its precision."""
    times = np.asarray(times, dtype=np.float64)
    dt = float(np.mean(np.diff(times)))
    n = len(times)
    window = np.hanning(n)
    size = 8 * n
    power = sum(np.abs(np.fft.rfft((np.asarray(s) - np.mean(s)) * window, size)) ** 2
                for s in side)
    st = np.fft.rfftfreq(size, dt) * d / u
    inside = (st >= band[0]) & (st <= band[1])
    if not inside.any():
        return {"St": math.nan, "resolution": math.nan}
    return {"St": float(st[inside][np.argmax(power[inside])]),
            "resolution": float(d / (u * dt * n))}


def wake_measures(series: dict[str, np.ndarray], d: float, u: float,
                  transient: float) -> dict[str, float]:
    """Mean c_D, rms side force and St over the samples after ``transient`` convective times
    d / U (NaN when fewer than 16 samples remain or one is not finite)."""
    late = series["step"] >= transient * d / u
    if late.sum() < 16 or not np.isfinite(series["c_D"][late]).all():
        return {"c_D": math.nan, "St": math.nan, "resolution": math.nan, "c_side_rms": math.nan,
                "convective_times": 0.0}
    t = series["step"][late]
    cy, cz = series["c_y"][late], series["c_z"][late]
    return {"c_D": float(series["c_D"][late].mean()),
            "c_side_rms": float(np.sqrt(np.mean((cy - cy.mean())**2 + (cz - cz.mean())**2))),
            "convective_times": float((t[-1] - t[0]) * u / d),
            **strouhal(t, (cy, cz), d, u)}


def report(solver: tp.Solver, *, d: int, u: float, **_) -> str:
    m = wake_measures(force_series(solver), d, u, transient=0.5 * solver.time_step * u / d)
    return (f"over the last {m['convective_times']:.1f} d/U: mean c_D = {m['c_D']:.3f}, "
            f"St = {m['St']:.3f} (± {m['resolution'] / 2:.3f})")


if __name__ == "__main__":
    run(sys.modules[__name__])

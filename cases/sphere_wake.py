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
cumulant model (D3Q27), passed through to the compute plug-in as plain parameters. At Re 3700
and d = 40 the parametrized cumulant with its limiter (Geier et al. 2017) with both faces
characteristic gave c_D within 2 % of the DNS from three starts, and St within 3 % from one
(+21 % and +136 % from the other two: the shear layer's roll-up, St 0.4–0.9, leads the
wake's side motion for tens of d/U at a time). At d = 48 in fp32 (25 + 47 d/U) c_D is
+1.0 % from two of those starts and St −2.4 % and +6.2 %; 16-bit populations raise this
drag by 5–8 % (docs/validation/store16.md). The plain cumulant gave 12 % too high an St,
Smagorinsky on BGK or MRT 5–8 % too much drag (docs/validation/flows.md, section 3). At
Re 10 000 K17 is 6.5–10 % high in drag at d = 40–48 and 4.0 % at d = 64 (16-bit populations,
``store='fp16s'``, 15 d × 7 d × 7 d). Its shedding peak wanders: windows of 36 d/U read
St 0.14–0.31, records of 150 d/U at d = 48 0.204 and 0.24, against the LES's 0.195.

The forces plug-in records the momentum-exchange force every ``d / (16 u)`` steps (16 samples
per convective time d / U), and a probes plug-in the velocity on rings of eight points about
the wake's axis (0.6 d off it; 1, 2, 3 and 5 d behind the centre) as often.
:func:`wake_measures` gives the mean c_D, the peak of the spectrum of the side force (F_y and
F_z together: the wake of a sphere sheds in a plane that turns), ``St_force``, and the
shedding Strouhal number St = f d / U from the side-to-side motion of the rings (their mean
cross-stream velocity, in which axisymmetric sound cancels), whose spectrum above St = 0.1
holds the shedding; below it lies the slow motion of the whole wake, which dominates the side
force at Re 3700 (0.05; docs/validation/flows.md).

Run (Re 3700, d = 40, 125 d/U: about 8 minutes on an H100)::

    thelma run cases/sphere_wake.py --device cuda --precision float32 --set reynolds=3700 \\
        --set d=40 --set lattice=D3Q27 --set inlet=characteristic --set outlet=characteristic \\
        --set "collision={'name': 'cumulant', 'parametrized': True, 'limiter': 0.01}" \\
        --set kick=0.2 --steps 100000
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

__all__ = ["BODY_ID", "DEFAULT_STEPS", "SHEDDING_BAND", "SHEDDING_FROM", "WAKE_AZIMUTHS",
           "WAKE_RADIUS", "WAKE_STATIONS", "blockage", "build", "cross_stream", "force_series",
           "power_spectrum", "probe_series", "report", "ring_motion", "strouhal", "wake_measures",
           "wake_points"]


WAKE_STATIONS = (1.0, 2.0, 3.0, 5.0)
"""Distances behind the sphere's centre, in d, of the rings of wake probes."""
WAKE_RADIUS = 0.6
"""Radius of each ring, in d: a little outside the sphere's edge, in the separated shear layer
near the sphere and in the wake's edge further down."""
WAKE_AZIMUTHS = 8
"""Probes per ring: the sphere sheds at random azimuths, so one probe can miss a passage."""


def blockage(width: float) -> float:
    """Frontal area of the sphere over the cross-section: π/4 / width²."""
    return math.pi / 4 / width**2


def build(*, d: int = 12, reynolds: float = 3700.0, u: float = 0.05, length: float = 15.0,
          width: float = 7.0, upstream: float = 4.0, collision: str | dict = "mrt",
          les: str | dict | None = None, lattice: str = "D3Q19", results: Sequence = (),
          device: str = "auto", precision: str = "float64", inlet: str = "equilibrium",
          outlet: str = "equilibrium", compute: str = "lbm",
          interpolated: bool = True, kick: float = 0.0, probes: bool = True,
          stations: tuple[float, ...] = WAKE_STATIONS, store: str = "fp32",
          rounding: str = "nearest") -> tp.Solver:
    """The sphere channel (module docstring) at ``reynolds`` = U d / ν; ``collision``, ``les``
    and ``lattice`` go to the compute plug-in as given (cumulant: lattice D3Q27; ``compute``
    'lwacm' or 'lwacm-fused' takes no collision); ``inlet`` and ``outlet`` are the kinds of
    the open faces ('characteristic' lets sound leave: an outlet of that kind is a
    characteristic inlet on +x holding the incoming wave at ρ = 1, U; 'outflow', a
    zero-gradient outlet, passes the wake and returns 0.2 of a sound pulse;
    docs/validation/flows.md, section 3); ``interpolated`` False gives a staircase sphere
    (what LW-ACM takes).
    ``kick`` > 0 starts the flow with a side velocity (``kick`` U along y, ½ ``kick`` U along
    z) in the slab 0.5 d to 3 d behind the sphere's centre, so that an asymmetric wake does
    not have to grow from round-off (Re > 210); it is swept out within a few d/U. ``probes``:
    record the wake velocity at :func:`wake_points` (in memory, :func:`probe_series`), on rings
    ``stations`` d behind the centre (those inside the box). ``store`` 'fp16s' or 'fp16c' keeps
    LBM's populations in 16 bits (float32 arithmetic, half the memory traffic: a finer sphere
    in the same time; docs/validation/store16.md: at Re 3700 they raise c_D by 5–8 %);
    ``rounding`` 'stochastic' rounds them without bias (LBM: dense pull storage)."""
    nu = u * d / reynolds
    tp.units.check_mach(u)
    tp.units.check_tau(tp.units.tau_from_viscosity(nu))
    shape = (round(length * d), round(width * d), round(width * d))
    geometry = tp.geometry.Geometry(shape, periodic=(False, True, True))
    geometry.inlet("-x", velocity=(u, 0.0, 0.0), kind=inlet)
    if outlet == "characteristic":  # a far-field face: the incoming wave at (ρ = 1, U)
        geometry.inlet("+x", velocity=(u, 0.0, 0.0), kind="characteristic")
    elif outlet == "outflow":  # zero gradient: the wake leaves as it comes
        geometry.outflow("+x")
    else:
        geometry.outlet("+x", rho=1.0, kind=outlet)
    centre = (upstream * d, shape[1] / 2 - 0.5, shape[2] / 2 - 0.5)
    body = geometry.body(tp.geometry.Sphere(centre, d / 2), interpolated=interpolated)
    assert body == BODY_ID
    every = max(1, round(d / (16 * u)))
    history = tp.plugin("results", "forces", every=every, bodies=[BODY_ID], velocity=u,
                        area=math.pi * d * d / 4)
    wake = []
    if probes:  # kept in memory (probe_series), no file
        points = [p for p in wake_points(centre, d, stations) if p[0] < shape[0]]
        wake.append(tp.plugin("results", "probes", points=points, fields=("u",), every=every))
    extra = {"les": les} if les is not None else {}
    if compute == "lbm":
        extra["collision"] = collision
    if store != "fp32":
        if compute not in ("lbm", "lwacm-fused"):
            raise ValueError(f"store={store!r} is for compute 'lbm' (16-bit populations) or "
                             f"'lwacm-fused' (16-bit records), not {compute!r}; use "
                             f"store='fp32'")
        extra["store"] = store
        if rounding != "nearest":
            extra["rounding"] = rounding
    elif rounding != "nearest":
        raise ValueError(f"rounding={rounding!r} is for 16-bit storage; give store='fp16s' or "
                         "'fp16c', or leave rounding='nearest'")
    plugin = tp.plugin("compute", compute, nu=nu, **extra)
    init = tp.plugin("init", "equilibrium", rho=1.0, u=_start(u, kick, centre[0], d))
    return tp.compose(lattice, geometry, plugin, init=init, results=[history, *wake, *results],
                      device=device, precision=precision)


def wake_points(centre: Sequence[float], d: float, stations: Sequence[float] = WAKE_STATIONS,
                radius: float = WAKE_RADIUS, azimuths: int = WAKE_AZIMUTHS
                ) -> list[tuple[int, int, int]]:
    """Nodes on rings of ``radius`` d about the wake's axis, ``stations`` d behind the
    sphere's centre, ``azimuths`` to a ring (the first along +y); a short box keeps the
    stations inside it (the caller drops the rest)."""
    x, y, z = centre
    turns = [2 * math.pi * k / azimuths for k in range(azimuths)]
    return [(round(x + a * d), round(y + radius * d * math.cos(t)),
             round(z + radius * d * math.sin(t))) for a in stations for t in turns]


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


def probe_series(solver: tp.Solver) -> dict[str, np.ndarray] | None:
    """Steps and the velocity components at the wake probes (one array per column), or None
    without the probes plug-in."""
    probes = next((r for r in solver.results if getattr(r, "rows", None) is not None
                   and getattr(r, "columns", None) is not None), None)
    if probes is None or not probes.rows:
        return None
    values = np.array([row[1] for row in probes.rows], dtype=np.float64)
    return {"step": np.array([row[0] for row in probes.rows], dtype=np.float64),
            **{name: values[:, k] for k, name in enumerate(probes.columns[1:])}}


def power_spectrum(signals: Sequence[np.ndarray], dt: float, segment: int | None = None,
                   pad: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies (per unit of ``dt``) and the summed power of ``signals``: each Hann-windowed
    with its mean removed and zero-padded ``pad`` ×, over the whole record or, with
    ``segment`` samples, over half-overlapping segments (Welch). Both signs of frequency:
    a complex signal u_y + i u_z keeps its sense of rotation; a real one is symmetric."""
    signals = [np.asarray(s) for s in signals]
    n = len(signals[0]) if segment is None else segment
    window, power = np.hanning(n), 0.0
    for s in signals:
        for start in range(0, len(s) - n + 1, max(1, n // 2)):
            x = s[start:start + n]
            power = power + np.abs(np.fft.fft((x - x.mean()) * window, pad * n)) ** 2
    return np.fft.fftfreq(pad * n, dt), power


def strouhal(times: np.ndarray, side: Sequence[np.ndarray], d: float, u: float,
             band: tuple[float, float] = (0.05, 1.0)) -> dict[str, float]:
    """St = f d / U at the peak of the summed power spectra of the side-force coefficients
    (:func:`power_spectrum` of the whole record, peak in ``band``), and the bin width
    d / (U T) of the record of length T that limits its precision."""
    times = np.asarray(times, dtype=np.float64)
    dt = float(np.mean(np.diff(times)))
    frequency, power = power_spectrum(side, dt)
    st = frequency * d / u
    inside = (st >= band[0]) & (st <= band[1])
    if not inside.any():
        return {"St": math.nan, "resolution": math.nan}
    return {"St": float(st[inside][np.argmax(power[inside])]),
            "resolution": float(d / (u * dt * len(times)))}


SHEDDING_BAND = (0.1, 1.0)
"""Where the wake probes' spectrum is searched for the shedding peak (St = f d / U): above the
slow motion of the whole wake (St ≈ 0.02–0.08 at Re 3700). The band also holds the shear
layer's roll-up (St ≈ 0.5–0.9 at Re 3700 and d = 40; it rises with Re): only the choice of
rings (:data:`SHEDDING_FROM`) keeps that out, and at Re 3700 it does not always (a roll-up
can lead the 3–5 d rings for tens of d/U; docs/validation/flows.md, section 3, session 28)."""


def cross_stream(probes: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The probe columns of the velocity across the stream (u_y, u_z: named ``uy_…``,
    ``uz_…`` by the probes plug-in), or every column where there are none."""
    across = {k: v for k, v in probes.items() if k.startswith(("uy_", "uz_"))}
    return across or {k: v for k, v in probes.items() if k != "step"}


def _station(column: str) -> int:
    """The x node index in a probe column's name (``uy_x130_y112_z131``)."""
    return int(column.split("_x")[1].split("_")[0])


SHEDDING_FROM = 2.5
"""Rings at least this far behind the sphere's centre (in d) give the shedding St: nearer,
the shear layer's own roll-up dominates the ring's motion (St ≈ 0.6–0.7 at Re 3700)."""


def ring_motion(probes: dict[str, np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The mean cross-stream velocity (u_y, u_z) of each ring of probes, by its x node index:
    the azimuthal mode m = 1 of the ring, the side-to-side motion of the wake. Axisymmetric
    motion (m = 0: the box's standing sound waves between inlet and outlet, the recirculation
    bubble's pumping) cancels in it, since its u_y and u_z change sign across the axis."""
    across = {k: v for k, v in probes.items() if k.startswith(("uy_", "uz_"))}
    rings = {}
    for x in sorted({_station(k) for k in across}):
        rings[x] = tuple(np.mean([v for k, v in across.items()
                                  if k.startswith(a) and _station(k) == x], axis=0)
                         for a in ("uy_", "uz_"))
    return rings


def wake_measures(series: dict[str, np.ndarray], d: float, u: float, transient: float,
                  probes: dict[str, np.ndarray] | None = None,
                  centre_x: float | None = None) -> dict:
    """Mean c_D, rms side force, the side force's spectral peak (``St_force``) and, with the
    wake ``probes``, the shedding St, over the samples after ``transient`` convective times
    d / U (NaN when fewer than 16 samples remain or one is not finite).

    St is the peak in :data:`SHEDDING_BAND` of the summed spectra of the rings'
    side-to-side motion (:func:`ring_motion`) at :data:`SHEDDING_FROM` d and beyond, with
    ``centre_x`` (the sphere's centre, in nodes); ``St_stations`` keeps each ring's peak, by
    its distance behind the centre in d. Without ``centre_x``, the peak of every cross-stream
    column; without probes, the side force's. ``St_halves`` is the same measure over the first
    and the second half of the record: a warning where they part, not a verdict (halves of
    30–50 d/U scatter by 10–40 % even where the whole record holds still, as at Re 3700; the
    K17 sphere at Re 10 000 reads 0.14 to 0.31 in windows of 36 d/U; flows.md, section 3,
    session 23)."""
    late = series["step"] >= transient * d / u
    if late.sum() < 16 or not np.isfinite(series["c_D"][late]).all():
        return {"c_D": math.nan, "St": math.nan, "St_halves": (math.nan, math.nan),
                "St_force": math.nan, "resolution": math.nan, "c_side_rms": math.nan,
                "convective_times": 0.0}
    t = series["step"][late]
    cy, cz = series["c_y"][late], series["c_z"][late]
    force = strouhal(t, (cy, cz), d, u)
    source, stations = (t, [cy, cz], (0.05, 1.0)), {}  # what St is read from
    if probes is not None:
        at = probes["step"] >= transient * d / u
        columns = {k: v[at] for k, v in probes.items() if k != "step"}
        if at.sum() >= 16 and all(np.isfinite(c).all() for c in columns.values()):
            times = probes["step"][at]
            if centre_x is None:
                source = (times, list(cross_stream(columns).values()), SHEDDING_BAND)
            else:
                rings = {(x - centre_x) / d: m for x, m in ring_motion(columns).items()}
                stations = {f"{a:.2f}": strouhal(times, m, d, u, SHEDDING_BAND)["St"]
                            for a, m in rings.items()}
                far = [c for a, m in rings.items() if a >= SHEDDING_FROM for c in m]
                source = (times, far, SHEDDING_BAND) if far else None
    st, halves = math.nan, (math.nan, math.nan)
    if source is not None:
        times, signals, band = source
        st = strouhal(times, signals, d, u, band)["St"]
        cut = len(times) // 2
        halves = tuple(strouhal(times[part], [c[part] for c in signals], d, u, band)["St"]
                       for part in (slice(0, cut), slice(cut, None)))
    return {"c_D": float(series["c_D"][late].mean()),
            "c_side_rms": float(np.sqrt(np.mean((cy - cy.mean())**2 + (cz - cz.mean())**2))),
            "convective_times": float((t[-1] - t[0]) * u / d),
            "St": st, "St_halves": halves, "St_force": force["St"],
            "resolution": force["resolution"],
            **({"St_stations": stations} if stations else {})}


def report(solver: tp.Solver, *, d: int, u: float, upstream: float = 4.0, **_) -> str:
    m = wake_measures(force_series(solver), d, u, transient=0.5 * solver.time_step * u / d,
                      probes=probe_series(solver), centre_x=upstream * d)
    first, second = m["St_halves"]
    return (f"over the last {m['convective_times']:.1f} d/U: mean c_D = {m['c_D']:.3f}, "
            f"St = {m['St']:.3f} (± {m['resolution'] / 2:.3f}; halves of the record "
            f"{first:.3f} and {second:.3f})")


if __name__ == "__main__":
    run(sys.modules[__name__])

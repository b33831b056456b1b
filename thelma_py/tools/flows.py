"""Turbulent validation runs (issue #17): the 3D Taylor-Green vortex at Re = 1600 for every
scheme with LES and the cumulant model, the channel at Re_τ = 180 and the sphere at Re = 3700
and 10 000 (and at any Re: part ``sphere --reynolds``, with LBM or LW-ACM schemes). Each run
returns a JSON-ready dict; ``python -m thelma_py.tools.flows PART --out DIR`` writes one file
per part (``benchmarks/device_flows.sh`` runs them on a GPU) and ``benchmarks/flows_plot.py``
draws the pages of docs/validation/ from them.

The collision model, the LES, the lattice, the compute plug-in and the precision are plain
parameters passed through to the plug-ins: the tables below name the combinations the
validation uses.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.cases import channel, sphere_wake
from thelma_py.cases.reference import load_tgv_reference
from thelma_py.files import atomic_write_text, read_json
from thelma_py.modules.compute.lbm.collisions.cumulant import K17
from thelma_py.modules.results.derived import (
    divergence_from_gradient,
    enstrophy_from_gradient,
    kinetic_energy,
    velocity_gradient,
)
from thelma_py.tools.validation import dissipation_rate

SMAGORINSKY = {"name": "smagorinsky", "c_s": 0.16}
TGV_SCHEMES = {
    "lbm-bgk-les": ("D3Q19", "lbm", {"collision": "bgk", "les": SMAGORINSKY}),
    "lbm-mrt-les": ("D3Q19", "lbm", {"collision": "mrt", "les": SMAGORINSKY}),
    "lwacm-les": ("D3Q19", "lwacm", {"les": SMAGORINSKY}),
    # with LES the records hold ρ − 1 by default (fp32 resolves the per-step change of ρ at
    # small ν; DESIGN, lesfix); "-absolute": records of ρ, as before session 9
    "lwacm-fused-les": ("D3Q19", "lwacm-fused", {"les": SMAGORINSKY}),
    "lwacm-fused-les-absolute": ("D3Q19", "lwacm-fused", {"les": SMAGORINSKY,
                                                          "density": "absolute"}),
    "lwacm-fused": ("D3Q19", "lwacm-fused", {}),
    "lwacm-fused-shifted": ("D3Q19", "lwacm-fused", {"density": "shifted"}),
    # the third-order equilibrium (session 14: cancels the explicit step's anti-diffusion
    # along the flow, docs/validation/lwacm_energy.md section 8); "-q27": on D3Q27, which
    # holds the component u_x u_y u_z that D3Q19 lacks
    "lwacm-les-cubic": ("D3Q19", "lwacm", {"les": SMAGORINSKY, "equilibrium_order": 3}),
    "lwacm-fused-les-cubic": ("D3Q19", "lwacm-fused", {"les": SMAGORINSKY,
                                                       "equilibrium_order": 3}),
    "lwacm-les-cubic-q27": ("D3Q27", "lwacm", {"les": SMAGORINSKY, "equilibrium_order": 3}),
    "lwacm-fused-les-cubic-q27": ("D3Q27", "lwacm-fused", {"les": SMAGORINSKY,
                                                           "equilibrium_order": 3}),
    "lwacm-fused-cubic": ("D3Q19", "lwacm-fused", {"equilibrium_order": 3}),
    "cumulant": ("D3Q27", "lbm", {"collision": "cumulant"}),
    # without a subgrid model: what runs before the LES and cumulant plug-ins are merged
    "lbm-bgk": ("D3Q19", "lbm", {"collision": "bgk"}),
    "lbm-mrt": ("D3Q19", "lbm", {"collision": "mrt"}),
}
"""Scheme name -> (lattice, compute plug-in, its parameters) for the Taylor-Green runs."""
TGV_BARS = ("lbm-bgk-les", "lbm-mrt-les", "lwacm-les", "lwacm-fused-les", "cumulant")
"""The schemes the issue's bars apply to (no divergence to t* = 20, peak dissipation)."""
TGV_PEAK_TOLERANCE = {64: None, 128: 0.10, 256: 0.05}
"""The issue's bars on the relative error of the peak −dE/dt (none at 64³)."""

CHANNEL_SCHEMES = {
    "cumulant": ("D3Q27", "lbm", {"collision": "cumulant"}),
    "cumulant-k17": ("D3Q27", "lbm", {"collision": K17}),
    "cumulant-k17-strong": ("D3Q27", "lbm", {"collision": {**K17, "limiter": 0.001}}),
    "mrt": ("D3Q19", "lbm", {"collision": "mrt"}),
    "mrt-les": ("D3Q19", "lbm", {"collision": "mrt", "les": {"name": "smagorinsky",
                                                              "c_s": 0.1}}),
    "trt": ("D3Q19", "lbm", {"collision": "trt"}),
}
SPHERE_SCHEMES = {
    "cumulant": ("D3Q27", {"collision": "cumulant"}),
    # the parametrized cumulant with its limiter, which Geier et al. (2017, part II) ran on the
    # sphere at the drag crisis
    "cumulant-k17": ("D3Q27", {"collision": K17}),
    "bgk-les": ("D3Q19", {"collision": "bgk", "les": SMAGORINSKY}),
    "trt": ("D3Q19", {"collision": "trt"}),
    "trt-staircase": ("D3Q19", {"collision": "trt", "interpolated": False}),
    "mrt": ("D3Q19", {"collision": "mrt"}),
    "bgk": ("D3Q19", {"collision": "bgk"}),
    "mrt-les": ("D3Q19", {"collision": "mrt", "les": SMAGORINSKY}),
    # LW-ACM with a staircase sphere (the session 7 runs), and at its exact surface (curved)
    "lwacm": ("D3Q19", {"compute": "lwacm", "interpolated": False}),
    "lwacm-fused": ("D3Q19", {"compute": "lwacm-fused", "interpolated": False}),
    "lwacm-curved": ("D3Q19", {"compute": "lwacm", "interpolated": True}),
    "lwacm-fused-curved": ("D3Q19", {"compute": "lwacm-fused", "interpolated": True}),
    "mrt-staircase": ("D3Q19", {"collision": "mrt", "interpolated": False}),
}
SPHERE_REFERENCE = {
    20: {"c_D": 24 / 20 * (1 + 0.15 * 20**0.687), "St": None,
         "source": "Schiller & Naumann (1933) correlation 24/Re (1 + 0.15 Re^0.687), steady"},
    100: {"c_D": 1.087, "St": None,
          "source": "Johnson & Patel (1999), J. Fluid Mech. 378, 19-70, steady axisymmetric"},
    300: {"c_D": 0.656, "St": 0.137,
          "source": "Johnson & Patel (1999), J. Fluid Mech. 378, 19-70, periodic shedding"},
    3700: {"c_D": 0.394, "St": 0.215,
           "source": "Rodríguez, Borell, Lehmkuhl, Pérez Segarra & Oliva (2011), J. Fluid "
                     "Mech. 679, 263-287, DNS"},
    10000: {"c_D": 0.40, "St": 0.195,
            "source": "c_D: the standard drag curve of smooth spheres (Schlichting's "
                      "compilation; F. A. Morrison's 2010 correlation of it gives 0.394); St: "
                      "Yun, Kim & Choi (2006), Phys. Fluids 18, 015102, LES (not checked "
                      "against the paper)"},
}
"""Published mean drag and Strouhal numbers (see docs/validation/flows.md for how sure)."""


def with_smagorinsky_constant(params: dict, c_s: float | None) -> dict:
    """A scheme's compute parameters with ``c_s`` as its Smagorinsky constant (unchanged for
    None or a scheme without LES)."""
    if c_s is None or "les" not in params:
        return params
    return {**params, "les": {**params["les"], "c_s": c_s}}


def _to_host(solver: tp.Solver, value) -> float:
    return float(solver.backend.to_host(value))


# -- Taylor-Green vortex -----------------------------------------------------------------------
TGV_U0 = 0.05
"""Lattice velocity of the vortex for LBM (Ma = 0.087)."""
LWACM_SPEED_RATIO = 0.5
"""LW-ACM's pressure waves travel at c_a = √(2ν) (docs/validation/lwacm_energy.md): its runs
keep u0 ≤ ½ c_a, i.e. u0 = L / 3200 at Re 1600 (u0/c_a = √(u0 Re / 2L))."""


def tgv_velocity(compute: str, n: int, reynolds: float = 1600.0,
                 speed_ratio: float = LWACM_SPEED_RATIO) -> float:
    """u0 of the vortex on n³ nodes: 0.05 for LBM; for LW-ACM the largest u0 with
    u0/c_a ≤ ``speed_ratio`` (below ½ the scheme is stable and nearly incompressible), capped
    at 0.05."""
    if not compute.startswith("lwacm"):
        return TGV_U0
    length = n / (2 * math.pi)
    return min(TGV_U0, 2.0 * speed_ratio**2 * length / reynolds)


def tgv_solver(scheme: str, n: int, *, u0: float | None = None, precision: str = "float32",
               device: str = "auto", speed_ratio: float = LWACM_SPEED_RATIO,
               c_s: float | None = None) -> tuple[tp.Solver, float, float, dict]:
    """(solver, u0, ν, the compute plug-in's parameters) of the Re = 1600 vortex on n³ nodes
    with ``scheme`` (:data:`TGV_SCHEMES`; L = n / 2π, V0 = u0, by default
    :func:`tgv_velocity`), at its start. ``c_s`` replaces the Smagorinsky constant of a scheme
    with LES."""
    lattice, name, params = TGV_SCHEMES[scheme]
    params = with_smagorinsky_constant(params, c_s)
    u0 = tgv_velocity(name, n, speed_ratio=speed_ratio) if u0 is None else u0
    nu = u0 * n / (2 * math.pi) / 1600.0
    size = (n, n, n)
    solver = tp.compose(lattice, tp.geometry.periodic_box(size),
                        tp.plugin("compute", name, nu=nu, **params),
                        init=tp.plugin("init", "taylor-green", u0=u0, size=size),
                        device=device, precision=precision, check_every=0)
    return solver, u0, nu, params


def tgv_run(scheme: str, n: int, *, u0: float | None = None, t_end: float = 20.0,
            samples: int = 200, precision: str = "float32", device: str = "auto",
            speed_ratio: float = LWACM_SPEED_RATIO, c_s: float | None = None) -> dict:
    """The Re = 1600 vortex on n³ nodes to t* = ``t_end`` (L = n / 2π, V0 = u0, by default
    :func:`tgv_velocity`); E_k and
    enstrophy at ``samples`` times in the reference's units, −dE/dt from them, the peak's
    error against the spectral DNS and the t* where the run diverged (E_k not finite or
    above twice its start), or None. ``c_s`` replaces the Smagorinsky constant of a scheme
    with LES."""
    solver, u0, nu, params = tgv_solver(scheme, n, u0=u0, precision=precision, device=device,
                                        speed_ratio=speed_ratio, c_s=c_s)
    lattice, name = TGV_SCHEMES[scheme][:2]
    length = n / (2 * math.pi)
    total = int(round(t_end * length / u0))
    stride = max(1, total // samples)
    series = {"t": [], "E_k": [], "enstrophy": [], "dilatation": [], "pressure_work": []}
    diverged = None
    start = time.perf_counter()
    while True:
        rho, u = solver.engine.macroscopic()
        energy = kinetic_energy(u) / u0**2
        t = solver.time_step * u0 / length
        if not math.isfinite(energy) or energy > 0.25:
            diverged = t
            break
        series["t"].append(t)
        series["E_k"].append(energy)
        gradient = velocity_gradient(u, (True, True, True))  # once for all three
        div = divergence_from_gradient(gradient)
        series["enstrophy"].append(enstrophy_from_gradient(gradient) * (length / u0) ** 2)
        series["dilatation"].append(dilatation(div) * (length / u0) ** 2)
        series["pressure_work"].append(pressure_work(rho, div) * length / u0**3)
        if solver.time_step >= total:
            break
        solver.run(min(stride, total - solver.time_step))
    rate = dissipation_rate(series["t"], series["E_k"]) if len(series["t"]) > 2 else []
    reference = load_tgv_reference()
    ref_peak = float(reference["minus_dEk_dt"].max())
    # the peak after t* = 1: the equilibrium start sheds energy in its first steps
    later = np.flatnonzero(np.asarray(series["t"]) >= 1.0) if len(rate) else []
    peak_at = int(later[np.argmax(np.asarray(rate)[later])]) if len(later) else None
    peak = float(rate[peak_at]) if peak_at is not None else math.nan
    return {"scheme": scheme, "lattice": lattice, "compute": name,
            "params": json.loads(json.dumps(params)), "n": n, "u0": u0, "nu": nu,
            "speed_ratio": u0 / math.sqrt(2 * nu) if name.startswith("lwacm") else None,
            "precision": precision, "reynolds": 1600.0, "steps": solver.time_step,
            "mlups": solver.mlups, "wall_seconds": time.perf_counter() - start,
            "diverged_at": diverged, **series, "minus_dEk_dt": [float(r) for r in rate],
            "peak": peak, "peak_time": float(series["t"][peak_at])
            if peak_at is not None else math.nan,
            "peak_error": peak / ref_peak - 1, "reference_peak": ref_peak}


def dilatation(div) -> float:
    """Volume mean of (∇·u)²/2 for the divergence ``div``: beside the enstrophy (the mean of
    |ω|²/2) it measures how far a flow is from incompressible."""
    return float(0.5 * (div**2).mean())


def pressure_work(rho, div) -> float:
    """Volume mean of p ∇·u with p = (ρ − 1)/3 for the divergence ``div``: the rate at which a
    compressible flow's kinetic energy turns into pressure energy is its negative."""
    return float((((rho - 1.0) / 3.0) * div).mean())


def tgv_energy_error(run: dict) -> float:
    """|E_k − E_k,DNS| / E_k,DNS at the run's last sample (NaN if it diverged)."""
    if run.get("diverged_at") is not None:
        return math.nan
    ref = load_tgv_reference()
    return abs(run["E_k"][-1] / float(np.interp(run["t"][-1], ref["t"], ref["E_k"])) - 1)


# -- channel -----------------------------------------------------------------------------------
def channel_run(scheme: str = "cumulant", *, h: int = 32, re_tau: float = 180.0,
                u_tau: float = 0.005, transient: float = 50.0, average: float = 30.0,
                samples_per_turnover: int = 10, precision: str = "float32",
                device: str = "auto", max_seconds: float | None = None, **build) -> dict:
    """The channel of :mod:`thelma_py.cases.channel` run ``transient`` eddy turnovers h / u_τ,
    then averaged over ``average`` more (``samples_per_turnover`` profiles each). Returns the
    folded U⁺(y⁺), the measured Re_τ (wall stress of the mean profile), its history (one
    value per sample, from the instantaneous plane means) and the deviations from MKM; also
    ⟨u′v′⟩⁺, Re_τ from the total stress at the first node and U⁺ on the input u_τ (with its
    deviations). ``max_seconds`` ends the run early, with the samples so far (``stopped_at``,
    in turnovers)."""
    lattice, name, params = CHANNEL_SCHEMES[scheme]
    solver = channel.build(h=h, re_tau=re_tau, u_tau=u_tau, lattice=lattice, compute=name,
                           device=device, precision=precision, **params, **build)
    nu = channel.parameters(h, re_tau, u_tau)["nu"]
    turnover = channel.eddy_turnover(h, u_tau)
    stride = max(1, round(turnover / samples_per_turnover))
    start = time.perf_counter()
    history, average_profile = [], channel.ChannelAverage()
    stress = channel.ShearStressAverage()
    end_transient = round(transient * turnover)
    total = end_transient + round(average * turnover)
    diverged = stopped = None
    while solver.time_step < total:
        if max_seconds is not None and time.perf_counter() - start > max_seconds:
            stopped = solver.time_step / turnover
            break
        try:
            solver.run(min(stride, total - solver.time_step))
        except tp.DivergenceError:
            diverged = solver.time_step / turnover
            break
        instant = channel.ChannelAverage()
        instant.sample(solver)
        profile = instant.profile()
        if not np.isfinite(profile).all():
            diverged = solver.time_step / turnover
            break
        history.append([solver.time_step / turnover,
                        channel.wall_units(profile, nu)["re_tau"], float(profile.max())])
        if solver.time_step > end_transient:
            average_profile.add(np.concatenate([profile, profile[::-1]]))
            stress.sample(solver)
    out = {"scheme": scheme, "lattice": lattice, "compute": name,
           "params": json.loads(json.dumps(params)), "h": h, "shape": solver.geometry.shape,
           "re_tau_input": re_tau, "u_tau_input": u_tau, "nu": nu, "precision": precision,
           "turnover_steps": turnover, "transient": transient, "average": average,
           "steps": solver.time_step, "mlups": solver.mlups,
           "wall_seconds": time.perf_counter() - start, "diverged_at": diverged,
           "stopped_at": stopped, "history": history, "samples": average_profile.samples}
    if average_profile.samples:
        mean = average_profile.profile()
        w = channel.wall_units(mean, nu)
        uv = stress.profile()
        # the same profile in the input's wall units (u_τ from the force: the statistically
        # steady state's wall stress)
        y_input, u_input = (np.arange(h) + 0.5) * u_tau / nu, mean / u_tau
        out.update({"y_plus": w["y_plus"].tolist(), "U_plus": w["U_plus"].tolist(),
                    "re_tau": w["re_tau"],
                    "U_plus_error": channel.compare_mkm(w["y_plus"], w["U_plus"]),
                    "uv_plus": (uv / w["u_tau"] ** 2).tolist(),
                    "re_tau_total_stress": channel.total_stress_re_tau(mean, uv, nu),
                    "U_plus_input": u_input.tolist(),
                    "U_plus_input_error": channel.compare_mkm(y_input, u_input)})
    return out


CHANNEL_PROBES = (5.0, 14.0, 30.0, 100.0)
"""y⁺ at which :func:`channel_summary` prints U⁺ against MKM (and the centre line)."""


def channel_passes(run: dict) -> bool:
    """The issue's bar: measured Re_τ within 5 % of 180, U⁺ within 5 % of MKM for y⁺ ≥ 30 and
    within 10 % below."""
    if "re_tau" not in run:
        return False
    e = run["U_plus_error"]
    return abs(run["re_tau"] / 180.0 - 1) <= 0.05 and e["above"] <= 0.05 and e["below"] <= 0.10


def channel_summary(runs: list[dict]) -> str:
    """One line per channel run: scheme, u_τ, measured Re_τ, the largest U⁺ errors, U⁺ at
    :data:`CHANNEL_PROBES` inside the profile and at the centre (MKM's in brackets), and
    whether it meets the bar."""
    mkm = channel.load_mkm()
    lines = []
    for r in runs:
        if "re_tau" not in r:
            lines.append(f"{r.get('scheme')} u_tau={r.get('u_tau_input')}: "
                         f"{_channel_failure(r)}")
            continue
        y, u = np.asarray(r["y_plus"]), np.asarray(r["U_plus"])
        probes = [(p, np.interp(p, y, u), np.interp(p, mkm["y_plus"], mkm["U_plus"]))
                  for p in CHANNEL_PROBES if y[0] <= p < y[-1]]
        probes.append((y[-1], u[-1], float(mkm["U_plus"][-1])))
        at = " ".join(f"{p:.0f}:{a:.2f}({b:.2f})" for p, a, b in probes)
        e = r["U_plus_error"]
        extra = ""
        if "re_tau_total_stress" in r:  # runs of this driver (session 5's run lacks them)
            ei = r["U_plus_input_error"]
            extra = (f" (total stress {r['re_tau_total_stress']:.1f}; on the input u_tau U+ "
                     f"error {ei['below']:.3f} below, {ei['above']:.3f} above)")
        lines.append(f"{r['scheme']} u_tau={r['u_tau_input']:g}: Re_tau {r['re_tau']:.1f}"
                     f"{extra}, U+ error {e['below']:.3f} below y+ 30, {e['above']:.3f} above; "
                     f"U+ at y+ {at}; {'PASSES' if channel_passes(r) else 'fails'} the bar"
                     f"{_channel_stop(r)}")
    return "\n".join(lines)


# -- sphere ------------------------------------------------------------------------------------
def sphere_run(reynolds: float, scheme: str = "cumulant", *, d: int = 32, u: float = 0.05,
               transient: float = 25.0, average: float = 50.0, precision: str = "float32",
               device: str = "auto", max_seconds: float | None = None,
               c_s: float | None = None, **build) -> dict:
    """The sphere of :mod:`thelma_py.cases.sphere_wake` at ``reynolds`` for ``transient`` +
    ``average`` convective times d / U; mean c_D and St over the last ``average`` (NaN, with
    ``diverged_at`` in d/U, if the run diverged). ``max_seconds`` ends the run early (at a
    whole d/U), measuring over what came after ``transient`` (``stopped_at``, in d/U).
    ``c_s`` replaces the Smagorinsky constant of a scheme with LES."""
    lattice, params = SPHERE_SCHEMES[scheme]
    params = with_smagorinsky_constant(params, c_s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # τ near ½: the subgrid model or cumulants handle it
        solver = sphere_wake.build(d=d, reynolds=reynolds, u=u, lattice=lattice, device=device,
                                   precision=precision, **params, **build)
    total = round((transient + average) * d / u)
    start = time.perf_counter()
    diverged = stopped = None
    chunk = total if max_seconds is None else max(1, round(d / u))
    try:
        while solver.time_step < total:
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                stopped = solver.time_step * u / d
                break
            solver.run(min(chunk, total - solver.time_step))
    except tp.DivergenceError:
        diverged = solver.time_step * u / d
    series = sphere_wake.force_series(solver)
    finite = np.isfinite(series["c_D"])
    if diverged is None and not finite.all():
        diverged = float(series["step"][np.argmin(finite)] * u / d)
    probes = sphere_wake.probe_series(solver)
    measures = sphere_measures(series, probes, d, u, transient, build)
    ref = SPHERE_REFERENCE.get(int(reynolds))
    errors = {f"{k}_error": measures[k] / ref[k] - 1 for k in ("c_D", "St")
              if ref and ref[k]}
    return {"reynolds": reynolds, "scheme": scheme, "lattice": lattice,
            "params": json.loads(json.dumps(params)), "d": d, "u": u,
            "options": json.loads(json.dumps(build)), "nu": u * d / reynolds,
            "shape": solver.geometry.shape, "blockage": sphere_wake.blockage(
                build.get("width", 7.0)), "precision": precision, "steps": solver.time_step,
            "mlups": solver.mlups, "wall_seconds": time.perf_counter() - start,
            "diverged_at": diverged, "stopped_at": stopped, **measures, **errors,
            "reference": ref, "series": {k: v.tolist() for k, v in series.items()},
            "probes": None if probes is None else _rounded(probes)}


def sphere_measures(series: dict, probes: dict | None, d: int, u: float, transient: float,
                    build: dict) -> dict:
    """Mean c_D, St and the rings' St after ``transient`` d/U of a sphere run's force
    ``series`` and wake ``probes``, the sphere placed by the ``build`` options of
    :func:`sphere_run` (also for runs read back from JSON: ``benchmarks/sphere_plot.py``)."""
    return sphere_wake.wake_measures(series, d, u, transient, probes,
                                     centre_x=build.get("upstream", 4.0) * d)


def sphere_records(path: str | Path) -> list[dict]:
    """The sphere runs stored in ``path``: the ``runs`` of a ``flows sphere`` output, or the
    one run of the ``sphere_subcritical.json`` that ``thelma validate`` keeps (``.gz`` too)."""
    data = read_json(path)
    return data.get("runs", [data])


def _rounded(columns: dict[str, np.ndarray], digits: int = 5) -> dict[str, list[float]]:
    """Columns as lists of floats to ``digits`` significant digits (the JSON stays small)."""
    return {k: [float(f"{x:.{digits}g}") for x in v] for k, v in columns.items()}


# -- command line ------------------------------------------------------------------------------
def _write(out: Path, name: str, data) -> None:
    out.mkdir(parents=True, exist_ok=True)  # atomic: a device call's timeout can cut a run short
    atomic_write_text(out / f"{name}.json", json.dumps(data, indent=1, default=float))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("tgv", "channel", "channel-summary", "sphere3700",
                                         "sphere10000", "sphere"))
    parser.add_argument("--out", type=Path, default=Path("out"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--sizes", default="64,128,256", help="tgv: n per side")
    parser.add_argument("--schemes", default=None, help="comma-separated scheme names")
    parser.add_argument("--t-end", type=float, default=20.0, help="tgv: end time t*")
    parser.add_argument("--speed-ratio", type=float, default=LWACM_SPEED_RATIO,
                        help="tgv: LW-ACM's u0 / c_a (c_a = √(2ν), its sound speed)")
    parser.add_argument("--c-s", type=float, default=None,
                        help="tgv, sphere: the Smagorinsky constant of the schemes with LES")
    parser.add_argument("--h", type=int, default=32, help="channel: half-height in nodes")
    parser.add_argument("--u-tau", type=float, default=0.005,
                        help="channel: input friction velocity (lattice; u_c ~ 18.3 u_tau)")
    parser.add_argument("--transient", type=float, default=None,
                        help="channel: eddy turnovers; sphere: d/U before averaging")
    parser.add_argument("--average", type=float, default=None,
                        help="channel: eddy turnovers; sphere: d/U of averaging")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="channel, sphere: end each run after this long, keeping its "
                             "samples")
    parser.add_argument("--d", type=int, default=32, help="sphere: diameter in nodes")
    parser.add_argument("--reynolds", type=float, default=300.0, help="sphere: Re")
    parser.add_argument("--u", type=float, default=0.05, help="sphere: lattice velocity")
    parser.add_argument("--kick", type=float, default=0.0,
                        help="sphere: side velocity behind the sphere at the start, in U")
    parser.add_argument("--box", default=None,
                        help="sphere: length,width,upstream in d (default 15,7,4)")
    parser.add_argument("--inlet", default=None,
                        help="sphere: the inlet kind (equilibrium, characteristic, zou-he)")
    parser.add_argument("--outlet", default=None,
                        help="sphere: the outlet kind (equilibrium, characteristic, outflow, "
                             "zou-he)")
    parser.add_argument("--stations", default=None,
                        help="sphere: the wake rings' distances behind the centre in d "
                             "(default 1,2,3,5)")
    parser.add_argument("--store", default=None,
                        help="sphere: LBM population storage (fp32, fp16s, fp16c)")
    parser.add_argument("--rounding", default=None,
                        help="sphere: rounding of 16-bit populations (nearest, stochastic)")
    parser.add_argument("--tag", default="", help="suffix of the output file name")
    args = parser.parse_args(argv)
    common = {"device": args.device, "precision": args.precision}
    times = {k: v for k, v in (("transient", args.transient), ("average", args.average))
             if v is not None}
    if args.part == "tgv":
        runs = []
        for n in (int(v) for v in args.sizes.split(",")):
            for scheme in (args.schemes or ",".join(TGV_BARS)).split(","):
                try:
                    r = tgv_run(scheme, n, t_end=args.t_end, speed_ratio=args.speed_ratio,
                                c_s=args.c_s, **common)
                except Exception as error:  # noqa: BLE001 - record the failure, run the rest
                    r = {"scheme": scheme, "n": n, "error": f"{type(error).__name__}: {error}"}
                runs.append(r)
                _write(args.out, f"flows_tgv{args.tag}", {"runs": runs})
                print(_tgv_line(r), flush=True)
        return
    if args.part == "channel-summary":  # the channel runs found in --out
        runs = [r for path in sorted(args.out.glob("flows_channel*.json"))
                for r in json.loads(path.read_text())["runs"]]
        print(channel_summary(runs))
        return
    if args.part == "channel":
        runs = []
        for scheme in (args.schemes or "cumulant").split(","):
            try:
                r = channel_run(scheme, h=args.h, u_tau=args.u_tau,
                                max_seconds=args.max_seconds, **times, **common)
            except Exception as error:  # noqa: BLE001
                r = {"scheme": scheme, "error": f"{type(error).__name__}: {error}"}
            runs.append(r)
            _write(args.out, f"flows_channel{args.tag}", {"runs": runs})
            print(_channel_line(r), flush=True)
        return
    reynolds = {"sphere3700": 3700.0, "sphere10000": 10000.0}.get(args.part, args.reynolds)
    case = {} if args.box is None else dict(zip(("length", "width", "upstream"),
                                               (float(v) for v in args.box.split(",")),
                                               strict=True))
    case.update({k: v for k, v in (("inlet", args.inlet), ("outlet", args.outlet),
                                   ("store", args.store), ("rounding", args.rounding))
                 if v})
    if args.stations:
        case["stations"] = tuple(float(v) for v in args.stations.split(","))
    name = args.part if args.part != "sphere" else f"sphere{reynolds:g}"
    runs = []
    for scheme in (args.schemes or "cumulant").split(","):
        try:
            r = sphere_run(reynolds, scheme, d=args.d, u=args.u, kick=args.kick, **case,
                           max_seconds=args.max_seconds, c_s=args.c_s, **times, **common)
        except Exception as error:  # noqa: BLE001
            r = {"scheme": scheme, "reynolds": reynolds,
                 "error": f"{type(error).__name__}: {error}"}
        runs.append(r)
        _write(args.out, f"flows_{name}{args.tag}", {"runs": runs})
        print(_sphere_line(r), flush=True)


def _tgv_line(r: dict) -> str:
    if "error" in r:
        return f"tgv {r['scheme']:16s} n={r['n']:4d}: {r['error']}"
    status = (f"ran to t*={r['t'][-1]:.1f}" if r["diverged_at"] is None
              else f"DIVERGED at t*={r['diverged_at']:.2f}")
    ratio = f" u0/c_a={r['speed_ratio']:.2f}" if r.get("speed_ratio") else ""
    if "les" in r["params"]:
        ratio += f" C_s={r['params']['les']['c_s']:g}"
    return (f"tgv {r['scheme']:16s} n={r['n']:4d} {r['precision']}{ratio}: {status}, "
            f"peak -dE/dt {r['peak']:.5f} at t*={r['peak_time']:.2f} "
            f"({r['peak_error']:+.1%} vs DNS), {r['mlups']:.0f} MLUPS, {r['wall_seconds']:.0f} s")


def _channel_line(r: dict) -> str:
    if "error" in r:
        return f"channel {r['scheme']}: {r['error']}"
    if "re_tau" not in r:
        return f"channel {r['scheme']}: {_channel_failure(r)}"
    e = r["U_plus_error"]
    return (f"channel {r['scheme']} h={r['h']} u_tau={r['u_tau_input']:g}: Re_tau = "
            f"{r['re_tau']:.1f} (input {r['re_tau_input']:g}), U+ max error {e['below']:.3f} "
            f"below y+=30, {e['above']:.3f} above; {r['mlups']:.0f} MLUPS, "
            f"{r['wall_seconds']:.0f} s{_channel_stop(r)}")


def _channel_failure(r: dict) -> str:
    if r.get("error"):
        return r["error"]
    if r.get("stopped_at") is not None:
        return f"time limit at {r['stopped_at']:.1f} turnovers, before any average"
    return f"diverged at {r.get('diverged_at')} turnovers"


def _channel_stop(r: dict) -> str:
    stopped = r.get("stopped_at")
    return "" if stopped is None else (f" (time limit at {stopped:.1f} turnovers, "
                                       f"{r['samples']} samples)")


def halves_text(r: dict) -> str:
    """The St of the two halves of a run's record (runs written before they were measured
    have none)."""
    halves = r.get("St_halves") or (math.nan, math.nan)
    return " and ".join(f"{v:.3f}" for v in halves)


def _sphere_line(r: dict) -> str:
    if "error" in r:
        return f"sphere Re={r['reynolds']:g} {r['scheme']}: {r['error']}"
    ref = r["reference"] or {}
    les = r["params"].get("les")
    constant = f" C_s={les['c_s']:g}" if les else ""
    return (f"sphere Re={r['reynolds']:g} {r['scheme']}{constant} d={r['d']}: c_D = {r['c_D']:.3f} "
            f"(ref {ref.get('c_D')}), St = {r['St']:.3f} ± {r['resolution'] / 2:.3f} (ref "
            f"{ref.get('St')}; halves of the record {halves_text(r)}); {r['mlups']:.0f} MLUPS, "
            f"{r['wall_seconds']:.0f} s"
            + (f", stopped at {r['stopped_at']:.1f} d/U" if r.get("stopped_at") else "")
            + (f", DIVERGED at {r['diverged_at']:.1f} d/U" if r.get("diverged_at") else ""))


if __name__ == "__main__":
    main()

"""Turbulent validation cases of issue #17: the channel (cases/channel.py), the sphere wake
(cases/sphere_wake.py) and the Taylor-Green driver (thelma_py.tools.flows). The answers come
from the laminar channel's exact parabola, the MKM DNS, synthetic signals of known frequency
and the spectral TGV DNS; the turbulent runs themselves are GPU work
(benchmarks/device_flows.sh)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.cases import channel, sphere_wake
from thelma_py.lattice import LATTICES
from thelma_py.modules.results.derived import divergence_from_gradient, velocity_gradient
from thelma_py.tools import flows


def _buildable(scheme: str) -> bool:
    """Does the compute plug-in of this TGV scheme take its parameters (on this branch)?"""
    _, name, params = flows.TGV_SCHEMES[scheme]
    try:
        tp.plugin("compute", name, nu=0.01, **params)
    except (TypeError, ValueError):
        return False
    return True


MISSING = "the scheme's plug-in or parameter is on another branch (les / lwacm / cumulant)"


@pytest.fixture(scope="module")
def laminar_channel():
    """The force-driven channel at Re_τ = 2 (laminar), h = 8, TRT (its halfway walls are
    exactly where they should be for a parabola), run 4000 steps from Reichardt's profile:
    the slowest start-up mode has decayed by e^-15."""
    solver = channel.build(h=8, re_tau=2.0, u_tau=0.02, amplitude=0.0, length=0.1, width=0.1,
                           collision="trt", device="cpu")
    solver.run(4000)
    return solver


def test_laminar_channel_is_the_exact_parabola(laminar_channel):
    """U(η) = g / (2ν) (2hη − η²) with the walls half a spacing beyond the faces (η = j + ½):
    the width is 2h and the force g = u_τ² / h. Tolerance 1e-4 relative: TRT's halfway walls
    are exact for the parabola, what is left is the decay of the start (e^-15)."""
    h, p = 8, channel.parameters(8, 2.0, 0.02)
    average = channel.ChannelAverage()
    average.sample(laminar_channel)
    eta = np.arange(h) + 0.5
    exact = p["force"] / (2 * p["nu"]) * (2 * h * eta - eta**2)
    np.testing.assert_allclose(average.profile(), exact, rtol=1e-4)


def test_measured_re_tau_is_the_wall_stress_of_the_profile(laminar_channel):
    """The one-sided wall stress ν U(½) / ½ of the exact parabola is g h (1 − 1/(4h)): the
    measured Re_τ is √(1 − 1/(4h)) times the forcing's, to 1e-4."""
    average = channel.ChannelAverage()
    average.sample(laminar_channel)
    measured = channel.wall_units(average.profile(), laminar_channel.compute.nu)["re_tau"]
    assert measured == pytest.approx(2.0 * math.sqrt(1 - 1 / 32), rel=1e-4)


def test_channel_average_folds_both_walls_and_time():
    average = channel.ChannelAverage()
    average.add(np.array([1.0, 2.0, 3.0, 4.0]))
    average.add(np.array([3.0, 4.0, 5.0, 6.0]))
    # mean over samples [2, 3, 4, 5]; folded: (2 + 5) / 2, (3 + 4) / 2
    np.testing.assert_allclose(average.profile(), [3.5, 3.5])


def test_shear_stress_average_folds_with_the_sign_of_v():
    """Plane covariances of 2h = 4 nodes: the upper wall's ⟨u′v′⟩ enters with its sign turned
    (v points into that wall), so a mirror-symmetric channel gives the lower wall's value."""
    stress = channel.ShearStressAverage()
    stress.add(np.array([-1.0, -2.0, 2.0, 1.0]))
    stress.add(np.array([-3.0, -4.0, 4.0, 3.0]))
    np.testing.assert_allclose(stress.profile(), [-2.0, -3.0])


def test_total_stress_re_tau_adds_the_reynolds_stress_at_the_first_node():
    """u_τ² = ν U₁/η₁ − ⟨u′v′⟩₁: without covariance the slope measure; with −⟨u′v′⟩₁ equal to
    the viscous part, Re_τ grows by √2."""
    nu, profile = 1e-3, np.array([0.01, 0.03, 0.04])
    slope = channel.wall_units(profile, nu)["re_tau"]
    assert channel.total_stress_re_tau(profile, np.zeros(3), nu) == pytest.approx(slope)
    uv = np.array([-nu * 0.01 / 0.5, 0.0, 0.0])
    assert channel.total_stress_re_tau(profile, uv, nu) == pytest.approx(slope * math.sqrt(2))


def test_reichardt_start_follows_the_dns():
    """The start's mean profile is within 6 % of MKM's U⁺ over 1 ≤ y⁺ ≤ 170 (Reichardt's fit
    sits above the DNS in the buffer layer by up to ~5 %)."""
    mkm = channel.load_mkm()
    inside = (mkm["y_plus"] >= 1) & (mkm["y_plus"] <= 170)
    ratio = channel.reichardt(mkm["y_plus"][inside]) / mkm["U_plus"][inside]
    assert np.abs(ratio - 1).max() < 0.06


def test_mkm_table_is_re_tau_178():
    """The packaged MKM table: the wall point, U⁺ = y⁺ in the sublayer and its last y⁺."""
    mkm = channel.load_mkm()
    assert mkm["y_plus"][0] == 0 and mkm["U_plus"][0] == 0
    assert mkm["y_plus"][-1] == pytest.approx(178, rel=0.01)
    assert mkm["U_plus"][1] == pytest.approx(mkm["y_plus"][1], rel=0.01)


def test_compare_mkm_against_itself_and_a_scaled_profile():
    mkm = channel.load_mkm()
    y = mkm["y_plus"][1:]
    assert channel.compare_mkm(y, mkm["U_plus"][1:])["above"] < 1e-12
    scaled = channel.compare_mkm(y, 1.07 * mkm["U_plus"][1:])
    assert scaled["below"] == pytest.approx(0.07) and scaled["above"] == pytest.approx(0.07)


def _run_like_mkm(scale: float = 1.0, re_tau: float = 178.0) -> dict:
    """A channel_run result whose profile is MKM's (times ``scale``) at h = 32's y⁺."""
    mkm = channel.load_mkm()
    y = (np.arange(32) + 0.5) * 178.0 / 32
    u = scale * np.interp(y, mkm["y_plus"], mkm["U_plus"])
    return {"scheme": "fake", "u_tau_input": 0.005, "re_tau": re_tau, "y_plus": y.tolist(),
            "U_plus": u.tolist(), "U_plus_error": channel.compare_mkm(y, u)}


def test_channel_bar_and_summary():
    """The bar (Re_τ within 5 %, U⁺ within 5 % for y⁺ ≥ 30, 10 % below) on MKM's own profile
    (passes), 6 % above it (fails above y⁺ = 30), Re_τ 170 (fails) and a diverged run."""
    assert flows.channel_passes(_run_like_mkm())
    assert not flows.channel_passes(_run_like_mkm(1.06))
    assert not flows.channel_passes(_run_like_mkm(re_tau=170.0))
    diverged = {"scheme": "cumulant", "u_tau_input": 0.005, "diverged_at": 3.5}
    assert not flows.channel_passes(diverged)
    lines = flows.channel_summary([_run_like_mkm(), _run_like_mkm(1.06), diverged]).splitlines()
    assert "PASSES" in lines[0] and "14:10.4" in lines[0] and "fails" in lines[1]
    assert lines[2] == "cumulant u_tau=0.005: diverged at 3.5 turnovers"


@pytest.mark.filterwarnings("ignore:lattice velocity .* is Mach")
def test_channel_time_limit_ends_the_run_and_says_so():
    """max_seconds = 0: no step, no average, and the lines say why; a stopped run with samples
    keeps its numbers and says where it stopped."""
    run = flows.channel_run("trt", h=3, re_tau=20.0, u_tau=0.01, transient=0.02, average=0.02,
                            device="cpu", max_seconds=0.0)
    assert run["steps"] == 0 and run["stopped_at"] == 0.0 and "re_tau" not in run
    assert "time limit at 0.0 turnovers, before any average" in flows._channel_line(run)
    partial = {**_run_like_mkm(), "stopped_at": 42.5, "samples": 120}
    assert flows.channel_summary([partial]).endswith("(time limit at 42.5 turnovers, "
                                                     "120 samples)")


def test_device_channel_variants_name_known_schemes():
    """benchmarks/device_channel.sh names schemes of CHANNEL_SCHEMES, which build."""
    import re
    from pathlib import Path

    script = (Path(__file__).parents[1] / "benchmarks" / "device_channel.sh").read_text()
    schemes = set(re.findall(r"--schemes (\S+)", script))
    assert schemes and schemes <= set(flows.CHANNEL_SCHEMES), schemes
    for scheme in schemes:
        lattice, name, params = flows.CHANNEL_SCHEMES[scheme]
        tp.plugin("compute", name, nu=0.001, **params).check(LATTICES[lattice])


@pytest.mark.slow  # ~40 s: a coarse channel on the CUDA engine compiled for the host
@pytest.mark.filterwarnings("ignore:lattice velocity .* is Mach")
@pytest.mark.filterwarnings("ignore:tau")
def test_parametrized_cumulant_keeps_a_coarse_channel_turbulent(host_gpu, monkeypatch):
    """Why the channel's U⁺ was 16–21 % high with the plain cumulant (ω = 1 for every higher
    cumulant): it damps the near-wall turbulence. At h = 8 (Δ⁺ = 22, Re_τ = 180) it goes
    laminar: the centre line (on the input u_τ) climbs from 18.3 to 23.8 u_τ in 6 eddy
    turnovers and keeps climbing (laminar: 90), while Geier et al. (2017)'s parametrized rates
    with the limiter keep it turbulent at 18.2 u_τ, MKM's 18.3 (measured; the same run: plain
    15 turnovers 26, K17 17.8). Asserted: K17 within 10 % of MKM's centre line, which the
    plain model's 23.8 misses by 30 % (its run was dropped from the test in session 30 to
    save CI time: a K17 that fell back to the plain rates fails this bound)."""
    import thelma_py.solver

    monkeypatch.setattr(thelma_py.solver, "select_backend", lambda device: type(host_gpu)())
    run = flows.channel_run("cumulant-k17", h=8, transient=6.0, average=0.1,
                            samples_per_turnover=2, device="cuda")
    assert run["diverged_at"] is None
    centre = run["history"][-1][2] / 0.005
    assert abs(centre / channel.CENTRELINE_U_PLUS - 1) < 0.10, centre


@pytest.mark.parametrize("plane", ["fixed", "turning"])
def test_strouhal_from_side_forces(plane):
    """A side force at St = 0.21 (d = 32, U = 0.05: period 3048 steps) over 20 periods,
    sampled every 2 steps, with noise; in a fixed plane or a plane turning slowly (the sphere's
    wake). Found within half the spectral bin d / (U T)."""
    d, u, st = 32, 0.05, 0.21
    t = np.arange(0, 20 / st * d / u, 2.0)
    rng = np.random.default_rng(3)
    phase = 2 * np.pi * st * u / d * t
    turn = 0.0 if plane == "fixed" else 2 * np.pi * t / t[-1] * 0.3
    cy = 0.1 * np.sin(phase) * np.cos(turn) + 0.02 * rng.standard_normal(len(t))
    cz = 0.1 * np.sin(phase) * np.sin(turn) + 0.02 * rng.standard_normal(len(t))
    m = sphere_wake.strouhal(t, (cy, cz), d, u)
    assert abs(m["St"] - st) <= m["resolution"] / 2
    assert m["resolution"] == pytest.approx(st / 20, rel=0.01)


def test_shedding_strouhal_comes_from_the_rings_side_to_side_motion():
    """The Re 3700 situation: a slow wake motion (St 0.05) dominates the side force; on the
    rings a standing sound wave of the box (St 0.575, axisymmetric: u_y, u_z point away from
    the axis) is stronger than the shedding (St 0.21, the whole ring moving sideways), and the
    ring 1 d behind the centre moves with the shear layer's roll-up (St 0.65). St is the side
    motion of the rings from 2.5 d on; St_stations keeps each ring's; without the centre, the
    peak of every cross-stream column (the sound wave); without probes, the side force's."""
    d, u, centre = 32, 0.05, 128
    t = np.arange(0, 40 * d / u, 2.0)
    slow, shed, sound, roll = (2 * np.pi * s * u / d * t for s in (0.05, 0.21, 0.575, 0.65))
    series = {"step": t, "c_D": np.full(len(t), 0.4), "c_y": 0.1 * np.sin(slow)
              + 0.02 * np.sin(shed), "c_z": 0.05 * np.cos(slow)}
    probes = {"step": t}
    for x, side in ((160, 0.002 * np.sin(roll)), (224, 0.001 * np.sin(shed)),
                    (288, 0.001 * np.cos(shed))):
        for k in range(8):
            angle = 2 * np.pi * k / 8
            at = f"_x{x}_y{round(112 + 19 * np.cos(angle))}_z{round(112 + 19 * np.sin(angle))}"
            probes["ux" + at] = 0.01 * np.sin(slow)
            probes["uy" + at] = 0.005 * np.cos(angle) * np.sin(sound) + side
            probes["uz" + at] = 0.005 * np.sin(angle) * np.sin(sound) + 0.5 * side
    m = sphere_wake.wake_measures(series, d, u, 0.0, probes, centre_x=centre)
    half = m["resolution"] / 2
    assert abs(m["St"] - 0.21) <= half
    assert abs(m["St_force"] - 0.05) <= half
    assert set(m["St_stations"]) == {"1.00", "3.00", "5.00"}
    assert abs(m["St_stations"]["1.00"] - 0.65) <= half
    assert abs(m["St_stations"]["5.00"] - 0.21) <= half
    assert abs(sphere_wake.wake_measures(series, d, u, 0.0, probes)["St"] - 0.575) <= half
    assert sphere_wake.wake_measures(series, d, u, 0.0)["St"] == m["St_force"]


def ring_probes(t, d, u, signal_of_time, stations=(3, 5), centre=128) -> dict:
    """Rings of eight probes at ``stations`` d behind ``centre`` whose u_y is ``signal``."""
    probes = {"step": t}
    for station in stations:
        for k in range(8):
            angle = 2 * np.pi * k / 8
            at = (f"_x{centre + station * d}_y{round(112 + 19 * np.cos(angle))}"
                  f"_z{round(112 + 19 * np.sin(angle))}")
            probes["uy" + at] = 0.001 * signal_of_time
            probes["uz" + at] = 0.0005 * signal_of_time
    return probes


def test_st_of_the_record_halves_shows_a_shedding_frequency_that_moved():
    """St_halves: the same measure over each half of the record. A steady line reads the same
    in both halves (within their bin, d / (U T/2)); a wake that sheds at 0.17 and then at 0.24
    (the spread of the Re 10 000 runs, flows.md section 3, session 23) reads each in its half."""
    d, u, centre = 32, 0.05, 128
    t = np.arange(0, 120 * d / u, 4.0)
    series = {"step": t, "c_D": np.full(len(t), 0.4), "c_y": np.zeros(len(t)),
              "c_z": np.zeros(len(t))}
    bin_half = d / (u * (t[-1] - t[0]) / 2)  # one bin of half the record
    steady = np.sin(2 * np.pi * 0.2 * u / d * t)
    m = sphere_wake.wake_measures(series, d, u, 0.0, ring_probes(t, d, u, steady), centre)
    assert abs(m["St"] - 0.2) <= m["resolution"] / 2
    assert all(abs(h - 0.2) <= bin_half / 2 for h in m["St_halves"])
    late = t >= t[len(t) // 2]
    phase = np.where(late, 2 * np.pi * 0.24 * u / d * t, 2 * np.pi * 0.17 * u / d * t)
    m = sphere_wake.wake_measures(series, d, u, 0.0, ring_probes(t, d, u, np.sin(phase)),
                                  centre)
    first, second = m["St_halves"]
    assert abs(first - 0.17) <= bin_half / 2 and abs(second - 0.24) <= bin_half / 2
    assert min(abs(m["St"] - 0.17), abs(m["St"] - 0.24)) <= m["resolution"] / 2


def test_wake_points_ring_the_axis_behind_the_sphere_inside_the_box():
    solver = sphere_wake.build(d=4, reynolds=20.0, length=6, width=4, upstream=2,
                               collision="trt", device="cpu")
    probes = next(r for r in solver.results if hasattr(r, "points"))
    points = np.array(probes.points, dtype=float)
    # 1, 2 and 3 d behind the centre (8, 7.5, 7.5); 5 d (x = 28) lies beyond the box
    assert sorted(set(points[:, 0])) == [12, 16, 20] and len(points) == 3 * 8
    radius = np.hypot(points[:, 1] - 7.5, points[:, 2] - 7.5)
    assert np.all(np.abs(radius - 0.6 * 4) <= 0.75)  # rounded to nodes
    assert probes.path is None  # the samples stay in memory
    solver.run(6)
    wake = sphere_wake.probe_series(solver)
    assert len(wake["step"]) >= 1 and len(wake) == 1 + 24 * 3
    assert len(sphere_wake.cross_stream(wake)) == 24 * 2


def test_wake_measures_need_samples_after_the_transient():
    series = {"step": np.arange(40.0), "c_D": np.ones(40), "c_y": np.zeros(40),
              "c_z": np.zeros(40)}
    assert math.isnan(sphere_wake.wake_measures(series, 8, 0.05, 0.2)["c_D"])  # 8 samples left
    series["c_D"][-1] = math.nan  # a diverged run gives no measures
    assert math.isnan(sphere_wake.wake_measures(series, 8, 0.05, 0.0)["St"])
    series["c_D"][-1] = 1.0
    assert sphere_wake.wake_measures(series, 8, 0.05, 0.0)["c_D"] == 1.0


def test_sphere_box_and_blockage():
    solver = sphere_wake.build(d=4, reynolds=20.0, length=6, width=4, upstream=2,
                               collision="trt", device="cpu")
    assert solver.geometry.shape == (24, 16, 16)
    assert solver.geometry.periodic == (False, True, True)
    assert sphere_wake.blockage(7.0) == pytest.approx(0.016, abs=5e-4)
    solver.run(4)
    assert np.isfinite(sphere_wake.force_series(solver)["c_D"]).all()


def test_sphere_outlet_kinds():
    """'characteristic' puts the characteristic inlet rule on +x (held at U), 'outflow' the
    zero-gradient copy rule; both run."""
    from thelma_py.tags import NodeKind

    for outlet, kind in (("characteristic", NodeKind.CHARACTERISTIC_VELOCITY),
                         ("outflow", NodeKind.OUTFLOW)):
        solver = sphere_wake.build(d=4, reynolds=20.0, length=6, width=4, upstream=2,
                                   collision="trt", device="cpu", inlet="characteristic",
                                   outlet=outlet)
        kinds = solver.engine.tags.kind
        assert (kinds[:, 1:-1, -1] == kind).all(), outlet
        solver.run(4)
        assert np.isfinite(sphere_wake.force_series(solver)["c_D"]).all()


def test_sphere_store_reaches_the_populations():
    """store='fp16s' gives the plug-in 16-bit populations (every f* a decoded code, f − w
    within binary16's steps) and the run's drag follows the fp32 run's, with either rounding
    (``rounding`` reaches the plug-in); a scheme without 16-bit storage, or stochastic rounding
    without it, is refused in one line."""
    from thelma_py.store16 import round_trip, weights

    drags = {}
    for store, rounding in (("fp32", "nearest"), ("fp16s", "nearest"),
                            ("fp16s", "stochastic")):
        solver = sphere_wake.build(d=4, reynolds=20.0, length=6, width=4, upstream=2,
                                   collision="trt", device="cpu", precision="float32",
                                   store=store, rounding=rounding)
        assert solver.engine.params.rounding == rounding
        solver.run(30)
        f = solver.engine.f
        assert (store == "fp16s") == bool(np.array_equal(
            f, round_trip("fp16s", f, weights(solver.lattice)))), store
        drags[store, rounding] = sphere_wake.force_series(solver)["c_D"][-1]
    for key in (("fp16s", "nearest"), ("fp16s", "stochastic")):
        assert drags[key] == pytest.approx(drags["fp32", "nearest"], rel=0.02), drags
    assert drags["fp32", "nearest"] > 0.5
    with pytest.raises(ValueError, match="rounding='stochastic' is for 16-bit storage"):
        sphere_wake.build(d=4, reynolds=20.0, device="cpu", rounding="stochastic")
    with pytest.raises(ValueError, match="store='fp16s' is for compute 'lbm'") as error:
        sphere_wake.build(d=4, reynolds=20.0, length=6, width=4, upstream=2, device="cpu",
                          compute="lwacm", interpolated=False, store="fp16s")
    assert "\n" not in str(error.value)


@pytest.mark.slow
def test_tgv_driver_follows_the_dns_to_t5():
    """LBM MRT at 32³, Re = 1600, to t* = 5 (before the breakdown at t* ≈ 7): E_k within 4 %
    of the spectral DNS (measured 2.6 %: the coarse lattice's extra dissipation; a viscosity
    twice too large doubles the 4 % of the DNS's own loss by t* = 5)."""
    run = flows.tgv_run("lbm-mrt", 32, t_end=5.0, samples=20, device="cpu",
                        precision="float64")
    assert run["diverged_at"] is None and run["t"][-1] == pytest.approx(5.0, abs=0.01)
    assert flows.tgv_energy_error(run) < 0.04


def test_tgv_driver_records_divergence():
    """A τ too close to ½ for BGK on a 12³ box: the driver stops and says when."""
    run = flows.tgv_run("lbm-bgk", 12, u0=0.15, t_end=30.0, samples=30, device="cpu",
                        precision="float64")
    assert run["diverged_at"] is not None and run["diverged_at"] < 30


@pytest.mark.parametrize("scheme", flows.TGV_BARS)
def test_tgv_les_and_cumulant_schemes_run(scheme):
    """Every scheme of the issue's bars builds and stays finite for 20 steps on 12³ (NumPy).
    Skipped until the les / lwacm / cumulant branches are merged (then it runs by itself)."""
    if not _buildable(scheme):
        pytest.skip(MISSING)
    run = flows.tgv_run(scheme, 12, t_end=20 * 0.05 * 2 * math.pi / 12, samples=4,
                        device="cpu", precision="float64")
    assert run["diverged_at"] is None


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_channel_and_tgv_drivers_run():
    """On a GPU: the TGV driver at 32³ to t* = 5 (E_k within 4 % of the DNS) and the channel
    driver for one eddy turnover at h = 8 stay finite (full runs: device_flows.sh). u_τ = 0.005
    as in the full runs (0.01 starts at Mach 0.32, refused); the same call runs on the CPU."""
    run = flows.tgv_run("lbm-mrt", 32, t_end=5.0, samples=20, device="cuda")
    assert flows.tgv_energy_error(run) < 0.04
    result = flows.channel_run("mrt", h=8, u_tau=0.005, transient=0.5, average=0.5,
                               device="cuda")
    assert result["diverged_at"] is None and np.isfinite(result["re_tau"])


@pytest.mark.filterwarnings("ignore:lattice velocity .* is Mach")
def test_drivers_on_the_cuda_engine_match_numpy(host_gpu, monkeypatch):
    """The channel and Taylor-Green drivers on the CUDA engine (kernels compiled for the host,
    tests/host_cupy.py) and on NumPy: the same plane means and energy series to rounding
    (fp64, bound 1e-12 relative), so the device-side reductions read the right arrays."""

    import thelma_py.solver

    select = thelma_py.solver.select_backend
    monkeypatch.setattr(thelma_py.solver, "select_backend",
                        lambda device: type(host_gpu)() if device == "cuda" else select(device))
    results = {}
    for device in ("cpu", "cuda"):
        run = flows.channel_run("trt", h=3, re_tau=20.0, u_tau=0.01, transient=0.02,
                                average=0.02, samples_per_turnover=200, device=device,
                                precision="float64", length=1.0, width=1.0)
        tgv = flows.tgv_run("lbm-mrt", 8, t_end=0.5, samples=3, device=device,
                            precision="float64")
        results[device] = (np.array(run["U_plus"]), np.array(tgv["E_k"] + tgv["enstrophy"]))
    for cpu, gpu in zip(results["cpu"], results["cuda"], strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-12)


@pytest.mark.slow
def test_channel_and_sphere_validation_sections_pass_on_the_cpu(tmp_path):
    """`thelma validate --only channel sphere-subcritical` on the CPU: the laminar measure
    (1e-3) and the sphere smoke check (c_D within 25 % of Schiller-Naumann); the sphere's
    force series is kept beside the report (``sphere_subcritical.json``), and its mean over
    the measured window is the c_D checked."""
    from thelma_py.tools import report

    sections = (report.channel_section("small", "cpu", False),
                report.sphere_subcritical_section("small", "cpu", False))
    for section in sections:
        assert section.checks and all(c.passed for c in section.checks), section.text
    text, passed = report.render(list(sections), tmp_path, "# page")
    assert passed and "Data: [`sphere_subcritical.json`]" in text
    kept = json.loads((tmp_path / "sphere_subcritical.json").read_text())
    step, c_d = np.array(kept["series"]["step"]), np.array(kept["series"]["c_D"])
    late = step >= 6.0 * kept["d"] / kept["u"]
    assert late.sum() >= 16 and c_d[late].mean() == pytest.approx(kept["c_D"], rel=1e-12)


def test_sphere_gpu_section_keeps_its_run_beside_the_report(tmp_path, monkeypatch):
    """The GPU arm of ``sphere-subcritical`` (its run replaced by a record of known values):
    each ring's St in the text, the failing St check, and the whole run record (force and
    probe series) in ``sphere_subcritical.json``, so that a failed St can be looked at again
    on the CPU (session 27: St 0.285 on an H100, halves 0.912 and 0.233)."""
    from thelma_py.tools import report

    record = {"d": 40, "shape": [600, 280, 280], "scheme": "cumulant-k17", "c_D": 0.407,
              "St": 0.285, "resolution": 0.0167, "St_halves": [0.912, 0.233],
              "St_stations": {"2.50": 0.70, "5.00": 0.285}, "c_D_error": 0.033,
              "St_error": 0.326, "reference": {"source": "DNS", "c_D": 0.394, "St": 0.215},
              "series": {"step": [0, 1], "c_D": [0.4, 0.41]}, "probes": {"step": [0, 1]}}
    monkeypatch.setattr(report.flows, "sphere_run", lambda *a, **k: record)
    monkeypatch.setattr(report, "_pulse_checks", lambda device: ("", []))
    section = report.sphere_subcritical_section("small", "cuda", True)
    assert "each ring behind the centre alone: 2.50 d: 0.700, 5.00 d: 0.285" in section.text
    assert [c.passed for c in section.checks] == [True, False]
    report.render([section], tmp_path, "# page")
    assert json.loads((tmp_path / "sphere_subcritical.json").read_text()) == record


@pytest.mark.parametrize("scheme", [name for name in flows.TGV_SCHEMES if "cubic" in name])
def test_tgv_cubic_schemes_follow_their_second_order_twins(scheme, monkeypatch):
    """The third-order-equilibrium LW-ACM schemes of the session-14 runs on 12³ (NumPy, 20
    steps): E_k decays and stays within 1e-3 of the same scheme with the papers' equilibrium
    (the cubic part is O(u³) and moves nothing at rest or in a resolved smooth flow), yet
    differs from it (the option reached the engine)."""
    lattice, name, params = flows.TGV_SCHEMES[scheme]
    second = {k: v for k, v in params.items() if k != "equilibrium_order"}
    monkeypatch.setitem(flows.TGV_SCHEMES, "second-order twin", (lattice, name, second))
    energies = [np.array(flows.tgv_run(s, 12, t_end=20 * 0.05 * 2 * math.pi / 12, samples=4,
                                       device="cpu", precision="float64")["E_k"])
                for s in (scheme, "second-order twin")]
    cubic, plain = energies
    assert cubic[-1] < cubic[0]
    difference = np.abs(cubic - plain).max() / plain.max()
    assert 1e-12 < difference < 1e-3, difference


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", flows.TGV_BARS)
def test_gpu_tgv_les_schemes_do_not_diverge_at_64(scheme):
    """The issue's bar at 64³: no divergence to t* = 20 (fp32; seconds on an H100). Skipped
    for a scheme whose plug-in is not merged yet."""
    if not _buildable(scheme):
        pytest.skip(MISSING)
    run = flows.tgv_run(scheme, 64, device="cuda")
    assert run["diverged_at"] is None and run["t"][-1] == pytest.approx(20.0, abs=0.01)


def test_dilatation_and_pressure_work_of_known_fields():
    """Brachet's vortex is divergence-free, also in central differences; u = (sin x, 0, 0)
    with x = 2πi/n has the central difference ∇·u = cos x · sin h per node (h = 2π/n), so the
    mean of (∇·u)²/2 is ¼ sin² h."""
    n = 16
    x = np.arange(n) * 2 * math.pi / n
    z, y, xx = np.meshgrid(x, x, x, indexing="ij")
    vortex = np.stack([np.sin(xx) * np.cos(y) * np.cos(z), -np.cos(xx) * np.sin(y) * np.cos(z),
                       0 * xx])
    def div(u):
        return divergence_from_gradient(velocity_gradient(u, (True, True, True)))

    assert flows.dilatation(div(vortex)) < 1e-30
    wave = np.stack([np.sin(xx), 0 * xx, 0 * xx])
    assert flows.dilatation(div(wave)) == pytest.approx(0.25 * math.sin(2 * math.pi / n) ** 2,
                                                        rel=1e-12)
    # p = (ρ − 1)/3 = cos x in phase with ∇·u = cos x sin h: the mean of p ∇·u is ½ sin h
    assert flows.pressure_work(1 + 3 * np.cos(xx), div(wave)) == pytest.approx(
        0.5 * math.sin(2 * math.pi / n), rel=1e-12)


def test_tgv_run_takes_the_speed_ratio_and_the_smagorinsky_constant():
    """--speed-ratio sets LW-ACM's u0 from u0/c_a = √(u0 Re / 2L) and the run records it;
    --c-s replaces the scheme's C_s; the dilatation and the pressure work are sampled with the
    enstrophy."""
    run = flows.tgv_run("lwacm-fused-les", 8, t_end=0.02, speed_ratio=0.3, c_s=0.2,
                        device="cpu")
    assert run["speed_ratio"] == pytest.approx(0.3)
    assert run["u0"] == pytest.approx(2 * 0.3**2 * (8 / (2 * math.pi)) / 1600)
    assert run["params"]["les"]["c_s"] == 0.2
    assert flows.TGV_SCHEMES["lwacm-fused-les"][2]["les"]["c_s"] == 0.16  # table unchanged
    assert len(run["dilatation"]) == len(run["pressure_work"]) == len(run["t"]) > 1
    assert run["dilatation"][0] < 1e-10 < max(run["dilatation"])


def test_sphere_run_takes_the_smagorinsky_constant_and_the_parametrized_cumulant():
    """--c-s replaces the constant of a sphere scheme with LES (the table stays as it is) and
    leaves a scheme without LES alone; the parametrized cumulant K17 is a sphere scheme."""
    box = {"length": 6, "width": 4, "upstream": 2, "transient": 0.1, "average": 2,
           "device": "cpu"}
    les = flows.sphere_run(3700, "bgk-les", d=4, c_s=0.1, **box)
    assert les["params"]["les"] == {"name": "smagorinsky", "c_s": 0.1}
    assert flows.SPHERE_SCHEMES["bgk-les"][1]["les"]["c_s"] == 0.16
    assert "C_s=0.1 " in flows._sphere_line(les)
    k17 = flows.sphere_run(3700, "cumulant-k17", d=4, c_s=0.1, **box)
    assert k17["params"] == {"collision": flows.K17}
    assert k17["lattice"] == "D3Q27" and math.isfinite(k17["c_D"])
    assert flows.with_smagorinsky_constant({"collision": "mrt"}, 0.1) == {"collision": "mrt"}
    params = flows.SPHERE_SCHEMES["mrt-les"][1]
    assert flows.with_smagorinsky_constant(params, None) is params


def _benchmark_script(name: str):
    """benchmarks/NAME.py as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ring_points(d: int, station: float) -> list[tuple[str, float]]:
    """(probe-name suffix, angle) of the 8 points of a wake ring ``station`` d behind a sphere
    centred at x = 4 d, y = z = 3.5 d, 0.6 d off the axis (the names sphere_wake gives)."""
    x, axis, radius = round((4 + station) * d), 3.5 * d, 0.6 * d
    return [(f"_x{x}_y{round(axis + radius * np.cos(a))}_z{round(axis + radius * np.sin(a))}", a)
            for a in 2 * np.pi * np.arange(8) / 8]


@pytest.mark.parametrize("sound", [0.0005, 0.004])
def test_st_check_reads_a_rotating_shedding_line_every_way(sound):
    """benchmarks/sphere_st_check.py: a ring whose mean side velocity turns at St 0.21 (the
    shedding plane rotating, positive sense) reads 0.21 from the ring mean and the rotating
    signal's positive sense; an axisymmetric sound line at 0.575 cancels there, and the single
    points (and their Welch average) read whichever line is stronger at a point."""
    check = _benchmark_script("sphere_st_check")
    d, u = 32, 0.05
    t = np.arange(0, 60 * d / u, 2.0)
    shed, wave = (2 * np.pi * s * u / d * t for s in (0.21, 0.575))
    probes = {"step": t.tolist()}
    for at, angle in _ring_points(d, 3.0):
        probes["ux" + at] = (0.01 * np.sin(wave)).tolist()
        probes["uy" + at] = (sound * np.cos(angle) * np.sin(wave)
                             + 0.001 * np.cos(shed)).tolist()
        probes["uz" + at] = (sound * np.sin(angle) * np.sin(wave)
                             + 0.001 * np.sin(shed)).tolist()
    run = {"d": d, "u": u, "options": {"upstream": 4.0}, "probes": probes}
    readings = check.ring_readings(run, transient=5.0)
    assert list(readings) == [pytest.approx(3.0)]
    (ring,) = readings.values()
    at_points = 0.21 if sound < 0.001 else 0.575
    for name, st in (("ring", 0.21), ("rotating +", 0.21), ("points", at_points),
                     ("points Welch", at_points)):
        assert ring[name] == pytest.approx(st, abs=0.01), name


def test_sphere_wake_rings_go_where_they_are_asked(tmp_path):
    """``stations`` places the rings of wake probes (those inside the box); the default is
    WAKE_STATIONS; the flows driver takes them as --stations and records them."""
    short = {"length": 8, "width": 4, "upstream": 2, "collision": "trt", "device": "cpu",
             "reynolds": 20.0}
    def stations(solver):
        solver.run(2)
        probes = sphere_wake.probe_series(solver)
        return sorted({sphere_wake._station(k) for k in probes if k != "step"})

    assert stations(sphere_wake.build(d=4, **short)) == [12, 16, 20, 28]  # centre at x = 8
    assert stations(sphere_wake.build(d=4, stations=(1.0, 4.0, 9.0), **short)) == [12, 24]
    run = flows.sphere_run(20.0, "trt", d=4, length=6, width=4, upstream=2, transient=0.1,
                           average=1, device="cpu", stations=(1.0, 3.0))
    assert run["options"]["stations"] == [1.0, 3.0]
    assert set(run["St_stations"]) == {"1.00", "3.00"}
    flows.main(["sphere", "--reynolds", "20", "--schemes", "trt", "--d", "4", "--box", "6,4,2",
                "--transient", "0.1", "--average", "1", "--stations", "1,2", "--device", "cpu",
                "--out", str(tmp_path)])
    (written,) = json.loads((tmp_path / "flows_sphere20.json").read_text())["runs"]
    assert written["options"]["stations"] == [1.0, 2.0]


def test_sphere_spectra_panels_the_rings_asked_for():
    """benchmarks/sphere_spectra.py: one panel per ring asked for (--rings), each peaking where
    that ring's side motion turns (St 0.21 at 7 d, 0.40 at 1 d), then the mean u_x at 3 d; a
    ring the run does not hold is a clear error naming those it does."""
    spectra = _benchmark_script("sphere_spectra")
    d, u = 32, 0.05
    t = np.arange(0, 80 * d / u, 4.0)
    probes = {"step": t.tolist()}
    for station, st in ((1.0, 0.40), (3.0, 0.30), (7.0, 0.21)):
        turn = 2 * np.pi * st * u / d * t
        for at, _ in _ring_points(d, station):
            probes["ux" + at] = (0.01 * np.sin(0.5 * turn)).tolist()
            probes["uy" + at] = (0.001 * np.cos(turn)).tolist()
            probes["uz" + at] = (0.001 * np.sin(turn)).tolist()
    run = {"d": d, "u": u, "options": {"upstream": 4.0}, "probes": probes}
    panels = spectra.panels(run, transient=5.0, rings=(1, 7))
    assert list(panels) == ["side motion, 1 d", "side motion, 7 d", "mean u_x, 3 d"]
    for title, st in (("side motion, 1 d", 0.40), ("side motion, 7 d", 0.21),
                      ("mean u_x, 3 d", 0.15)):
        frequency, power = panels[title]
        assert frequency[np.argmax(np.where(frequency > 0.1, power, 0))] == pytest.approx(
            st, abs=0.02), title
    with pytest.raises(SystemExit, match=r"no ring at \[5\] d .*it has \[1, 3, 7\]"):
        spectra.panels(run, transient=5.0, rings=(1, 5))


def test_sphere_records_read_flows_output_and_validate_data(tmp_path):
    """A ``flows sphere`` file holds its runs under "runs"; the validate section's data is one
    run; both read back as a list of runs, gzip-compressed or not."""
    import gzip

    run = {"reynolds": 3700.0, "d": 40, "u": 0.05}
    (tmp_path / "flows.json").write_text(json.dumps({"runs": [run, {**run, "d": 48}]}))
    with gzip.open(tmp_path / "validate.json.gz", "wt") as f:
        json.dump(run, f)
    assert [r["d"] for r in flows.sphere_records(tmp_path / "flows.json")] == [40, 48]
    assert flows.sphere_records(tmp_path / "validate.json.gz") == [run]

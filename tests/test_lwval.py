"""LW-ACM validation on Schäfer–Turek 2D-2 (issue #18 item 4): the CPU part of
``thelma validate --only lwacm-cylinder2d2`` and the LW-ACM options of the 2D-2 and sphere
cases (the full runs: benchmarks/device_lwval.sh)."""

from __future__ import annotations

import math

import pytest

from thelma_py.cases import cylinder_2d2, sphere
from thelma_py.tools import flows, report


@pytest.mark.slow
def test_lwacm_2d2_sheds_near_the_published_strouhal_number():
    """Single-step LW-ACM, curved cylinder, n = 10, u_max = 0.025, 24 000 steps (~30 s): the
    shedding grows from the geometry's asymmetry (c_L,max > 0.2; a steady wake has |c_L| ≈
    0.01) and St from the c_L zero crossings of the second half lies within 10 % of the
    published 0.295–0.305. The tolerance: n = 10 is far under-resolved and u_max / c_a = 0.43
    lowers St by ~5 % (measured 0.278 here on the benchmark's geometry, −7.3 %; 0.266 at
    u_max = 0.05); LBM TRT diverges at n = 10, so there is no LBM value to compare with on a
    CPU."""
    section = report.lwacm_cylinder_2d2_section("small", "cpu", False)
    assert [c.passed for c in section.checks] == [True, True], section.checks


def test_lwacm_inflow_keeps_its_speed_ratio_and_the_cases_take_lwacm():
    """u_max = n/3200 holds u_max / c_a (c_a = √(2ν), ν = 2 u_max n / 300 at Re = 100) at
    √(75/3200) = 0.153 up to n = 160; both cases build with each LW-ACM scheme and curved
    bodies (the two-step channel one spacing longer than the nodes say: LW-ACM's open faces
    sit half a spacing out)."""
    for n in (10, 20, 40, 160):
        u = cylinder_2d2.lwacm_u_max(n)
        assert u / math.sqrt(2 * (2 * u / 3) * n / 100) == pytest.approx(math.sqrt(75 / 3200))
    assert cylinder_2d2.lwacm_u_max(320) == 0.05
    for compute in ("lwacm", "lwacm-fused"):
        solver = cylinder_2d2.build(n=10, u_max=0.0125, compute=compute, device="cpu")
        assert solver.compute.nu == pytest.approx(0.0125 * 2 / 3 * 10 / 100)
        ball = sphere.build(d=4, compute=compute, device="cpu")
        assert type(ball.compute).__name__.lower().startswith("lwacm")
    assert flows.SPHERE_SCHEMES["lwacm-fused-curved"][1] == {"compute": "lwacm-fused",
                                                             "interpolated": True}


def test_device_section_compares_each_lwacm_scheme_with_lbm(monkeypatch):
    """The ``--device cuda`` arm of the section (n = 40, three schemes; its runs stubbed here):
    the LW-ACM schemes run at :func:`lwacm_u_max`, and a Strouhal number 1.5 % off LBM's
    fails the 1 % bar while 0.5 % passes."""
    calls = []

    def run(n, compute, *, u_max, periods, device):
        calls.append((n, compute, u_max, periods))
        st = {"lbm": 0.300, "lwacm": 0.3015, "lwacm-fused": 0.3045}[compute]
        return {"St": st, "c_D_max": 3.25, "c_L_max": 1.0, "u_max": u_max, "tau": 0.54,
                "steps": 144000, "periods": 17}

    monkeypatch.setattr(report.v, "shedding_run", run)
    section = report.lwacm_cylinder_2d2_section("small", "cuda", True)
    assert calls == [(40, "lbm", 0.05, 36), (40, "lwacm", 0.0125, 30),
                     (40, "lwacm-fused", 0.0125, 30)]
    assert [c.passed for c in section.checks] == [True, True, False, True], section.checks
    assert "| lwacm-fused | 0.0125 | 0.5400 | 144000 | 17 | 0.3045 |" in section.text


def test_device_2d1_section_holds_each_lwacm_scheme_to_half_a_percent_of_lbm(monkeypatch):
    """The ``--device cuda`` arm of ``lwacm-cylinder2d1`` (n = 40, steady to 1e-6; its runs
    stubbed here): c_D, c_L and Δp of each LW-ACM scheme against LBM's, and a c_L 0.6 % off
    fails the 0.5 % bar while 0.4 % passes."""
    calls = []
    values = {"lbm": (5.594, 0.010589, 0.11709), "lwacm": (5.595, 0.010548, 0.11722),
              "lwacm-fused": (5.595, 0.010525, 0.11722)}

    def run(n, *, device, tolerance, compute):
        calls.append((n, tolerance, compute))
        c_d, c_l, dp = values[compute]
        return {"n": n, "steps": 290000, "steady": True, "c_D": c_d, "c_L": c_l, "dp": dp}

    monkeypatch.setattr(report.v, "run_schaefer_turek", run)
    section = report.lwacm_cylinder_2d1_section("small", "cuda", True)
    assert calls == [(40, 1e-6, "lbm"), (40, 1e-6, "lwacm"), (40, 1e-6, "lwacm-fused")]
    assert [c.passed for c in section.checks] == [True, True, True, True, False, True], \
        section.checks
    assert "| lwacm | 290000 | 5.59500 | +0.02 % | 0.01055 | -0.39 % |" in section.text


@pytest.mark.slow
def test_lwacm_2d1_section_on_a_cpu_keeps_drag_and_pressure_drop_near_lbm():
    """The CPU arm of ``lwacm-cylinder2d1``: Schäfer–Turek 2D-1 at n = 10, LBM TRT (Bouzidi,
    Zou-He faces; measured c_D 5.8188, c_L 0.011935, Δp 0.11771) and the single step with its
    curved-wall ghosts, each on the benchmark's geometry and steady to 1e-5. LW-ACM measured
    5.7873 (−0.54 %), 0.010407 (−12.8 %), 0.11661 (−0.94 %); bars 0.8 %, 20 %, 1 % (the
    published c_D is 5.57-5.59: LBM itself is 4 % above it at n = 10; the n = 40 comparison
    is the GPU arm). On LBM's grid (``same_grid``, LW-ACM's cylinder half a spacing further
    from its inlet, as before issue #18's stacc session) 5.7586 (−1.03 %), 0.013028,
    0.11651 (−1.02 %): the c_D and Δp checks fail. About 80 s."""
    section = report.lwacm_cylinder_2d1_section("small", "cpu", False)
    assert [c.passed for c in section.checks] == [True, True, True], section.checks

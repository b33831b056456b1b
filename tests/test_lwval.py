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

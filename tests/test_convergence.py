"""Convergence stops: the residual's rounding floor per precision, and the steady-scalar rule
that the Schäfer-Turek 2D-1 case stops on."""

from __future__ import annotations

import math
import warnings

import pytest

import thelma_py as tp
from thelma_py.modules.results.convergence import (
    ADVISED_TOLERANCE,
    RESIDUAL_FLOOR,
    relative_spread,
)


def cavity(precision: str, results=()) -> tp.Solver:
    geometry = tp.geometry.cavity((16, 16), lid_velocity=(0.1, 0.0))
    compute = tp.plugin("compute", "lbm", nu=0.04, collision="mrt")  # Re = 40
    return tp.compose("D2Q9", geometry, compute, results=list(results), device="cpu",
                      precision=precision)


def at_rest(results) -> tp.Solver:
    """A tiny periodic box at rest: the steady tests watch a function of the step only."""
    return tp.compose("D2Q9", tp.geometry.periodic_box((4, 4)),
                      tp.plugin("compute", "lbm", nu=0.1), results=results, device="cpu")


# -- residual ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_float32_residual_levels_off_above_float64_tolerances():
    """A converged float32 cavity (lid speed 0.1) keeps changing by rounding: from step 3000
    its residual stays at 3.3e-6 to 4e-6, near the floor 4e-7 / U (the README's former 1e-7
    never stops it), and the advised float32 tolerance does stop it. float64 goes on falling
    (4e-11 at step 6000, 7e-15 at 11 000)."""
    floor32 = tp.plugin("results", "residual", every=100)
    cavity("float32", [floor32]).run(6_000)
    late = [r for step, r in floor32.records if step > 3_000]
    floor = RESIDUAL_FLOOR["float32"] / 0.1
    assert min(late) > 0.5 * floor and max(late) < 2 * floor, late
    stop = tp.plugin("results", "residual", every=100, tolerance=ADVISED_TOLERANCE["float32"])
    summary = cavity("float32", [stop]).run(6_000)
    assert summary["stopped"] and stop.converged_at < 3_000
    floor64 = tp.plugin("results", "residual", every=100)
    cavity("float64", [floor64]).run(6_000)
    assert floor64.records[-1][1] < 1e-9


def test_a_tolerance_below_the_floor_of_the_precision_is_warned_about():
    solver = cavity("float32", [tp.plugin("results", "residual", every=10, tolerance=1e-7)])
    with pytest.warns(UserWarning, match=r"below the float32 rounding floor.*4e-06 at U = 0\.1.*"
                                         r"use tolerance=0\.0001 or more, or precision='float64'"):
        solver.run(10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cavity("float64", [tp.plugin("results", "residual", every=10, tolerance=1e-7)]).run(10)
        cavity("float32", [tp.plugin("results", "residual", every=10, tolerance=1e-4)]).run(10)


# -- steady scalar -----------------------------------------------------------------------------
def test_steady_shows_its_quantity_by_name():
    def drag(solver):
        return 1.0

    assert "Steady(quantity=test_steady_shows_its_quantity_by_name.<locals>.drag, " in repr(
        tp.plugin("results", "steady", quantity=drag))


def test_relative_spread():
    assert relative_spread([2.0, 2.0, 2.0]) == 0.0
    assert relative_spread([1.0, 3.0]) == pytest.approx(1.0)
    assert relative_spread([-1.0, 1.0]) == math.inf and relative_spread([0.0, 0.0]) == 0.0


PERIOD = 4 * 221 * math.sqrt(3.0) / 10
"""The slowest acoustic mode of 2D-1 at n = 10 is a quarter wave along the channel, of
4 · 221 · √3 steps; the signals here run ten times faster (checks, windows and decay too)."""


def wobble(step: int) -> float:
    """c_D of 2D-1 after the start: 5.82 with an acoustic wobble of relative amplitude 1e-5
    that does not decay."""
    return 5.82 * (1.0 + 1e-5 * math.sin(2.0 * math.pi * step / PERIOD))


def test_a_wobbling_drag_does_not_stop_the_run():
    """The former rule (change between checks 50 steps apart below 1e-6) stops on this signal
    by chance wherever two checks fall near the same phase; the whole window must be flat."""
    checks = [wobble(50 * k) for k in range(100)]
    assert any(abs(b - a) < 1e-6 * b for a, b in zip(checks, checks[1:], strict=False))
    steady = tp.plugin("results", "steady", quantity=lambda s: wobble(s.time_step), every=8,
                       window=40, tolerance=1e-6)
    summary = at_rest([steady]).run(4_000)
    assert summary["stopped"] is None and steady.converged_at is None
    assert len(steady.records) == 501


def test_a_settling_drag_stops_the_run_once_flat_within_the_tolerance():
    """The wobble and a drift decay as exp(−t/400): the run stops where the spread of the last
    40 values (312 steps) falls below 1e-6, close to the limit."""

    def settling(step: int) -> float:
        decay = math.exp(-step / 400.0)
        return 5.82 * (1.0 + decay * (1e-2 * math.sin(2.0 * math.pi * step / PERIOD) + 3e-3))

    steady = tp.plugin("results", "steady", quantity=lambda s: settling(s.time_step), every=8,
                       window=40, tolerance=1e-6)
    summary = at_rest([steady]).run(20_000)
    step = steady.converged_at
    assert summary["stopped"].startswith("steady: 40 values over 312 steps within")
    assert summary["steps"] == step and step % 8 == 0
    assert 4_000 < step < 7_000  # the envelope 1.3e-2 e^(−t/400) meets 1e-6 near 3 800
    assert relative_spread([v for _, v in steady.records[-40:]]) < 1e-6
    assert abs(settling(step) / 5.82 - 1.0) < 1e-6

"""Convergence stops: the residual's rounding floor per precision."""

from __future__ import annotations

import warnings

import pytest

import thelma_py as tp
from thelma_py.modules.results.convergence import (
    ADVISED_TOLERANCE,
    RESIDUAL_FLOOR,
)


def cavity(precision: str, results=()) -> tp.Solver:
    geometry = tp.geometry.cavity((16, 16), lid_velocity=(0.1, 0.0))
    compute = tp.plugin("compute", "lbm", nu=0.04, collision="mrt")  # Re = 40
    return tp.compose("D2Q9", geometry, compute, results=list(results), device="cpu",
                      precision=precision)


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

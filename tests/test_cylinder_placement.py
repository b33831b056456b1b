"""Schäfer–Turek 2D-1 geometry per scheme (cases/cylinder.py, issue #18 stacc): the inlet face
is 2 n from the cylinder's centre and the outlet face 20 n beyond it for every scheme, where
LBM's Zou-He faces are the end nodes and LW-ACM's ghosts put them half a spacing beyond
(rule.OPEN_GHOSTS); Δp is read at the exact front and back points.

Tolerances: positions exact to 1e-12 (sums of a few hundred half-integers); Δp of a linear
density field 1e-12 relative (linear extrapolation is exact for it)."""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.cases import cylinder

BEYOND = {"lbm": 0.0, "lwacm": 0.5, "lwacm-fused": 0.5}
"""Where each scheme's inlet and outlet lie beyond its end nodes (the documented conventions,
written out here rather than read from the case)."""


def centre(solver) -> tuple[float, float]:
    """Centroid of the cylinder's nodes: its centre, since the node set is symmetric about it."""
    y, x = np.nonzero(solver.tags.solid)
    return float(x.mean()), float(y.mean())


@pytest.mark.parametrize("compute", sorted(BEYOND))
@pytest.mark.parametrize("n", [10, 20])
def test_every_scheme_gets_the_benchmark_distances(compute, n):
    solver = cylinder.build(n=n, compute=compute, tolerance=None, device="cpu")
    nx, ny = solver.geometry.shape
    x, y = centre(solver)
    inlet, outlet = -BEYOND[compute], nx - 1 + BEYOND[compute]
    assert x - inlet == pytest.approx(2 * n, abs=1e-12)
    assert outlet - x == pytest.approx(20 * n, abs=1e-12)
    assert y - (-0.5) == pytest.approx(2 * n, abs=1e-12)  # the wall below, halfway
    same = cylinder.build(n=n, compute=compute, tolerance=None, device="cpu", same_grid=True)
    assert same.geometry.shape == (22 * n + 1, ny) and centre(same)[0] == 2 * n
    for shift in (-1.0, -0.5, 0.5, 1.0):  # the cylinder moves, the outlet by the ceiling
        moved = cylinder.build(n=n, compute=compute, tolerance=None, device="cpu", shift=shift)
        assert centre(moved)[0] == pytest.approx(x + shift, abs=1e-12)
        assert moved.geometry.shape[0] == nx + int(np.ceil(shift))
    with pytest.raises(ValueError, match="multiples of 1/2"):
        cylinder.build(n=n, compute=compute, tolerance=None, device="cpu", shift=0.3)


@pytest.mark.parametrize(("compute", "same_grid", "shift"), [
    ("lbm", False, 0.0), ("lwacm-fused", False, 0.0), ("lwacm-fused", True, 0.0),
    ("lbm", False, 0.5), ("lbm", False, -0.5), ("lwacm", True, -1.0)])
def test_pressure_difference_is_read_at_the_exact_front_and_back(monkeypatch, compute,
                                                                 same_grid, shift):
    """ρ = 1 + a x + b y in front of the centre x_c and 1 + c x + b y behind it: linear
    extrapolation from the fluid nodes on each side gives Δp = p(x_c − n/2) − p(x_c + n/2)
    exactly, in the benchmark's units ((0.2 / U)², U = 2/(3 n)); a front or back point half a
    spacing off changes it by (a or c) / 6."""
    n, a, b, c = 10, -1e-3, 2e-4, 3e-3
    solver = cylinder.build(n=n, compute=compute, tolerance=None, device="cpu",
                            same_grid=same_grid, shift=shift)
    xc = 2 * n - (0.0 if same_grid else BEYOND[compute]) + shift
    ny, nx = solver.tags.solid.shape
    y, x = np.mgrid[0:ny, 0:nx]
    field = np.where(x < xc, 1.0 + a * x, 1.0 + c * x) + b * y
    monkeypatch.setattr(tp.Solver, "density", lambda self: field)
    exact = (a * (xc - n / 2) - c * (xc + n / 2)) / 3 * (0.2 * 3 * n / 2) ** 2
    assert cylinder.schaefer_turek_measures(solver)["dp"] == pytest.approx(exact, rel=1e-12)

"""Progress bar and history monitors."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

import thelma_py as tp


def periodic_solver(results, u=(0.05, 0.0), rho=1.0, geometry=None) -> tp.Solver:
    geo = geometry if geometry is not None else tp.geometry.periodic_box((8, 6))
    init = tp.plugin("init", "equilibrium", rho=rho, u=u)
    return tp.compose(
        "D2Q9", geo, tp.plugin("compute", "lbm", nu=0.1), init=init, results=results, device="cpu"
    )


def count_engine_steps(solver: tp.Solver) -> list[int]:
    """Record the batch sizes the solver hands to the compute engine."""
    calls: list[int] = []
    step = solver.engine.step

    def recording(n: int = 1) -> None:
        calls.append(n)
        step(n)

    solver.engine.step = recording
    return calls


def test_forced_progress_draws_first_and_last_step_with_rate_and_eta():
    stream = io.StringIO()
    bar = tp.plugin("results", "progress", force=True, stream=stream, interval=100.0, width=10)
    solver = periodic_solver([bar])
    batches = count_engine_steps(solver)
    solver.run(200)
    solver.finish()
    text = stream.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 2  # throttled: the first call and the end, nothing in between
    assert "1/200   0.5%" in frames[0]
    assert frames[1].startswith("[##########] 200/200 100.0%")
    assert "MLUPS" in frames[1] and "ETA 00:00" in frames[1]
    assert text.endswith("\n") and text.count("\n") == 1
    assert batches == [1, 199]  # the stride adapted to the measured rate


def test_progress_is_silent_off_a_terminal_and_never_splits_the_batches():
    stream = io.StringIO()  # isatty() is False
    solver = periodic_solver([tp.plugin("results", "progress", stream=stream)])
    batches = count_engine_steps(solver)
    solver.run(300)
    solver.finish()
    assert stream.getvalue() == ""
    assert batches == [300]


def test_history_of_uniform_flow_is_exact_and_written_as_csv(tmp_path):
    path = tmp_path / "logs" / "history.csv"
    history = tp.plugin("results", "history", every=5, path=path)
    solver = periodic_solver([history], u=(0.05, 0.0))
    solver.run(10)
    steps = [r[0] for r in history.records]
    assert steps == [0, 5, 10]
    for _, mean_rho, max_speed, energy in history.records:
        assert mean_rho == pytest.approx(1.0, abs=1e-13)
        assert max_speed == pytest.approx(0.05, abs=1e-13)
        assert energy == pytest.approx(0.5 * 48 * 0.05**2, rel=1e-12)  # 48 nodes
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["step"]) for r in rows] == steps
    assert [float(r["kinetic_energy"]) for r in rows] == [r[3] for r in history.records]
    assert sorted(p.name for p in path.parent.iterdir()) == ["history.csv"]


def test_history_averages_over_fluid_nodes_only():
    geo = tp.geometry.periodic_box((8, 6))
    geo.wall(tp.geometry.Box((0, 0), (1, 5)))  # x = 0, 1 solid: 12 of 48 nodes
    history = tp.plugin("results", "history", every=1)
    solver = periodic_solver(
        [history], geometry=geo, u=(0.0, 0.0), rho=lambda x, y: np.where(x < 2, 2.0, 1.0)
    )
    solver.run(0)
    _, mean_rho, max_speed, energy = history.records[0]
    assert mean_rho == pytest.approx(1.0, abs=1e-14)  # all nodes would give 1.25
    assert max_speed == 0.0 and energy == 0.0

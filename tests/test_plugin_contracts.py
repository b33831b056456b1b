"""Typed plug-in contracts: the Results base class and its adapter for plain objects, the
Domain / ComputePlugin / InitPlugin protocols, and the distributable-engine capability."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import thelma_py as tp
from thelma_py.compute import DistributableEngine, OverlappingEngine
from thelma_py.geometry import Geometry
from thelma_py.modules.init.fields import Equilibrium
from thelma_py.outputs import Outputs, check_distributed
from thelma_py.parallel import DistributedEngine
from thelma_py.results import Results, as_results


def cavity(results=(), **kwargs):
    geo = tp.geometry.cavity((8, 8), lid_velocity=(0.05, 0.0))
    return tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.1), results=list(results),
                      device="cpu", **kwargs)


class Recorder:
    """A plain (third-party style) results object: no base class, every documented hook."""

    def __init__(self, log: list, name: str, every: int):
        self.log, self.name, self.schedule = log, name, tp.Every(every, at_start=False)

    def __call__(self, solver):
        self.log.append((self.name, solver.time_step))

    def start(self, solver):
        self.log.append((self.name, "start"))

    def begin_run(self, solver, end_step):
        self.log.append((self.name, "begin", end_step))

    def finish(self, solver):
        self.log.append((self.name, "finish"))


@attrs.define
class Last(Results):
    """Declares runs_last: called after the others due at the same step."""

    log: list
    schedule: tp.Every = tp.Every(5, at_start=False)
    runs_last = True

    def __call__(self, solver):
        self.log.append(("last", solver.time_step))


def test_a_plain_object_is_adapted_with_its_schedule_and_documented_hooks():
    log = []
    solver = cavity([Recorder(log, "plain", 4)])
    solver.run(10)
    solver.finish()
    assert log == [("plain", "start"), ("plain", "begin", 10), ("plain", 4), ("plain", 8),
                   ("plain", "finish")]


def test_a_base_class_plugin_needs_only_call_and_runs_last_orders_it_after_the_others():
    log = []
    solver = cavity([Last(log), Recorder(log, "plain", 5)])
    solver.run(10)
    calls = [entry for entry in log if isinstance(entry[1], int)]
    assert calls == [("plain", 5), ("last", 5), ("plain", 10), ("last", 10)]
    solver.finish()  # Last has the base class's no-op finish: only the plain one logs
    assert [entry for entry in log if entry[-1] == "finish"] == [("plain", "finish")]


def test_the_base_class_hooks_are_no_ops_with_no_state():
    result = Results()
    assert result.state_dict() is None and result.on_interrupt(None) is None
    assert result.schedule is None and not result.supports_distributed and not result.runs_last
    assert result.label == "Results"
    assert tp.plugin("results", "vtk", path="out").label == "vtk"


def test_as_results_returns_subclasses_themselves_and_refuses_what_is_not_callable():
    last = Last([])
    assert as_results(last) is last
    with pytest.raises(TypeError, match="results must be results plug-ins"):
        as_results(object())
    with pytest.raises(TypeError, match="results must be results plug-ins"):
        cavity([42])


def test_distributed_support_is_declared_by_subclasses_or_by_a_plain_flag():
    class PlainAble(Recorder):
        supports_distributed = True

    check_distributed([tp.plugin("results", "forces"), PlainAble([], "p", 1)])  # accepted
    with pytest.raises(ValueError, match=r"\['Last', 'Recorder'\] do not run distributed"):
        check_distributed([Last([]), Recorder([], "r", 1)])


def test_interrupt_collects_the_checkpoints_written(tmp_path):
    solver = cavity([tp.plugin("results", "checkpoint", path=tmp_path, every=100),
                     Recorder([], "plain", 3)])
    solver.step(7)
    written = Outputs().interrupt(solver)
    assert written == [tmp_path / "step_0000000007"]
    assert (tmp_path / "latest").read_text() == "step_0000000007\n"


@attrs.define
class Counter(Results):
    """Saves its count in checkpoints."""

    schedule: tp.Every = tp.Every(2, at_start=False)
    count: int = 0

    def __call__(self, solver):
        self.count += 1

    def state_dict(self) -> dict:
        return {"count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.count = state["count"]


def test_saved_state_of_a_base_class_plugin_survives_a_checkpoint(tmp_path):
    first = cavity([Counter()])
    first.run(10)
    first.save_checkpoint(tmp_path / "c")
    again = Counter()
    second = cavity([again])
    assert second.load_checkpoint(tmp_path / "c") == 10
    assert again.count == 5
    second.run(4)
    assert again.count == 7


@attrs.define
class Wrapped:
    """A geometry of another class: satisfies the Domain protocol by delegation."""

    inner: Geometry

    shape = property(lambda self: self.inner.shape)
    periodic = property(lambda self: self.inner.periodic)
    dim = property(lambda self: self.inner.dim)
    node_count = property(lambda self: self.inner.node_count)

    def evaluate(self, lattice, lower=None, shape=None, ghost=False):
        return self.inner.evaluate(lattice, lower, shape, ghost)

    def coordinates(self, lower=None, shape=None):
        return self.inner.coordinates(lower, shape)


def test_the_solver_takes_any_domain_and_refuses_what_is_not_one():
    compute = tp.plugin("compute", "lbm", nu=0.1)
    reference = cavity()
    other = tp.compose("D2Q9", Wrapped(tp.geometry.cavity((8, 8), lid_velocity=(0.05, 0.0))),
                       compute, device="cpu")
    reference.run(20)
    other.run(20)
    assert np.array_equal(other.velocity(), reference.velocity())
    assert np.abs(other.velocity()).max() > 1e-4  # the lid moved the fluid
    with pytest.raises(TypeError, match="geometry must be"):
        tp.compose("D2Q9", (8, 8), compute, device="cpu")
    with pytest.raises(TypeError, match="compute must be a compute plug-in"):
        tp.compose("D2Q9", Geometry((8, 8)), object(), device="cpu")
    with pytest.raises(TypeError, match="init must be an init plug-in"):
        tp.Solver("D2Q9", Geometry((8, 8)), compute, init=object(), device="cpu")


def test_the_default_init_is_the_equilibrium_plugin_at_rest():
    solver = cavity()
    assert solver.init == Equilibrium()
    assert np.allclose(solver.density(), 1.0, rtol=0, atol=1e-14)  # Σ f_i to rounding
    assert not solver.velocity().any()


def test_engines_declare_whether_they_run_distributed():
    engine = cavity().engine
    assert isinstance(engine, DistributableEngine)
    assert not isinstance(engine, OverlappingEngine)  # NumPy ranks exchange, then step
    assert engine.halo_fields is False

    class Lone:
        lattice = backend = dtype = None

    with pytest.raises(ValueError, match="Lone cannot run distributed yet"):
        DistributedEngine(Lone(), box=None)


def test_piece_fields_is_for_distributed_runs_only():
    with pytest.raises(ValueError, match="for distributed runs"):
        cavity().piece_fields()

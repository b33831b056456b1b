"""Every case script builds at a tiny size on the CPU, runs a few steps and stays finite.

Case scripts follow one contract: ``DEFAULT_STEPS``, ``build(**params, results=(),
device=..., precision=...)`` with annotated keyword parameters only, returning a
:class:`thelma_py.Solver`, and ``report(solver, **params)``; run as scripts they call
:func:`thelma_py.cases.run`. They import as ``thelma_py.cases.NAME`` and import no tooling (the
command line and the validation sweeps import them).
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import tempfile
import types
import typing
from pathlib import Path

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.tools import cli

CASES_DIR = Path(__file__).resolve().parents[1] / "cases"

# Tiny parameters per case; a new case must add an entry here (see test_every_case_is_listed).
TINY = {
    "lid_driven_cavity": [dict(n=8), dict(n=6, dim=3), dict(n=8, collision="bgk"),
                          dict(n=8, reynolds=400, lid_velocity=0.05, collision="trt")],
    "poiseuille": [dict(n=6), dict(n=6, collision="trt", tau=0.6, length=2)],
    "taylor_green": [dict(n=8), dict(n=8, collision="bgk", reynolds=10),
                     dict(n=8, collision="trt", nu=0.05), dict(n=6, dim=3, reynolds=10.0)],
    "pressure_poiseuille": [dict(n=6), dict(n=5, dim=3)],
    "cylinder": [dict(n=10)],
    "cylinder_2d2": [dict(n=10)],
    "sphere": [dict(d=4, reynolds=5.0)],
    "stl_object": [dict(size=4, reynolds=5.0)],
    "channel": [dict(h=3, re_tau=20.0, u_tau=0.01), dict(h=3, re_tau=20.0, collision="bgk")],
    "sphere_wake": [dict(d=4, reynolds=20.0, length=6, width=4, upstream=2, collision="trt")],
    "acoustic_pulse": [dict(n=40), dict(n=30, inlet="equilibrium", lattice="D3Q19")],
}
TINY_ARGV = {
    "lid_driven_cavity": ["--set", "n=8", "--steps", "5", "--quiet"],
    "poiseuille": ["--set", "n=6", "--steps", "5", "--quiet"],
    "taylor_green": ["--set", "n=8", "--steps", "5", "--quiet"],
    "pressure_poiseuille": ["--set", "n=6", "--steps", "5", "--quiet"],
    "cylinder": ["--set", "n=10", "--steps", "5", "--quiet"],
    "channel": ["--set", "h=3", "--set", "re_tau=20.0", "--steps", "5", "--quiet"],
}


def case_names() -> list[str]:
    """The modules of cases/ that define build() (not the package or its reference tables)."""
    return sorted(p.stem for p in CASES_DIR.glob("*.py") if "\ndef build(" in p.read_text())


def load(name: str):
    return importlib.import_module(f"thelma_py.cases.{name}")


def test_every_case_is_listed():
    assert case_names(), f"no case scripts found in {CASES_DIR}"
    missing = set(case_names()) - set(TINY)
    assert not missing, f"add tiny parameters for {sorted(missing)} to TINY in {__file__}"


@pytest.mark.parametrize("name", case_names())
def test_case_contract(name):
    case = load(name)
    assert isinstance(case.DEFAULT_STEPS, int) and case.DEFAULT_STEPS > 0
    assert callable(case.report)
    params = inspect.signature(case.build).parameters
    assert params["device"].default == "auto" and params["precision"].default == "float64"
    assert params["results"].default == ()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values()), \
        "build() takes keyword parameters only"
    source = (CASES_DIR / f"{name}.py").read_text()
    assert 'if __name__ == "__main__":\n    run(sys.modules[__name__])' in source
    assert "thelma_py.tools" not in source, "a case imports no tooling (tools import cases)"


@pytest.mark.parametrize("name", case_names())
def test_every_build_parameter_has_a_type_that_fits_its_default(name):
    """``--set key=value`` converts by these annotations: an int parameter must say int."""
    build = load(name).build
    hints = typing.get_type_hints(build)
    for key, parameter in inspect.signature(build).parameters.items():
        assert key in hints, f"{name}.build(): annotate {key}"
        default, hint = parameter.default, hints[key]
        if default is None:
            assert type(None) in typing.get_args(hint), f"{name}.build(): {key} may be None"
        elif key != "results":
            union = typing.get_origin(hint) in (typing.Union, types.UnionType)
            allowed = [typing.get_origin(h) or h for h in
                       (typing.get_args(hint) if union else (hint,))]
            assert type(default) in allowed, f"{name}.build(): {key}={default!r} is not {hint}"


def test_cases_import_by_package_name_without_the_cli_or_validation(tmp_path):
    """``import thelma_py.cases.NAME`` works from any directory, and importing a case loads
    neither the command line nor the validation sweeps (validation imports cases)."""
    names = case_names()
    script = ("import sys\n"
              + "".join(f"import thelma_py.cases.{name}\n" for name in names)
              + "print(sorted(m for m in sys.modules if m.startswith('thelma_py.tools')))\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = result.stdout.strip()
    assert "thelma_py.tools.cli" not in loaded and "thelma_py.tools.validation" not in loaded, \
        loaded


@pytest.mark.filterwarnings("ignore:lattice velocity .* is Mach")
@pytest.mark.parametrize(("name", "params"),
                         [(n, p) for n in TINY for p in TINY[n]],
                         ids=lambda v: v if isinstance(v, str) else
                         ",".join(f"{k}={x}" for k, x in v.items()))
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_case_builds_tiny_and_runs(name, params, precision):
    case = load(name)
    solver = case.build(device="cpu", precision=precision, **params)
    assert isinstance(solver, tp.Solver)
    assert solver.backend.name == "cpu" and solver.dtype == np.dtype(precision)
    summary = solver.run(5)
    assert summary["steps"] == 5
    rho, u = solver.density(), solver.velocity()
    assert rho.shape == solver.geometry.array_shape
    assert u.shape == (solver.lattice.d, *solver.geometry.array_shape)
    assert np.isfinite(rho).all() and np.isfinite(u).all()
    assert abs(rho.mean() - 1.0) < 1e-2
    # something moves: a lid, a force or an initial vortex drives each case
    assert np.abs(u).max() > 1e-6


@pytest.mark.filterwarnings("ignore:lattice velocity .* is Mach")
@pytest.mark.parametrize("name", sorted(TINY))
def test_build_appends_the_results_it_is_given(name):
    history = tp.plugin("results", "history", every=2)
    solver = load(name).build(device="cpu", results=[history], **TINY[name][0])
    assert solver.results[-1] is history
    solver.run(4)
    assert [record[0] for record in history.records] == [0, 2, 4]


@pytest.mark.filterwarnings("ignore:lattice velocity .* is Mach")
@pytest.mark.parametrize("name", sorted(TINY_ARGV))
def test_thelma_run_runs_the_case_file(name, capsys):
    status = cli.main(["run", str(CASES_DIR / f"{name}.py"), *TINY_ARGV[name], "--device", "cpu"])
    out = capsys.readouterr().out
    assert status in (None, 0)
    assert "MLUPS" in out
    assert "report     " in out  # the case's own figure of merit, printed by thelma run


def test_the_runner_builds_with_key_value_parameters_runs_and_reports(capsys):
    solver = run(load("poiseuille"), ["n=6", "steps=5", "device=cpu", "collision='trt'"])
    assert solver.time_step == 5 and solver.geometry.shape == (4, 6)
    out = capsys.readouterr().out
    assert "collision=Trt(" in out and "MLUPS" in out
    assert "report     relative L2 error against the parabola" in out


def test_a_case_runs_as_a_module_outside_the_checkout(tmp_path):
    result = subprocess.run([sys.executable, "-m", "thelma_py.cases.poiseuille", "n=6",
                             "steps=5", "device=cpu"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "relative L2 error against the parabola" in result.stdout


def test_cylinder_defaults_are_the_validated_settings():
    """docs/validation/schaefer_turek.md: 2D-1 in diffusive scaling, u_max = 1/n and τ = 0.6 at
    every n (what ``thelma validate --only schaefer-turek`` runs); 2D-2 at u_max = 0.05."""
    cylinder, shedding = load("cylinder"), load("cylinder_2d2")
    for n in (10, 20, 40):
        solver = cylinder.build(device="cpu", n=n)
        assert 3 * solver.compute.nu + 0.5 == pytest.approx(0.6, rel=1e-12)
        inlet = solver.tags.open_values[:, 0].max()  # the parabola's nodes straddle its top
        assert 0.99 / n < inlet <= 1.0 / n
    solver = shedding.build(device="cpu", n=20)
    assert 3 * solver.compute.nu + 0.5 == pytest.approx(0.52, rel=1e-12)  # u_max = 0.05
    forces = solver.results[0]
    assert forces.velocity == pytest.approx(2 * 0.05 / 3) and forces.area == 20


def test_cylinder_takes_16bit_populations_and_their_rounding():
    """``store`` and ``rounding`` reach the LBM plug-in (benchmarks/store16_cylinder.py)."""
    solver = load("cylinder").build(device="cpu", n=10, precision="float32", store="fp16s",
                                    rounding="stochastic", tolerance=None)
    assert (solver.compute.store, solver.compute.rounding) == ("fp16s", "stochastic")
    solver.run(3)
    assert solver.engine.clock == 3


def test_stl_case_leaves_no_mesh_file_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    solver = load("stl_object").build(device="cpu", size=4, reynolds=5.0)
    solver.run(2)
    assert list(tmp_path.iterdir()) == []


def test_cavity_3d_has_the_lid_on_plus_z():
    solver = load("lid_driven_cavity").build(device="cpu", n=5, dim=3, lid_velocity=0.05)
    assert solver.lattice.name == "D3Q19"
    lid = solver.tags.face_bc_ids["+z"]
    np.testing.assert_array_equal(solver.tags.bc_table[lid, :3], [0.05, 0.0, 0.0])
    solver.run(3)
    u = solver.velocity()
    assert u[0, -1].mean() > u[0, 0].mean()  # the top layer is dragged along +x


def test_cavity_rejects_bad_dim_and_unstable_parameters():
    case = load("lid_driven_cavity")
    with pytest.raises(ValueError, match="dim must be 2 or 3"):
        case.build(device="cpu", n=8, dim=4)
    with pytest.raises(tp.units.UnstableParameters, match="Mach"):
        case.build(device="cpu", n=8, lid_velocity=0.3)


def test_taylor_green_viscosity_options():
    case = load("taylor_green")
    assert case.build(device="cpu", n=8, nu=0.05).compute.nu == 0.05
    assert case.build(device="cpu", n=8, u0=0.05, reynolds=10).compute.nu == \
        pytest.approx(0.05 * 8 / (2 * np.pi) / 10)
    with pytest.raises(ValueError, match="not both"):
        case.build(device="cpu", n=8, nu=0.05, reynolds=10)

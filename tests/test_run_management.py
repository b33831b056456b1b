"""Run management: convergence stop, divergence bound, summary figures, timings, probes,
profiles, background VTK output, validate report, bad parameters."""

from __future__ import annotations

import csv
import errno
import gzip
import io

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.files import OutputDirectoryError, read_json
from thelma_py.lattice import D2Q9
from thelma_py.modules.compute.lbm.collision import collision_models
from thelma_py.modules.results.derived import vorticity
from thelma_py.modules.results.timings import dominant_period
from thelma_py.modules.results.vtk import VtkWriter
from thelma_py.tools import cli, report


def channel(results=(), force=1e-5, n=8, **kwargs):
    geo = tp.geometry.channel((2, n))
    compute = tp.plugin("compute", "lbm", nu=1 / 6, collision="trt", force=(force, 0.0))
    return tp.compose("D2Q9", geo, compute, results=list(results), device="cpu", **kwargs)


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


# -- residual and convergence ------------------------------------------------------------------
def test_residual_stops_a_converging_run_early_with_the_reason():
    residual = tp.plugin("results", "residual", every=50, tolerance=1e-6)
    solver = channel([residual])
    summary = solver.run(20_000)
    step = residual.converged_at
    assert step is not None and step % 50 == 0 and step < 2000
    assert solver.time_step == step == summary["steps"]
    assert summary["stopped"].startswith("converged: residual")
    values = [r for _, r in residual.records]
    assert values[-1] < 1e-6 <= values[-2]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))  # monotone decay
    # the definition: ‖u_n − u_(n−k)‖₁ / ‖u_n‖₁ from two separate runs
    a, b = channel(), channel()
    a.run(step - 50)
    b.run(step)
    expected = np.abs(b.velocity() - a.velocity()).sum() / np.abs(b.velocity()).sum()
    assert values[-1] == pytest.approx(expected, rel=1e-12)
    again = solver.run(1000)  # still converged: the next comparison stops it again
    assert again["steps"] == step + 50 and again["stopped"].endswith(f"at step {step + 50}")


def test_max_velocity_stops_with_the_step_and_first_position():
    solver = channel(force=1e-3, max_velocity=0.01, check_every=10)
    with pytest.raises(tp.DivergenceError) as info:
        solver.run(5000)
    speed = np.hypot(*solver.velocity())
    assert speed.max() > 0.01 and info.value.args
    message = str(info.value)
    assert f"at step {solver.time_step}" in message and solver.time_step % 10 == 0
    first = np.unravel_index(np.argmax((speed > 0.01).reshape(-1)), speed.shape)
    assert f"(x, y) = ({first[1]}, {first[0]})" in message


def test_summary_gives_mean_and_spread_of_batch_mlups():
    solver = channel([tp.plugin("results", "history", every=10)])
    summary = solver.run(100)
    rates = solver.batch_mlups()
    assert summary["batches"] == len(rates) == 10
    assert summary["mlups_batch_mean"] == pytest.approx(rates.mean(), abs=1e-3)
    assert summary["mlups_batch_std"] == pytest.approx(rates.std(), abs=1e-3)
    assert summary["copy_bandwidth_fraction"] is None  # the CPU backend measures none
    assert summary["results_seconds"] > 0


def test_dominant_period_of_a_pulsing_record():
    t = np.arange(120)
    noise = np.random.default_rng(1).normal(0.0, 0.02, len(t))
    period, amplitude = dominant_period(1e-3 * (1 + 0.2 * np.sin(2 * np.pi * t / 6) + noise))
    assert period == pytest.approx(6.0) and amplitude == pytest.approx(0.2, abs=0.02)
    assert dominant_period([1.0, 2.0]) != dominant_period([1.0, 2.0])  # nan for short records


def test_timings_records_per_step_compute_time_and_prints_its_spectrum(tmp_path):
    stream = io.StringIO()
    timings = tp.plugin("results", "timings", every=5, path=tmp_path / "t.csv", stream=stream)
    solver = channel([timings])
    solver.run(100)
    solver.finish()
    assert len(timings.records) == 20 and [s for s, _ in timings.records][:2] == [5, 10]
    total = sum(t for _, t in timings.records) * 5
    assert total == pytest.approx(solver.compute_seconds, rel=1e-9)
    assert stream.getvalue().startswith("timings: 20 intervals of 5 steps")
    assert "dominant period" in stream.getvalue()
    assert len(read_csv(tmp_path / "t.csv")) == 21


# -- probes and profiles -----------------------------------------------------------------------
def test_probes_record_values_at_nodes_over_time(tmp_path):
    probes = tp.plugin("results", "probes", points=[(0, 0), (1, 4)], path=tmp_path / "p.csv",
                       fields=("rho", "u", "p"), every=20)
    solver = channel([probes])
    solver.run(40)
    rows = read_csv(tmp_path / "p.csv")
    assert rows[0] == ["step", "rho_x0_y0", "ux_x0_y0", "uy_x0_y0", "p_x0_y0",
                       "rho_x1_y4", "ux_x1_y4", "uy_x1_y4", "p_x1_y4"]
    assert [r[0] for r in rows[1:]] == ["0", "20", "40"]
    rho, u = solver.density(), solver.velocity()
    last = [float(v) for v in rows[-1][1:]]
    assert last == [rho[0, 0], u[0, 0, 0], u[1, 0, 0], (rho[0, 0] - 1) / 3,
                    rho[4, 1], u[0, 4, 1], u[1, 4, 1], (rho[4, 1] - 1) / 3]


def test_profile_writes_a_line_along_an_axis(tmp_path):
    profile = tp.plugin("results", "profile", axis="y", through=(1, 0), path=tmp_path,
                        fields=("u", "speed"), every=50)
    solver = channel([profile])
    solver.run(100)
    rows = read_csv(tmp_path / "profile_00000100.csv")
    assert rows[0] == ["y", "ux", "uy", "speed"] and len(rows) == 9
    np.testing.assert_array_equal([float(r[1]) for r in rows[1:]], solver.velocity()[0][:, 1])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "profile_00000000.csv", "profile_00000050.csv", "profile_00000100.csv"]


@pytest.mark.parametrize("bad", [dict(points=[(9, 0)]), dict(points=[(0, 0, 0)])])
def test_a_probe_outside_the_domain_is_refused(tmp_path, bad):
    probes = tp.plugin("results", "probes", path=tmp_path / "p.csv", **bad)
    with pytest.raises(ValueError, match="probes: point"):
        channel([probes]).run(1)


# -- VTK: background writes, derived fields, crop and subsample -------------------------------
def test_background_vtk_writes_derived_fields_cropped_and_subsampled(tmp_path):
    from tests.test_vtk import read_vti

    n = 16
    geo = tp.geometry.periodic_box((n, n))
    init = tp.plugin("init", "taylor-green", u0=0.02, size=(n, n))
    writer = tp.plugin("results", "vtk", path=tmp_path, every=10, crop=((2, 12), (4, 14)),
                       subsample=2, fields=("rho", "p", "u", "speed", "vorticity", "kind"))
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05), init=init,
                        results=[writer], device="cpu")
    solver.run(10)
    rho, u = solver.density(), solver.velocity()
    solver.finish()
    assert writer.background and writer.written == [(0, "fields_00000000.vti"),
                                                    (10, "fields_00000010.vti")]
    image, got = read_vti(tmp_path / "fields_00000010.vti")
    assert image.GetDimensions() == (5, 5, 1) and image.GetSpacing() == (2.0, 2.0, 2.0)
    assert image.GetOrigin() == (2.0, 4.0, 0.0)
    window = (slice(4, 14, 2), slice(2, 12, 2))
    assert got["rho"].dtype == np.float32
    np.testing.assert_allclose(got["rho"][0], rho[window], rtol=1e-7)
    np.testing.assert_allclose(got["p"][0], ((rho - 1) / 3)[window], rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(got["speed"][0], np.hypot(*u)[window], rtol=1e-6)
    np.testing.assert_allclose(got["vorticity"][0], vorticity(u, (True, True))[window],
                               rtol=1e-5, atol=1e-12)


def test_an_error_in_the_writer_thread_is_raised_in_the_main_thread(tmp_path, monkeypatch):
    from thelma_py.modules.results import vtk

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(vtk, "write_vti", full)
    writer = tp.plugin("results", "vtk", path=tmp_path, every=5)
    solver = channel([writer])
    with pytest.raises(OSError) as info:
        solver.run(20)
        solver.finish()
    assert info.value.errno == errno.ENOSPC
    assert solver.time_step <= 10  # surfaced at the next call, not at the end
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".vti", ".tmp")]


def test_a_full_disk_during_a_vti_write_leaves_no_file(tmp_path, monkeypatch):
    from thelma_py import files

    real_replace = files.os.replace

    def replace(src, dst):
        if str(dst).endswith(".vti"):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    writer = VtkWriter(path=tmp_path, background=False)
    solver = channel([writer])
    with pytest.raises(OSError, match="No space left"):
        solver.run(1)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_q_criterion_in_2d_is_refused_when_writing(tmp_path):
    writer = VtkWriter(path=tmp_path, fields=("q_criterion",), background=False)
    with pytest.raises(ValueError, match="q_criterion is defined for 3D"):
        channel([writer]).run(0)


# -- validate ----------------------------------------------------------------------------------
@pytest.mark.parametrize("plots", [True, False])
def test_validate_writes_a_report_with_a_pass_fail_table(tmp_path, monkeypatch, capsys, plots):
    if plots and not report.plotting_available():
        pytest.skip("matplotlib is not installed")
    monkeypatch.setattr(report, "plotting_available", lambda: plots)
    status = cli.main(["validate", "--device", "cpu", "--out", str(tmp_path), "--only",
                       "taylor_green", "tgv3d"])
    assert status == 0, capsys.readouterr()
    text = (tmp_path / "report.md").read_text()
    # one Taylor-Green check per registered collision model that runs on D2Q9
    on_d2q9 = [m for m in collision_models().values() if not m().unsupported(D2Q9)]
    assert text.count("| pass |") == len(on_d2q9) and "FAIL" not in text
    assert "Taylor-Green 2D mrt: \\|rate/exact − 1\\|" in text
    assert "## 2. 3D Taylor-Green vortex, Re = 1600" in text and "Not run" in text
    assert (tmp_path / "taylor_green.png").is_file() == plots
    assert ("tables only" in text) == (not plots)


def test_precision_study_shows_single_precision_losing_the_density():
    rows = tp.tools.validation.precision_study(u0s=(0.005, 0.05), n=16)
    small, large = rows
    assert small["steps"] == pytest.approx(10 * large["steps"], abs=10)  # same physical time
    assert small["density_diff"] > 100 * large["density_diff"]
    assert large["velocity_fp32"] == pytest.approx(large["velocity_fp64"], rel=0.01)


# -- bad parameters ----------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "name", "params", "message"), [
    ("results", "residual", dict(tolerance=-1), "tolerance must be a positive number"),
    ("results", "residual", dict(every=0), "every must be a positive whole number of steps"),
    ("results", "timings", dict(every=2.5), "every must be a positive whole number of steps"),
    ("results", "probes", dict(points=[], path="p.csv"), "non-empty list"),
    ("results", "probes", dict(points=[(0, 0)], path="p.csv", fields=("vorticity",)),
     "subset of"),
    ("results", "profile", dict(axis="w", through=(0, 0), path="x"), "'axis' must be in"),
    ("results", "vtk", dict(path="x", subsample=0), "positive integer stride"),
    ("results", "vtk", dict(path="x", crop=((0, 2), (5, 1))), "0 <= lo < hi"),
    ("results", "checkpoint", dict(path="x", keep=0), "keep must be a positive"),
])
def test_bad_plugin_parameters_say_what_is_right(kind, name, params, message):
    with pytest.raises((ValueError, TypeError), match=message):
        tp.plugin(kind, name, **params)


@pytest.mark.parametrize(("params", "message"), [
    (dict(check_every=-1), "non-negative integer"),
    (dict(max_velocity=0.0), "positive lattice speed"),
    (dict(results="vtk"), "list of results plug-ins"),
    (dict(lattice=19), "a Lattice or a name"),
])
def test_bad_solver_parameters_say_what_is_right(params, message):
    args = dict(lattice="D2Q9", geometry=tp.geometry.periodic_box((4, 4)),
                compute=tp.plugin("compute", "lbm", nu=0.1), device="cpu")
    args.update(params)
    with pytest.raises((ValueError, TypeError), match=message):
        tp.compose(**args)


def test_solver_refuses_a_non_geometry_and_a_bad_step_count():
    with pytest.raises(TypeError, match="geometry must be"):
        tp.Solver(lattice="D2Q9", geometry=(4, 4), compute=tp.plugin("compute", "lbm", nu=0.1))
    with pytest.raises(ValueError, match="non-negative integer"):
        channel().run(2.5)


def test_an_unwritable_checkpoint_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    solver = channel([tp.plugin("results", "checkpoint", path=blocker / "ck", every=5)])
    with pytest.raises(OutputDirectoryError, match="cannot write to output directory"):
        solver.run(5)


def test_fields_later_on_the_cpu_returns_the_fields_of_the_step_it_was_called_at():
    geo = tp.geometry.cavity((12, 10), lid_velocity=(0.05, 0.0))
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05), device="cpu")
    solver.step(20)
    expected = solver.fields()
    later = solver.fields_later()
    solver.step(20)
    got = later()
    for name in ("rho", "u", "kind"):
        np.testing.assert_array_equal(got[name], expected[name])
    assert not np.array_equal(solver.fields()["u"], got["u"])


def test_pending_copy_gives_its_buffers_back_once_and_refuses_use_after_release():
    from thelma_py.host_copy import PendingCopy

    returned = []
    arrays = {"rho": np.ones((2, 3)), "u": np.zeros((2, 3, 2))}
    pending = PendingCopy(arrays, interleave=("u",), give_back=returned.append,
                          extra={"kind": np.ones((2, 3), dtype=np.uint8)})
    got = pending()
    assert got["u"].shape == (2, 2, 3) and got["kind"].dtype == np.uint8
    pending.release()
    pending.release()
    assert returned == [arrays]
    with pytest.raises(RuntimeError, match="released"):
        pending()


def test_node_kind_is_decoded_once_per_solver():
    """Every output asks for the node kinds: NodeTags decodes them once, not per file."""
    geo = tp.geometry.cavity((12, 10), lid_velocity=(0.05, 0.0))
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05), device="cpu")
    first = solver.tags.kind
    assert solver.tags.kind is first and solver.fields()["kind"] is first
    np.testing.assert_array_equal(first, solver.tags.layout.kind(solver.tags.tags))
    assert first.dtype == np.uint8 and set(np.unique(first)) == {1}


def test_read_json_opens_plain_and_gzip_compressed_data_files(tmp_path):
    # benchmarks/data keeps the long sphere series gzip-compressed; both forms read the same
    text = '{"runs": [{"c_D": 0.401, "series": [1, 2, 3]}]}'
    (tmp_path / "run.json").write_text(text)
    with gzip.open(tmp_path / "run.json.gz", "wt") as stream:
        stream.write(text)
    expected = {"runs": [{"c_D": 0.401, "series": [1, 2, 3]}]}
    assert read_json(tmp_path / "run.json") == expected
    assert read_json(str(tmp_path / "run.json.gz")) == expected

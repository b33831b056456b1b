"""thelma plot: the CSVs of a real (short) run drawn as PNG, checked through the data that went
into the axes, the pixels of the file, and values known without the plotting code."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from thelma_py.tools import cli, plots

pytest.importorskip("matplotlib")  # the plot extra; CI installs it with the test extra

CASE = """
import thelma_py as tp
from thelma_py.cases import cylinder

DEFAULT_STEPS = 200


def build(*, device="auto", precision="float64", out="."):
    results = [
        tp.plugin("results", "forces", every=10, bodies=[cylinder.CYLINDER_ID],
                  path=f"{out}/forces.csv", velocity=2 * 0.1 / 3, area=10.0),
        tp.plugin("results", "history", every=10, path=f"{out}/history.csv"),
        tp.plugin("results", "probes", every=10, points=[(60, 20), (100, 30)],
                  path=f"{out}/probes.csv"),
        tp.plugin("results", "residual", every=10, path=f"{out}/residual.csv"),
        tp.plugin("results", "profile", every=50, axis="y", through=(60, 0),
                  path=f"{out}/profiles"),
    ]
    return cylinder.build(n=10, tolerance=None, results=results, device=device,
                          precision=precision)
"""
NODES = (22 * 10 + 1) * 41
"""The 2D-1 channel at n = 10: (22 n + 1) x 4.1 n nodes (cases/cylinder.py)."""
BLUE = (0x1F, 0x77, 0xB4)
"""matplotlib's first line colour (C0)."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A 200-step Schäfer-Turek channel (n = 10, NumPy, under a second) through `thelma run`,
    with every CSV-writing results plug-in and --timings."""
    root = tmp_path_factory.mktemp("plot_run")
    case = root / "case.py"
    case.write_text(CASE)
    out = root / "out"
    status = cli.main(["run", str(case), "--device", "cpu", "--quiet", "--out", str(out),
                       "--timings", "20", "--set", f"out={out}"])
    assert status == 0
    return out


@pytest.fixture(scope="module")
def drawn(run_dir):
    return {p.kind: p for p in plots.plot_files([run_dir])}


def csv_columns(path):
    """The CSV read with numpy alone (not the code under test)."""
    data = np.genfromtxt(path, delimiter=",", names=True)
    return {name: np.atleast_1d(data[name]) for name in data.dtype.names}


def lines_of(ax):
    return [(line.get_xdata(), line.get_ydata()) for line in ax.get_lines()]


def test_every_results_csv_of_the_run_gives_one_png_beside_it(run_dir, drawn):
    assert sorted(drawn) == ["forces", "history", "probes", "profile", "residual", "timings"]
    for kind, plot in drawn.items():
        assert plot.png.is_file() and plot.png.parent == plot.sources[0].parent, kind
    assert drawn["profile"].png == run_dir / "profiles" / "profile.png"
    assert len(drawn["profile"].sources) == 5  # steps 0, 50, ..., 200 in one figure


def test_the_png_holds_the_plotted_lines(drawn):
    from PIL import Image

    for kind, plot in drawn.items():
        pixels = np.asarray(Image.open(plot.png).convert("RGB")).astype(int)
        assert pixels.shape == (360, 990, 3), kind  # 11 x 4 inches at 90 dpi
        near_blue = (np.abs(pixels - BLUE).sum(axis=-1) < 40).sum()
        # a drawn line is hundreds of pixels of C0; a blank or failed figure has none
        assert near_blue > 300, (kind, near_blue)


def test_history_axes_hold_the_csv_columns(run_dir, drawn):
    expected = csv_columns(run_dir / "history.csv")
    axes = drawn["history"].figure.axes
    assert [ax.get_title() for ax in axes] == ["mean rho", "max speed", "kinetic energy"]
    for ax, name in zip(axes, ("mean_rho", "max_speed", "kinetic_energy"), strict=True):
        (x, y), = lines_of(ax)
        np.testing.assert_array_equal(x, expected["step"])
        np.testing.assert_array_equal(y, expected[name])
    assert np.all(np.abs(lines_of(axes[0])[0][1] - 1.0) < 0.01)  # mass stays near ρ = 1


def test_forces_axes_hold_c_d_and_c_l_with_the_second_half_mean(run_dir, drawn):
    expected = csv_columns(run_dir / "forces.csv")
    drag, lift = drawn["forces"].figure.axes
    (x, cd), (_, mean_line) = lines_of(drag)  # the curve and the dotted mean
    np.testing.assert_array_equal(x, expected["step"])
    np.testing.assert_array_equal(cd, expected["cD_3"])
    np.testing.assert_array_equal(lines_of(lift)[0][1], expected["cL_3"])
    late = expected["step"] >= 100
    assert mean_line[0] == pytest.approx(expected["cD_3"][late].mean(), rel=1e-12)
    assert drawn["forces"].measures["3"]["c_D_mean"] == pytest.approx(mean_line[0])


def test_probe_panels_per_field_with_one_line_per_point(run_dir, drawn):
    expected = csv_columns(run_dir / "probes.csv")
    axes = drawn["probes"].figure.axes
    assert [ax.get_title() for ax in axes] == ["rho", "ux", "uy"]
    for ax in axes:
        labels = [line.get_label() for line in ax.get_lines()]
        assert labels == ["x60 y20", "x100 y30"]
        for line in ax.get_lines():
            column = f"{ax.get_title()}_{line.get_label().replace(' ', '_')}"
            np.testing.assert_array_equal(line.get_ydata(), expected[column])


def test_residual_is_on_a_log_axis(drawn):
    ax, = drawn["residual"].figure.axes
    assert ax.get_yscale() == "log"


def test_timings_give_mlups_matching_the_run_summary(run_dir, drawn):
    """MLUPS per record = nodes / seconds per step, with the node count of the geometry; the
    records are intervals of equal length, so the harmonic mean of their MLUPS is the run's
    MLUPS over its compute time, which `thelma run` computed on its own (summary.json, rounded
    to 3 decimals: tolerance 1e-3)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    ax, = drawn["timings"].figure.axes
    (steps, mlups), = lines_of(ax)
    seconds = csv_columns(run_dir / "timings.csv")["seconds_per_step"]
    np.testing.assert_allclose(mlups, NODES / seconds / 1e6, rtol=1e-12)
    assert len(mlups) == 10 and steps[-1] == 200
    assert 1.0 / np.mean(1.0 / mlups) == pytest.approx(summary["mlups"], rel=1e-3)
    assert ax.get_ylabel() == "MLUPS"


def test_profile_series_draws_a_few_steps_along_the_line(drawn):
    axes = drawn["profile"].figure.axes
    assert [ax.get_title() for ax in axes] == ["rho", "ux", "uy"]
    labels = [line.get_label() for line in axes[0].get_lines()]
    assert labels == [f"step {s}" for s in (0, 50, 100, 150, 200)]
    np.testing.assert_array_equal(axes[0].get_lines()[0].get_xdata(), np.arange(41))


def oscillating_forces(path, period=437.0, d=20.0, u=0.05):
    t = np.arange(0, 5001, 10)
    cd = 3.0 + 0.2 * np.sin(4 * np.pi * t / period)
    cl = 0.1 + 0.5 * np.sin(2 * np.pi * t / period)
    rows = "\n".join(f"{s},0,0,{float(a)!r},{float(b)!r}"
                     for s, a, b in zip(t, cd, cl, strict=True))
    path.write_text("step,Fx_2,Fy_2,cD_2,cL_2\n" + rows + "\n")
    return d / (period * u)


def test_forces_strouhal_number_of_a_known_oscillation(tmp_path, capsys):
    """c_L = 0.1 + 0.5 sin(2π t / 437), sampled every 10 steps: St = D / (P U) exactly. The
    crossings are found by linear interpolation, whose error at 44 samples per period is far
    below 1e-4. The mean of c_D = 3 + 0.2 sin(4π t / P) over the 2500-step second half is 3 to
    within 0.2 P / (2π · 2500) = 0.006."""
    st = oscillating_forces(tmp_path / "forces.csv")
    status = cli.main(["plot", str(tmp_path / "forces.csv"), "--length", "20",
                       "--velocity", "0.05", "--out", str(tmp_path / "new" / "f.png")])
    out = capsys.readouterr().out
    assert status == 0 and (tmp_path / "new" / "f.png").is_file()
    assert f"St = f D / U {st:.5g}" in out, out
    measures = plots.plot_files([tmp_path / "forces.csv"], options=plots.Options(
        length=20, velocity=0.05))[0].measures["2"]
    assert measures["St"] == pytest.approx(st, rel=1e-4)
    assert measures["c_D_mean"] == pytest.approx(3.0, abs=0.006)
    assert measures["c_L_mean"] == pytest.approx(0.1, abs=0.02)
    assert measures["periods"] >= 4


def test_a_steady_force_has_no_strouhal_number(tmp_path):
    t = np.arange(0, 1001, 10)
    (tmp_path / "forces.csv").write_text("step,Fx_1,Fy_1,cD_1,cL_1\n" + "".join(
        f"{s},0,0,{5.0 + 1 / (1 + s)},{0.01 * s / 1000}\n" for s in t))
    plot, = plots.plot_files([tmp_path])
    assert math.isnan(plot.measures["1"]["St"])
    assert "St" not in plot.figure.axes[1].get_lines()[0].get_label()


def test_options_log_axes_only_and_out_directory(run_dir, tmp_path, capsys):
    status = cli.main(["plot", str(run_dir), "--only", "history", "probes", "--logx",
                       "--out", str(tmp_path / "figs")])
    assert status == 0
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["history.png", "probes.png"]
    assert "history" in capsys.readouterr().out
    plot, = plots.plot_files([run_dir / "history.csv"], options=plots.Options(logy=True))
    assert all(ax.get_yscale() == "log" for ax in plot.figure.axes)


def test_any_other_csv_is_drawn_against_its_first_column(tmp_path):
    (tmp_path / "sweep.csv").write_text("n,error,order\n8,0.1,nan\n16,0.025,2.0\n")
    plot, = plots.plot_files([tmp_path / "sweep.csv"])
    assert plot.kind == "table" and [ax.get_title() for ax in plot.figure.axes] == [
        "error", "order"]


def test_a_csv_without_rows_or_of_text_in_a_directory_is_skipped_with_a_warning(tmp_path):
    (tmp_path / "residual.csv").write_text("step,residual\n")
    (tmp_path / "history.csv").write_text("step,mean_rho,max_speed,kinetic_energy\n0,1,0,0\n")
    (tmp_path / "bench.csv").write_text("device,mlups\nH100,4000\n")
    with pytest.warns(UserWarning) as caught:
        (plot,) = plots.plot_files([tmp_path])
    assert plot.kind == "history"
    assert sorted(str(w.message).split(":")[0] for w in caught) == [
        str(tmp_path / "bench.csv"), str(tmp_path / "residual.csv")]
    with pytest.raises(ValueError, match="bench.csv: not a CSV of numbers"):
        plots.plot_files([tmp_path / "bench.csv"])  # named: an error


@pytest.mark.parametrize(("args", "message"), [
    (["missing_dir"], "no such file or directory"),
    (["{empty}"], "no CSV files in"),
    (["{bad}"], "not a CSV of numbers"),
    (["{empty}", "--length", "-1"], "--length must be a positive number"),
    (["{empty}", "--nodes", "0"], "--nodes must be a positive number"),
    (["{run}", "--out", "{empty}/all.png"], "names one PNG file, but there are 6 figures"),
])
def test_bad_input_gives_one_line(run_dir, tmp_path, capsys, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.csv").write_text("a,b\nx,y\n")
    args = [a.format(empty=tmp_path / "empty", bad=tmp_path / "bad.csv", run=run_dir)
            for a in args]
    assert cli.main(["plot", *args]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("thelma plot: error:") and message in err and "\n" not in err


def test_an_unknown_kind_names_the_known_ones(capsys):
    with pytest.raises(SystemExit):
        cli.main(["plot", ".", "--only", "vorticity"])
    err = capsys.readouterr().err
    assert "invalid choice: 'vorticity'" in err and "timings" in err


def test_without_matplotlib_one_line_names_the_extra(run_dir, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)  # `import matplotlib...` now fails
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert not plots.plotting_available()
    assert cli.main(["plot", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("thelma plot: error: thelma plot needs matplotlib, which is not installed: "
                   "pip install 'thelma-py[plot]'")


def test_validation_2d2_page_draws_its_forces_with_the_same_code(tmp_path, monkeypatch):
    """The 2D-2 section (a GPU run) with its sweep replaced by a known shedding history: the
    page's figure is the forces figure of `thelma plot`, and its St is the sweep's."""
    from thelma_py.cases.cylinder import CYLINDER_ID
    from thelma_py.tools import report

    n, period = 80, 8000  # the medium size's finest 2D-1 resolution; St = 0.3
    t = np.arange(0, 80001, 40)
    history = (t, 3.22 + 0.02 * np.sin(4 * np.pi * t / period), np.sin(2 * np.pi * t / period))
    st = n / (period * 2 * 0.05 / 3)  # St = D f / U with U = 2 u_max / 3

    def sweep(size, device, u_max):
        assert size == n
        return {"n": n, "steps": int(t[-1]), "history": history, "periods": 9, "St": st,
                "c_D_max": 3.22, "c_L_max": 1.0}

    monkeypatch.setattr(report.v, "schaefer_turek_2d2", sweep)
    section = report.schaefer_turek_2d2_section("medium", "cpu")
    fig = plots.save_figure(section.plot, tmp_path / "page.png")
    assert (tmp_path / "page.png").is_file()
    drag, lift = fig.axes
    np.testing.assert_array_equal(lift.get_lines()[0].get_ydata(), history[2])
    label = lift.get_lines()[0].get_label()
    assert label.startswith(f"body {CYLINDER_ID}: mean ") and label.endswith(f"St = {st:.4f}")
    text, passed = report.render([section], tmp_path, "# page")
    assert passed and "![Flow around a cylinder" in text
    assert (tmp_path / "schaefer_turek_2d2.png").is_file()

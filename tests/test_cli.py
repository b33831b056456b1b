"""The thelma command line, run as `python -m thelma_py` in a subprocess (and a few in-process)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from thelma_py.tools import cli

CASE = """
import thelma_py as tp

DEFAULT_STEPS = 20


def build(*, device="auto", precision="float64", n=8, nu=0.1):
    geo = tp.geometry.cavity((n, n), lid_velocity=(0.05, 0.0))
    return tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=nu), device=device,
                      precision=precision)
"""


def thelma(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "thelma_py", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def case_file(tmp_path):
    path = tmp_path / "tiny_cavity.py"
    path.write_text(CASE)
    return path


def test_list_shows_every_kind_with_parameters():
    out = thelma("list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line for line in lines if not line.startswith(" ")] == [
        "init:",
        "geometry:",
        "compute:",
        "results:",
    ]
    assert any(
        line.startswith("  lbm(nu, collision, les, force, streaming, storage, store, rounding, "
                        "cuda_options)")
        for line in lines
    )
    vtk = ("  vtk(path, prefix, every, fields, precision, crop, subsample, writer, compression, "
           "background): ParaView output")
    assert vtk in out.stdout
    assert re.search(r"^  progress\(", out.stdout, re.M)
    assert re.search(r"^  history\(every, path\)", out.stdout, re.M)


def test_info_tags_prints_the_d3q19_layout():
    out = thelma("info", "tags", "--lattice", "D3Q19")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("D3Q19: uint32 node tag")
    bits = [int(b) for b in re.findall(r"bit (\d+): direction", out.stdout)]
    assert bits == list(range(12, 30))  # 18 moving directions after kind and boundary id
    assert "bit 12: direction  1, c = (1, 0, 0)" in out.stdout


def test_info_lattice_prints_weights_and_opposites():
    out = thelma("info", "lattice", "d2q9")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[2:11]]
    weights = [row[-2] for row in rows]
    assert weights == ["4/9"] + ["1/9"] * 4 + ["1/36"] * 4
    opposite = [int(row[-1]) for row in rows]
    assert out.stdout.splitlines()[11].startswith("  MRT moments: ")
    assert sorted(opposite) == list(range(9)) and opposite[0] == 0


def test_run_writes_vtk_series_and_summary(case_file, tmp_path):
    out = thelma(
        "run",
        str(case_file),
        "--device",
        "cpu",
        "--out",
        "out",
        "--every",
        "10",
        "--set",
        "n=6",
        "--set",
        "nu=0.05",
        "--quiet",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert re.search(r"^steps\s+20$", out.stdout, re.M)
    assert re.search(r"^backend\s+cpu \(numpy\), float64$", out.stdout, re.M)
    folder = tmp_path / "out"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["steps"] == 20 and summary["shape"] == [6, 6]
    assert summary["parameters"] == {"device": "cpu", "n": 6, "nu": 0.05}
    assert summary["backend"] == "cpu (numpy)" and summary["precision"] == "float64"
    assert summary["mlups"] > 0 and summary["wall_seconds"] > 0
    assert summary["output"] == "out" and summary["interrupted"] is False
    series = [d.get("file") for d in ET.parse(folder / "fields.pvd").getroot().iter("DataSet")]
    assert series == [f"fields_{s:08d}.vti" for s in (0, 10, 20)]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*series, "fields.pvd", "summary.json"]
    )


def test_run_without_every_writes_the_last_step_only(case_file, tmp_path):
    out = thelma(
        "run",
        str(case_file),
        "--device",
        "cpu",
        "--steps",
        "7",
        "--precision",
        "float32",
        "--out",
        str(tmp_path / "end"),
        "--quiet",
    )
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "end").glob("*.vti")) == ["fields_00000007.vti"]
    summary = json.loads((tmp_path / "end" / "summary.json").read_text())
    assert (summary["steps"], summary["precision"]) == (7, "float32")


def test_an_unknown_set_key_lists_the_build_parameters(case_file):
    out = thelma("run", str(case_file), "--set", "bogus=1", "--set", "n=4")
    assert out.returncode == 2
    assert "unknown --set key(s) ['bogus']" in out.stderr
    assert "device='auto', precision='float64', n=8, nu=0.1" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_case_without_default_steps_needs_steps(tmp_path):
    path = tmp_path / "no_default.py"
    path.write_text(CASE.replace("DEFAULT_STEPS = 20", ""))
    out = thelma("run", str(path))
    assert out.returncode == 2
    assert "defines no DEFAULT_STEPS; pass --steps N" in out.stderr


@pytest.mark.parametrize(
    "text, expected",
    [
        ("n=64", ("n", 64)),
        ("nu=1e-3", ("nu", 0.001)),
        ("collision=mrt", ("collision", "mrt")),
        ("size=(32, 16)", ("size", (32, 16))),
        ("label=a=b", ("label", "a=b")),
    ],
)
def test_set_values_are_python_literals_or_strings(text, expected):
    assert cli.parse_assignment(text) == expected


@pytest.mark.parametrize("text", ["n", "=3", "2n=3"])
def test_malformed_set_is_refused(text):
    with pytest.raises(cli.CliError, match="key=value"):
        cli.parse_assignment(text)


def test_optional_commands_plug_in_when_their_module_exists(tmp_path, monkeypatch, capsys):
    (tmp_path / "thelma_cli_extra.py").write_text(
        textwrap.dedent('''
        """Say hello a number of times."""

        def add_arguments(parser):
            parser.add_argument("--times", type=int, default=1)

        def run(args):
            print("hello " * args.times)
            return 3
        ''')
    )
    (tmp_path / "thelma_cli_broken.py").write_text("import no_such_module_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        cli,
        "OPTIONAL_COMMANDS",
        {
            "hello": "thelma_cli_extra",
            "broken": "thelma_cli_broken",
            "absent": "thelma_cli_absent_module",
        },
    )
    for name in ("thelma_cli_extra", "thelma_cli_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    commands = cli.optional_commands()
    assert sorted(commands) == ["broken", "hello"]
    assert commands["hello"].help == "Say hello a number of times."
    assert cli.main(["hello", "--times", "2"]) == 3
    assert capsys.readouterr().out.strip() == "hello hello"
    assert cli.main(["broken"]) == 2
    assert "importing thelma_cli_broken failed: ModuleNotFoundError" in capsys.readouterr().err

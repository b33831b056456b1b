"""Bad input on the command line: exit status != 0, one line on stderr, no traceback, nothing
written; ``--set`` values converted by the type of each build() parameter; help texts."""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

import pytest

from tests.test_cli import thelma
from thelma_py.tools import case_input, cli

ROOT = Path(__file__).resolve().parents[1]
CAVITY = str(ROOT / "cases" / "lid_driven_cavity.py")

TYPED_CASE = '''
from __future__ import annotations

import typing

import thelma_py as tp

DEFAULT_STEPS = 2


def build(*, device: str = "auto", precision: str = "float64", n: int = 6, nu: float = 0.1,
          lid: tuple[float, float] = (0.05, 0.0), quiet: bool = False, label: str = "x",
          tag: int | None = None, mode: typing.Literal["a", "b"] = "a", untyped=3,
          compute: str = "lbm", collision: str = "bgk") -> tp.Solver:
    print(f"built n={n!r} nu={nu!r} lid={lid!r} quiet={quiet!r} label={label!r} tag={tag!r} "
          f"mode={mode!r} untyped={untyped!r}")
    geo = tp.geometry.cavity((n, n), lid_velocity=lid)
    params = {"collision": collision} if compute == "lbm" else {}
    return tp.compose("D2Q9", geo, tp.plugin("compute", compute, nu=nu, **params),
                      device=device, precision=precision)
'''


def one_line_error(result) -> str:
    """The error line of a refused command, after checking that it is the only output."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def typed_case(tmp_path):
    path = tmp_path / "typed.py"
    path.write_text(TYPED_CASE)
    return str(path)


# -- --set conversion --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected", "value"),
    [
        ("64", int, 64),
        ("100_000", int, 100_000),
        ("12", float, 12.0),
        ("1e-3", float, 0.001),
        ("true", bool, True),
        ("Off", bool, False),
        ("0", bool, False),
        ("mrt", str, "mrt"),
        ("'mrt'", str, "mrt"),
        ("12", str, "12"),
        ("0.1, 0", tuple[float, ...], (0.1, 0.0)),
        ("(1, 2)", tuple[int, int], (1, 2)),
        ("[1, 2.5]", list[float], [1.0, 2.5]),
        ("None", int | None, None),
        ("7", int | None, 7),
        ("7", typing.Optional[int], 7),  # noqa: UP045 (the old spelling works too)
        ("mrt", str | dict, "mrt"),
        ("{'name': 'cumulant', 'limiter': 0.01}", str | dict,
         {"name": "cumulant", "limiter": 0.01}),
        ("{'c_s': 0.1}", str | dict | None, {"c_s": 0.1}),
        ("12", str | int, 12),
        ("b", typing.Literal["a", "b"], "b"),
        ("(32, 16)", typing.Any, (32, 16)),
        ("x y", typing.Any, "x y"),
        ("out/a", Path, Path("out/a")),
    ],
)
def test_values_are_converted_to_the_parameter_type(text, expected, value):
    converted = case_input.convert_value(text, expected)
    assert converted == value and type(converted) is type(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12.5", int),
        ("abc", int),
        ("True", int),
        ("abc", float),
        ("maybe", bool),
        ("0.1", tuple[float, ...]),
        ("(1, 2, 3)", tuple[int, int]),
        ("(1, 'a')", tuple[int, ...]),
        ("c", typing.Literal["a", "b"]),
        ("x", int | None),
    ],
)
def test_wrong_values_are_refused(text, expected):
    with pytest.raises(ValueError):
        case_input.convert_value(text, expected)


def test_types_come_from_annotations_else_defaults(typed_case):
    types = case_input.parameter_types(case_input.load_case(typed_case).build)  # string annotations
    assert types["n"] is int and types["lid"] == tuple[float, float]
    assert types["tag"] == int | None and types["untyped"] is int  # from the default 3

    def build(*, n=64, u=None, name: NoSuchName = "x"):  # noqa: F821
        return None

    assert case_input.parameter_types(build) == {"n": int, "u": typing.Any, "name": str}


def test_set_values_reach_build_converted(typed_case):
    result = thelma("run", typed_case, "--device", "cpu", "--quiet", "--set", "n=5", "--set",
                    "nu=0.2", "--set", "lid=0.02,0", "--set", "quiet=yes", "--set", "label=12",
                    "--set", "tag=None", "--set", "mode=b", "--set", "untyped=4")
    assert result.returncode == 0, result.stderr
    assert ("built n=5 nu=0.2 lid=(0.02, 0.0) quiet=True label='12' tag=None mode='b' "
            "untyped=4") in result.stdout


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("n=abc", "--set n=abc: n expects int, got 'abc'"),
        ("n=12.5", "--set n=12.5: n expects int, got '12.5'"),
        ("reynolds=abc", "--set reynolds=abc: reynolds expects float, got 'abc'"),
    ],
)
def test_a_wrong_set_value_names_parameter_type_and_value(assignment, message, tmp_path):
    result = thelma("run", CAVITY, "--device", "cpu", "--out", str(tmp_path / "out"),
                    "--set", assignment)
    assert one_line_error(result) == f"thelma run: error: {message}"
    assert not (tmp_path / "out").exists()


def test_an_unknown_collision_is_one_line_without_attrs_internals(tmp_path):
    result = thelma("run", CAVITY, "--device", "cpu", "--out", str(tmp_path / "out"),
                    "--set", "collision=xyz")
    line = one_line_error(result)
    assert "compute plug-in 'lbm': unknown collision model 'xyz'; valid: bgk," in line
    assert "Attribute(" not in line
    assert not (tmp_path / "out").exists()


def test_a_parameter_the_chosen_compute_plugin_does_not_take_is_refused(typed_case, tmp_path):
    result = thelma("run", typed_case, "--device", "cpu", "--out", str(tmp_path / "out"),
                    "--set", "compute=lwacm-fused", "--set", "collision=trt")
    assert one_line_error(result) == (
        "thelma run: error: --set collision: the compute plug-in 'lwacm-fused' takes no "
        "'collision' (taken by lbm); its parameters: nu, force, les, equilibrium_order, store, "
        "rounding, staging, open_ghosts, density")
    assert not (tmp_path / "out").exists()
    fine = thelma("run", typed_case, "--device", "cpu", "--quiet", "--steps", "1", "--set",
                  "compute=lwacm-fused")
    assert fine.returncode == 0, fine.stderr


# -- case files and geometry input ---------------------------------------------------------------
def test_a_case_with_a_syntax_error_is_one_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import thelma_py\n\ndef build(**kw):\n    return (\n")
    line = one_line_error(thelma("run", str(path), "--device", "cpu"))
    assert line.startswith(f"thelma run: error: {path}:4: SyntaxError: ")


def test_a_garbage_stl_is_one_line_without_the_vtk_log(tmp_path):
    stl = tmp_path / "garbage.stl"
    stl.write_bytes(b"this is not a mesh\n" * 20)
    result = thelma("run", str(ROOT / "cases" / "stl_object.py"), "--device", "cpu",
                    "--set", f"stl={stl}", "--out", str(tmp_path / "out"))
    assert one_line_error(result) == (
        f"thelma run: error: ValueError: {stl}: no triangles read (not an STL file, or empty)")
    assert not (tmp_path / "out").exists()


# -- commands and help ---------------------------------------------------------------------------
def test_traceback_works_after_the_subcommand(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def build(:\n")
    for args in (["--traceback", "run", str(path)], ["run", str(path), "--traceback"]):
        result = thelma(*args)
        assert result.returncode != 0 and "Traceback" in result.stderr, args


def test_bench_without_a_gpu_gives_advice_it_accepts(monkeypatch, capsys):
    from thelma_py.tools import bench

    monkeypatch.setattr(bench, "gpu_available", lambda: False)
    monkeypatch.setattr(bench, "gpu_unavailable_reason", lambda: "no CUDA device found")
    assert cli.main(["bench", "--sizes", "8"]) != 0
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "needs a GPU, but no CUDA device found" in line
    assert "--device cpu` prints" in line and "use --device cpu" not in line


def _subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser({**cli.COMMANDS, **cli.optional_commands()})
    found = {}
    pending = [("thelma", parser)]
    while pending:
        name, current = pending.pop()
        found[name] = current
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending += [(f"{name} {sub}", child) for sub, child in action.choices.items()]
    return found


def test_every_option_has_help_that_shows_its_default():
    parsers = _subcommand_parsers()
    assert {"thelma run", "thelma bench", "thelma validate", "thelma kernels",
            "thelma info tags"} <= set(parsers)
    for name, parser in parsers.items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or action.dest in ("help", "version"):
                continue
            where = f"{name} {action.option_strings[-1]}"
            assert action.help, f"{where} has no help"
            if action.nargs != 0:  # not a flag: the help says what happens without it
                shown = formatter._get_help_string(action) % vars(action)
                assert "default" in shown, f"{where}: {shown!r} shows no default"


def test_list_shows_whole_sentences():
    out = thelma("list")
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        if line.startswith("  "):
            assert line.rstrip().endswith((".", ")")), line
    assert "3D uses the Re=1600 Brachet initial field on a (L, L, L) box." in out.stdout

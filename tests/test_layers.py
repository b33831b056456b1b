"""Layers and import cycles of the installed layout (pyproject.toml [tool.importlinter];
tests/lint_imports.py stages the layout that the package-dir mapping installs)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.lint_imports import REPO, lint, stage, strongly_connected

KNOWN_CYCLES: list[list[str]] = []
"""No import circle anywhere in the package (lazy imports inside functions included)."""


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return stage(tmp_path_factory.mktemp("layout"))


def test_the_layer_contracts_hold(layout):
    result = lint(layout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(("file", "line", "broken"), [
    ("thelma_py/units.py", "from thelma_py.geometry import shapes", "thelma_py.units"),
    ("thelma_py/__init__.py", "import thelma_py.modules.init.fields", "The package module"),
    ("thelma_py/modules/results/probes.py", "import thelma_py.geometry.shapes",
     "thelma_py.modules is not allowed to import thelma_py.geometry"),
    ("thelma_py/added.py", "", "added"),  # a new core module must be placed in a layer
])
def test_an_import_across_the_layers_breaks_a_contract(tmp_path, file, line, broken):
    folder = stage(tmp_path)
    with open(folder / file, "a", encoding="utf-8") as handle:
        handle.write(f"\n{line}\n")
    result = lint(folder)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout and "0 broken" not in result.stdout
    assert broken in result.stdout.split("Broken contracts")[1]


def test_the_import_cycles_are_exactly_the_known_ones():
    result = subprocess.run([sys.executable, "-m", "tests.lint_imports", "--cycles"],
                            cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == KNOWN_CYCLES


def test_the_cycle_finder_finds_every_cycle_and_only_cycles():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e", "c"}, "e": set(),
             "f": {"f", "a"}, "g": {"h"}, "h": {"i"}, "i": {"g", "a"}}
    assert strongly_connected(graph) == [["a", "b"], ["c", "d"], ["g", "h", "i"]]

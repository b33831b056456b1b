"""Packaging: modules/ and geometry/ install under thelma_py, and every package is listed.

An editable install finds unlisted sub-packages anyway; a wheel would silently drop them. This
test catches that without building a wheel.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python >= 3.11")

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = {
    "thelma_py": "thelma_py",
    "modules": "thelma_py.modules",
    "geometry": "thelma_py.geometry",
    "cases": "thelma_py.cases",
}


def pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


def packages_on_disk() -> set[str]:
    """Installed names of every directory holding an __init__.py under the source roots."""
    found = set()
    for folder, installed in SOURCE_ROOTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in relative:
                found.add(".".join((installed, *relative)))
    return found


def test_every_package_directory_is_listed_in_pyproject():
    listed = set(pyproject()["tool"]["setuptools"]["packages"])
    on_disk = packages_on_disk()
    assert {"thelma_py", "thelma_py.modules", "thelma_py.geometry"} <= on_disk
    assert sorted(on_disk - listed) == [], "add these to [tool.setuptools] packages"
    assert sorted(listed - on_disk) == [], "these listed packages have no __init__.py"


def test_plugin_trees_are_mapped_into_the_thelma_py_namespace():
    mapping = pyproject()["tool"]["setuptools"]["package-dir"]
    assert mapping == {"thelma_py.modules": "modules", "thelma_py.geometry": "geometry",
                       "thelma_py.cases": "cases"}


def test_namespaced_imports_work():
    lbm = importlib.import_module("thelma_py.modules.compute.lbm")
    geometry = importlib.import_module("thelma_py.geometry")
    # the source tree (editable install) or site-packages/thelma_py/... (wheel)
    assert Path(lbm.__file__).parts[-4:] == ("modules", "compute", "lbm", "__init__.py")
    assert Path(geometry.__file__).parts[-2:] == ("geometry", "__init__.py")
    assert callable(geometry.cavity) and lbm.Lbm.plugin_name == "lbm"


def test_console_script_points_at_the_cli():
    assert pyproject()["project"]["scripts"] == {"thelma": "thelma_py.tools.cli:main"}
    assert callable(importlib.import_module("thelma_py.tools.cli").main)

"""Run import-linter on thelma_py as it installs: ``python -m tests.lint_imports [args]``.

``modules/``, ``geometry/`` and ``cases/`` install as ``thelma_py.modules`` (...) through
``[tool.setuptools.package-dir]``; an editable install serves them from an import hook, so
the import graph of ``thelma_py``'s folder lacks them. This stages the installed layout (the
Python files, copied per that mapping) in a temporary folder and runs ``lint-imports`` with
the contracts of pyproject.toml there. ``python -m tests.lint_imports --cycles`` prints the
import cycles of the same layout instead (JSON: lists of modules), for tests/test_layers.py.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "thelma_py"


def package_dirs(repo: Path = REPO) -> dict[str, Path]:
    """Package name -> source folder: thelma_py itself and every package-dir mapping."""
    config = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"].get("package-dir", {})
    return {PACKAGE: repo / PACKAGE} | {name: repo / path for name, path in mapping.items()}


def stage(target: Path, repo: Path = REPO) -> Path:
    """Copy the Python files of the installed layout under ``target``; returns ``target``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name, source in sorted(package_dirs(repo).items()):  # parents before children
        destination = target.joinpath(*name.split("."))
        shutil.copytree(source, destination, ignore=ignore, dirs_exist_ok=True)
    return target


@contextlib.contextmanager
def staged(repo: Path = REPO) -> Iterator[Path]:
    """A temporary folder holding the staged layout (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="thelma-layout-") as folder:
        yield stage(Path(folder), repo)


def lint(folder: Path, *args: str,
         config: Path = REPO / "pyproject.toml") -> subprocess.CompletedProcess:
    """``lint-imports`` in ``folder`` (a staged layout), output captured."""
    command = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
               "lint_imports_command()", "--config", str(config), "--no-cache", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (module -> modules it imports): every strongly connected
    set of two or more modules, sorted (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            child = next((m for m in edges if m not in index or m in stack), None)
            if child is not None and child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
                continue
            if child is not None:  # on the stack: a back edge
                low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = stack[stack.index(node):]
                del stack[stack.index(node):]
                if len(members) > 1:
                    cycles.append(sorted(members))
    return sorted(cycles)


def import_cycles(folder: Path) -> list[list[str]]:
    """The import cycles of the staged layout in ``folder``; imports made only for type
    checking (under ``if TYPE_CHECKING:``) never run and are left out."""
    import grimp

    sys.path.insert(0, str(folder))  # before the editable install's import hook
    graph = grimp.build_graph(PACKAGE, cache_dir=None, exclude_type_checking_imports=True)
    return strongly_connected({m: graph.find_modules_directly_imported_by(m)
                               for m in graph.modules})


def main(argv: list[str]) -> int:
    with staged() as folder:
        if argv[:1] == ["--cycles"]:
            print(json.dumps(import_cycles(folder)))
            return 0
        result = lint(folder, *argv)
    print(result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

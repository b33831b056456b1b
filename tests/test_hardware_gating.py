"""The hardware gating of tests/conftest.py, run on a throw-away test file in a child pytest
whose conftest uses ours with one CUDA device pretended: a test that needs two is skipped, and
fails under THELMA_REQUIRE_GPU=1; so does one whose MPI launcher is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
from tests import hardware

hardware.visible_gpus = lambda: 1  # one device, whatever this machine has
from tests.conftest import pytest_collection_modifyitems, pytest_runtest_setup  # noqa: E402,F401
"""

TESTS = """
import pytest

from tests import hardware


@pytest.mark.gpu
@pytest.mark.gpus(2)
def test_needs_two():
    pass


@pytest.mark.gpu
@pytest.mark.gpus(1)
def test_needs_one():
    pass


@pytest.mark.gpu
def test_without_its_launcher():
    hardware.require_or_skip("no mpiexec on PATH")
"""


def run_child(tmp_path: Path, required: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_child.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: a GPU\n    gpus(n): n\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "THELMA_REQUIRE_GPU": "1" if required else "0"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p",
                           "no:cacheprovider", str(tmp_path)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("required", [False, True])
def test_tests_short_of_gpus_or_mpi_skip_or_fail_when_required(tmp_path, required):
    result = run_child(tmp_path, required)
    out = result.stdout + result.stderr
    assert "PASSED test_child.py::test_needs_one" in out, out
    if required:  # a test short of devices fails in its set-up (an error), one short of MPI fails
        assert result.returncode == 1, out
        assert "ERROR test_child.py::test_needs_two - Failed: THELMA_REQUIRE_GPU=1 but needs" \
            in out, out
        assert "FAILED test_child.py::test_without_its_launcher - Failed: THELMA_REQUIRE_GPU" \
            in out, out
        assert "1 failed, 1 passed, 1 error" in out, out
    else:
        assert result.returncode == 0, out
        assert "needs 2 GPUs, 1 visible" in out and "no mpiexec on PATH" in out, out
        assert "1 passed, 2 skipped" in out, out

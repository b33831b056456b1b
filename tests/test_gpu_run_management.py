"""Run management on the GPU: SIGKILL and resume bit for bit, output copies that overlap steps.

Skipped without a GPU (see conftest.py).
"""

from __future__ import annotations

import signal
import subprocess
import sys

import numpy as np
import pytest

import thelma_py as tp
from tests.test_checkpoint import CASE, final_state, thelma_process, wait_for_latest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_a_gpu_run_killed_between_checkpoints_resumes_bit_identically(tmp_path, precision):
    (tmp_path / "case.py").write_text(CASE)
    common = ["case.py", "--quiet", "--steps", "600", "--set", "slow=True", "--device", "cuda",
              "--precision", precision, "--checkpoint-every", "100"]
    reference = subprocess.run([sys.executable, "-m", "thelma_py", "run", *common,
                                "--checkpoint", "full"], cwd=tmp_path, capture_output=True,
                               text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr

    victim = thelma_process(*common, "--checkpoint", "part", cwd=tmp_path)
    reached = wait_for_latest(tmp_path / "part", 200, victim, timeout=240)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    assert victim.returncode == -signal.SIGKILL and 200 <= reached < 600
    resumed = subprocess.run([sys.executable, "-m", "thelma_py", "run", *common, "--checkpoint",
                              "part", "--resume", "part"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    step_full, f_full = final_state(tmp_path / "full")
    step_part, f_part = final_state(tmp_path / "part")
    assert step_full == step_part == 600
    assert f_full.dtype == np.dtype(precision) and np.array_equal(f_full, f_part)


def test_fields_later_holds_the_fields_of_the_step_it_was_called_at():
    """The asynchronous copy snapshots ρ, u before the next steps overwrite them."""
    geo = tp.geometry.cavity((96, 80, 64), lid_velocity=(0.05, 0.0, 0.0))
    solver = tp.compose("D3Q19", geo, tp.plugin("compute", "lbm", nu=0.02), device="cuda",
                        precision="float32")
    solver.step(40)
    expected = solver.fields()
    later = [solver.fields_later()]
    solver.step(40)
    later.append(solver.fields_later())  # a second snapshot waits for the first copy
    solver.step(40)
    now = solver.fields()
    first, second = (wait() for wait in later)
    for name in ("rho", "u", "kind"):
        np.testing.assert_array_equal(first[name], expected[name])
    assert not np.array_equal(second["u"], expected["u"])
    assert not np.array_equal(now["u"], second["u"])


def test_released_host_copies_are_reused_and_hold_the_new_step():
    """A released snapshot's pinned buffers take the next snapshot (no new page-locking); a
    reserved set is taken first."""
    geo = tp.geometry.cavity((64, 48, 40), lid_velocity=(0.05, 0.0, 0.0))
    solver = tp.compose("D3Q19", geo, tp.plugin("compute", "lbm", nu=0.02), device="cuda",
                        precision="float32")
    assert solver.reserve_host_copies(2) == 2
    solver.step(20)
    first = solver.fields_later()
    held = first()["rho"]
    first.release()
    with pytest.raises(RuntimeError, match="released"):
        first()
    solver.step(20)
    expected = solver.fields()
    second = solver.fields_later()
    got = second()
    assert np.shares_memory(got["rho"], held)
    for name in ("rho", "u", "kind"):
        np.testing.assert_array_equal(got[name], expected[name])

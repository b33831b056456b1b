"""Checkpoints: bit-identical restart (also after SIGKILL and SIGTERM), refusals, atomicity."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import thelma_py as tp
from thelma_py import checkpoints as ck
from thelma_py.checkpoints import CheckpointError

CASE = textwrap.dedent('''
    import time
    import thelma_py as tp

    DEFAULT_STEPS = 600


    class Slow:
        """Sleeps every 10 steps, so that a test can stop the run between checkpoints."""
        schedule = tp.Every(10, at_start=False)

        def __call__(self, solver):
            time.sleep(0.01)


    def build(*, device="auto", precision="float64", n=12, nu=0.05, slow=False):
        geo = tp.geometry.cavity((n, n), lid_velocity=(0.05, 0.0))
        results = [Slow()] if slow else []
        return tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=nu, collision="trt"),
                          device=device, precision=precision, results=results)
''')


def cavity(nu=0.05, n=12, results=(), precision="float64"):
    geo = tp.geometry.cavity((n, n), lid_velocity=(0.05, 0.0))
    return tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=nu, collision="trt"),
                      results=list(results), device="cpu", precision=precision)


def thelma_process(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "thelma_py", "run", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def final_state(directory) -> np.ndarray:
    meta, state = ck.read_checkpoint(directory)
    return meta["step"], state["f"]


def wait_for_latest(root, least_step: int, process, timeout=60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        latest = root / "latest"
        if latest.is_file():
            step = int(latest.read_text().strip().removeprefix("step_"))
            if step >= least_step:
                return step
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError("no checkpoint appeared")


@pytest.fixture
def case_dir(tmp_path):
    (tmp_path / "case.py").write_text(CASE)
    return tmp_path


def test_a_run_killed_between_checkpoints_resumes_bit_identically(case_dir):
    common = ["case.py", "--quiet", "--steps", "600", "--set", "slow=True",
              "--checkpoint-every", "100"]
    reference = subprocess.run([sys.executable, "-m", "thelma_py", "run", *common,
                                "--checkpoint", "full"], cwd=case_dir, capture_output=True,
                               text=True, timeout=120)
    assert reference.returncode == 0, reference.stderr

    victim = thelma_process(*common, "--checkpoint", "part", cwd=case_dir)
    reached = wait_for_latest(case_dir / "part", 200, victim)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert 200 <= reached < 600
    ck.read_checkpoint(case_dir / "part")  # what `latest` names is complete
    resumed = subprocess.run([sys.executable, "-m", "thelma_py", "run", *common, "--checkpoint",
                              "part", "--resume", "part"], cwd=case_dir, capture_output=True,
                             text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed    from step" in resumed.stdout
    step_full, f_full = final_state(case_dir / "full")
    step_part, f_part = final_state(case_dir / "part")
    assert step_full == step_part == 600
    assert f_full.dtype == np.float64 and np.array_equal(f_full, f_part)  # bit for bit


def test_sigterm_finishes_the_batch_writes_a_checkpoint_and_exits_cleanly(case_dir):
    args = ["case.py", "--quiet", "--steps", "100000", "--set", "slow=True", "--checkpoint",
            "ck", "--checkpoint-every", "50", "--out", "out"]
    process = thelma_process(*args, cwd=case_dir)
    wait_for_latest(case_dir / "ck", 50, process)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "SIGTERM received: stopped cleanly at step" in err
    step, f = final_state(case_dir / "ck")
    assert step % 10 == 0 and step >= 50  # a batch boundary (the Slow plug-in's stride)
    summary = json.loads((case_dir / "out" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["steps"] == step

    solver = cavity()
    solver.run(step)
    assert np.array_equal(solver.engine.f, f)


def test_load_checkpoint_continues_exactly_and_skips_results_already_done(tmp_path):
    calls = []

    class Recorder:
        schedule = tp.Every(25)

        def __call__(self, solver):
            calls.append(solver.time_step)

    first = cavity(results=[Recorder(), tp.plugin("results", "checkpoint", path=tmp_path,
                                                  every=50)])
    first.run(100)
    assert sorted((tmp_path).glob("step_*"))[-1].name == "step_0000000100"
    calls.clear()
    second = cavity(results=[Recorder()])
    assert second.load_checkpoint(tmp_path / "step_0000000050") == 50
    second.run(50)
    assert calls == [75, 100]  # 50 was done before the checkpoint was written
    assert np.array_equal(second.engine.f, first.engine.f)


@pytest.mark.parametrize(("change", "message"), [
    (dict(nu=0.06), "nu differs: checkpoint 0.05, run 0.06"),
    (dict(n=14), "shape differs: checkpoint [12, 12], run [14, 14]"),
    (dict(precision="float32"), "precision differs: checkpoint float64, run float32"),
])
def test_a_checkpoint_of_another_configuration_is_refused_naming_the_difference(
        tmp_path, change, message):
    cavity().save_checkpoint(tmp_path / "c")
    with pytest.raises(CheckpointError) as info:
        cavity(**change).load_checkpoint(tmp_path / "c")
    assert message in str(info.value)


def test_another_geometry_is_refused(tmp_path):
    cavity().save_checkpoint(tmp_path / "c")
    geo = tp.geometry.cavity((12, 12), lid_velocity=(0.04, 0.0))
    other = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05, collision="trt"),
                       device="cpu")
    with pytest.raises(CheckpointError, match="another geometry"):
        other.load_checkpoint(tmp_path / "c")


@pytest.mark.parametrize("damage", ["flip_state_byte", "truncate_meta", "drop_state", "empty"])
def test_a_corrupt_checkpoint_gives_a_clear_error(tmp_path, damage):
    target = cavity().save_checkpoint(tmp_path / "c")
    if damage == "flip_state_byte":
        data = bytearray((target / "state.npz").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (target / "state.npz").write_bytes(bytes(data))
    elif damage == "truncate_meta":
        (target / "meta.json").write_text((target / "meta.json").read_text()[:40])
    elif damage == "drop_state":
        (target / "state.npz").unlink()
    else:
        target = tmp_path / "nothing"
        target.mkdir()
    with pytest.raises(CheckpointError) as info:
        cavity().load_checkpoint(target)
    text = str(info.value)
    assert str(target) in text
    assert ("corrupt" in text) or ("is not a checkpoint" in text)


def test_a_full_disk_leaves_the_previous_checkpoint_intact_and_no_temporary(tmp_path,
                                                                            monkeypatch):
    solver = cavity()
    solver.run(10)
    target = solver.save_checkpoint(tmp_path / "c")
    before = (target / "state.npz").read_bytes()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    solver.run(10)
    monkeypatch.setattr(ck.np, "savez", full)
    with pytest.raises(OSError) as info:
        solver.save_checkpoint(target)
    assert info.value.errno == errno.ENOSPC
    assert f"'{target}'" in str(info.value) and "No space left" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]
    assert (target / "state.npz").read_bytes() == before
    assert ck.read_checkpoint(target)[0]["step"] == 10


def test_the_plugin_keeps_the_newest_and_points_latest_at_the_last(tmp_path):
    solver = cavity(results=[tp.plugin("results", "checkpoint", path=tmp_path, every=10,
                                       keep=2)])
    solver.run(50)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "latest", "step_0000000040", "step_0000000050"]
    assert ck.resolve(tmp_path).name == "step_0000000050"


@pytest.mark.parametrize("bad", [dict(every=0), dict(keep=0), dict(keep=1.5)])
def test_bad_checkpoint_parameters_are_refused(tmp_path, bad):
    with pytest.raises((ValueError, TypeError)):
        tp.plugin("results", "checkpoint", path=tmp_path, **bad)

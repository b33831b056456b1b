"""What a run leaves behind is true on every exit: summary.json and a .pvd that lists exactly the
files there (diverged, failed, resumed elsewhere), step counts of what was computed, and a
resume that falls back to the newest intact checkpoint when the latest is damaged."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import thelma_py as tp
from tests.test_cli import thelma
from tests.test_cli_input import one_line_error
from thelma_py.checkpoints import CheckpointFallback, CorruptCheckpoint

CASE = """
import thelma_py as tp

DEFAULT_STEPS = 600


class FailAt:
    schedule = tp.Every(1)

    def __init__(self, step):
        self.step = step

    def __call__(self, solver):
        if solver.time_step == self.step:
            raise OSError(f"disk gone at step {self.step}")


def build(*, device="auto", precision="float64", n=8, lid=0.05, fail_at=-1):
    geo = tp.geometry.cavity((n, n), lid_velocity=(lid, 0.0))
    return tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.1), device=device,
                      precision=precision, results=[FailAt(fail_at)])
"""


@pytest.fixture
def case(tmp_path):
    (tmp_path / "case.py").write_text(CASE)
    return tmp_path


def run(case, *args):
    return thelma("run", "case.py", "--device", "cpu", "--quiet", *args, cwd=case)


def listed(folder) -> list[str]:
    """Files of the .pvd, each checked to exist."""
    names = [d.get("file") for d in ET.parse(folder / "fields.pvd").getroot().iter("DataSet")]
    assert all((folder / name).is_file() for name in names), names
    return names


def summary(folder) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_a_diverged_run_writes_its_summary_and_its_last_fields(case):
    result = run(case, "--out", "out", "--set", "lid=0.2", "--max-velocity", "0.1",
                 "--steps", "3000")
    line = one_line_error(result)
    assert "DivergenceError: |u| = " in line and "at step 1000" in line
    assert listed(case / "out") == ["fields_00001000.vti"]  # the step it was found at
    record = summary(case / "out")
    assert record["steps"] == 1000 and record["error"].startswith("DivergenceError: ")
    assert record["interrupted"] is False and "(failed)" in result.stdout


def test_a_run_failing_in_a_plugin_keeps_consistent_records(case):
    result = run(case, "--out", "out", "--every", "5", "--set", "fail_at=12")
    assert one_line_error(result) == "thelma run: error: OSError: disk gone at step 12"
    assert listed(case / "out") == ["fields_00000000.vti", "fields_00000005.vti",
                                    "fields_00000010.vti"]
    assert summary(case / "out")["error"] == "OSError: disk gone at step 12"


def test_a_resumed_run_counts_what_it_computed_and_lists_only_its_files(case):
    first = run(case, "--out", "a", "--every", "200", "--checkpoint", "ck",
                "--checkpoint-every", "200")
    assert first.returncode == 0, first.stderr
    assert summary(case / "a")["steps"] == 600
    again = run(case, "--out", "b", "--every", "200", "--steps", "1000", "--resume", "ck")
    assert again.returncode == 0, again.stderr
    record = summary(case / "b")
    assert (record["steps"], record["time_step"], record["resumed_from"]) == (400, 1000, 600)
    assert "steps      400 (step 600 to 1000)" in again.stdout
    assert listed(case / "b") == ["fields_00000800.vti", "fields_00001000.vti"]
    same = run(case, "--out", "a", "--every", "200", "--steps", "800", "--resume", "ck")
    assert same.returncode == 0, same.stderr
    assert listed(case / "a") == [f"fields_{s:08d}.vti" for s in (0, 200, 400, 600, 800)]


def test_a_damaged_latest_checkpoint_falls_back_to_the_newest_intact_one(case):
    assert run(case, "--checkpoint", "ck", "--checkpoint-every", "200").returncode == 0
    state = case / "ck" / "step_0000000600" / "state.npz"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0xFF
    state.write_bytes(bytes(data))
    result = run(case, "--steps", "700", "--resume", "ck")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == (
        "thelma run: warning: checkpoint 'ck/step_0000000600' is corrupt: state.npz is missing "
        "or does not match the checksum in meta.json; resuming from 'ck/step_0000000400' "
        "(step 400), the newest intact checkpoint in 'ck'")
    assert "steps      300 (step 400 to 700)" in result.stdout


def _solver():
    return tp.compose("D2Q9", tp.geometry.cavity((8, 8), lid_velocity=(0.05, 0.0)),
                      tp.plugin("compute", "lbm", nu=0.1), device="cpu")


def test_the_fallback_loads_the_same_state_and_refuses_when_nothing_is_intact(tmp_path):
    store = tp.plugin("results", "checkpoint", path=tmp_path, every=10, keep=3)
    solver = _solver()
    solver.results.append(store)
    solver.run(30)
    reference = _solver()
    reference.load_checkpoint(tmp_path / "step_0000000020")
    (tmp_path / "step_0000000030" / "meta.json").write_text("{")
    fallback = _solver()
    with pytest.warns(CheckpointFallback, match="step_0000000030' is corrupt"):
        assert fallback.load_checkpoint(tmp_path) == 20
    np.testing.assert_array_equal(fallback.density(), reference.density())
    for step in (10, 20):
        (tmp_path / f"step_{step:010d}" / "state.npz").write_bytes(b"")
    with pytest.raises(CorruptCheckpoint, match=f"no intact checkpoint in '{tmp_path}'"):
        _solver().load_checkpoint(tmp_path)
    with pytest.raises(CorruptCheckpoint):  # a checkpoint named itself has no stand-in
        _solver().load_checkpoint(tmp_path / "step_0000000020")

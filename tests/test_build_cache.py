"""The session's shared build folder (tests/build_cache.py): one build per key however many
processes ask at once, and nothing left behind by a build that fails."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from tests import build_cache


def _ask(root: str, name: str, log: str) -> str:
    """In a process of its own: the artifact ``name``, whose build appends a line to ``log``
    and takes long enough for the others to arrive while it runs."""
    import os
    import time

    os.environ[build_cache.ENV] = root

    def build(folder: Path) -> None:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.3)
        (folder / "artifact").write_text("built")

    return (build_cache.shared(name, build) / "artifact").read_text()


def test_four_processes_asking_at_once_build_once(tmp_path):
    log = tmp_path / "builds.log"
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        got = pool.starmap(_ask, [(str(tmp_path / "root"), "k1", str(log))] * 4)
    assert got == ["built"] * 4
    assert len(log.read_text().splitlines()) == 1
    assert sorted(p.name for p in (tmp_path / "root").iterdir()) == ["k1", "k1.lock"]


def test_a_failed_build_leaves_nothing_and_the_next_ask_builds(tmp_path, monkeypatch):
    monkeypatch.setenv(build_cache.ENV, str(tmp_path))
    calls = []

    def failing(folder: Path) -> None:
        calls.append("failing")
        (folder / "half").write_text("partial")
        raise RuntimeError("compiler said no")

    with pytest.raises(RuntimeError, match="compiler said no"):
        build_cache.shared("k2", failing)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k2.lock"]

    def working(folder: Path) -> None:
        calls.append("working")
        (folder / "whole").write_text("done")

    assert (build_cache.shared("k2", working) / "whole").read_text() == "done"
    assert (build_cache.shared("k2", working) / "whole").read_text() == "done"
    assert calls == ["failing", "working"]


def test_keys_differ_in_any_part():
    assert build_cache.key("g++", "-O1", "text") != build_cache.key("g++", "-O2", "text")
    assert build_cache.key("a", "bc") != build_cache.key("ab", "c")

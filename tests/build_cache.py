"""One folder of compiled test artifacts (nvcc cubins, g++ libraries of the host CUDA stand-in)
for a whole pytest session, shared by its pytest-xdist workers.

Every worker collects every test, so without it two workers compile the same kernel text
twice. An artifact lives in ``<root>/<key>/``, where ``key`` hashes everything that shapes it;
a worker that finds the folder uses it, one that does not builds it under a lock on
``<key>.lock`` (the other workers wait for that build instead of repeating it) into a scratch
folder that is renamed into place once complete, so a half-built artifact is never seen. The
root is named by :data:`ENV`, which conftest sets in the controlling process before the
workers start (they inherit it) and removes with the folder when the session ends.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

ENV = "THELMA_TEST_BUILDS"
"""Environment variable naming the session's artifact folder."""

_own_root: Path | None = None


def key(*parts: str) -> str:
    """A short hash of ``parts`` (the source text and everything else that shapes the build)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def root() -> Path:
    """The session's folder (:data:`ENV`), else one of this process's own."""
    global _own_root
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    if _own_root is None:
        _own_root = Path(tempfile.mkdtemp(prefix="thelma_builds_"))
    return _own_root


def shared(name: str, build: Callable[[Path], None]) -> Path:
    """The folder of artifact ``name``: ``build(folder)`` fills a scratch folder once per
    session (the first process to ask; the others wait on the lock and reuse it)."""
    base = root()
    final = base / name
    if final.is_dir():
        return final
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not final.is_dir():
            scratch = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=base))
            try:
                build(scratch)
                os.replace(scratch, final)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return final

"""File helpers: writable output directories, atomic writes (checkpoints, results plug-ins), and
reading the JSON data files the benchmarks keep (gzip-compressed where large).

A reader (ParaView, a plotting script, a second process tailing a run) must never see a
half-written file. Every file is therefore written under a temporary name in its target directory
and moved into place with :func:`os.replace`, which is atomic on POSIX and Windows.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path


class OutputDirectoryError(OSError):
    """An output directory cannot be created or written; the message names the path and why."""


def ensure_writable_dir(path: str | os.PathLike, who: str = "results") -> Path:
    """Create ``path`` (with parents) and check that a file can be written in it."""
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".thelma-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        reason = error.strerror or str(error)
        raise OutputDirectoryError(
            f"{who}: cannot write to output directory '{directory}': {reason}"
            + (
                f" ('{error.filename}')"
                if error.filename and str(error.filename) != str(directory)
                else ""
            )
        ) from error
    return directory


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success it replaces ``target`` atomically.

    On an exception the temporary file is removed and ``target`` is left as it was.
    """
    target = Path(target)
    # Not mkstemp: that file would keep mode 0600 after the rename; the writer creates this one
    # with the usual umask. The name is unique per process and call.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` atomically."""
    with atomic_path(target) as temporary:
        temporary.write_text(text, encoding="utf-8")


def read_json(path: str | os.PathLike):
    """The JSON value in ``path``; a name ending in ``.gz`` is read through gzip (the long
    force and probe series of the sphere runs are kept so in ``benchmarks/data``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as stream:
        return json.load(stream)

"""Checkpoints: the compute state, the step and what the run was, to continue bit for bit.

A checkpoint is a directory holding ``state.npz`` (``engine.state()``, NumPy arrays; in a
distributed run one ``rank_<r>.npz`` per rank, of its owned nodes; with them the arrays results
plug-ins keep, such as the running sums of ``statistics``) and ``meta.json``
(:mod:`thelma_py.checkpoint_meta`). It restarts only on the same configuration, geometry and,
when distributed, decomposition.

It is written into a temporary directory next to its target and renamed into place, so a
checkpoint directory is either complete or absent. A :class:`CheckpointStore` (what the
``checkpoint`` results plug-in writes through) writes ``<root>/step_<n>/`` and then replaces
``<root>/latest`` (a one-line text file, atomically) to point at it; older checkpoints beyond
``keep`` are removed afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

from thelma_py.checkpoint_meta import (
    CheckpointError,
    CorruptCheckpoint,
    check_belongs,
    file_hash,
    geometry_hash,
    meta_record,
    parse_meta,
    per_rank,
    restore_results,
    results_arrays,
    split_state,
)
from thelma_py.files import atomic_write_text, ensure_writable_dir
from thelma_py.results import as_results

if TYPE_CHECKING:
    from thelma_py.solver import Solver

__all__ = ["CheckpointError", "CheckpointStore", "CorruptCheckpoint", "check_keep",
           "load_checkpoint", "read_checkpoint", "read_meta", "read_state", "resolve",
           "write_checkpoint"]


class CheckpointFallback(UserWarning):
    """The latest checkpoint was damaged: an older intact one was loaded instead."""


def _temporary_for(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _save_state(solver: Solver, file: Path) -> str:
    """Write ``engine.state()`` and the results plug-ins' arrays to ``file`` (.npz); returns
    its SHA-256."""
    state = {name: np.asarray(array) for name, array in solver.engine.state().items()}
    np.savez(file, **state, **results_arrays(solver))
    return file_hash(file)


def _write_meta(directory: Path, meta: dict) -> None:
    (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _place(temporary: Path, target: Path) -> None:
    """Move the complete ``temporary`` directory to ``target``; an old one stays complete until
    the new one is in place."""
    if target.exists():
        old = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.old")
        os.replace(target, old)
        os.replace(temporary, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(temporary, target)


def _write_error(target: Path, error: OSError) -> OSError:
    return OSError(error.errno, f"checkpoint: could not write '{target}': "
                   f"{error.strerror or error}; nothing was left behind")


def write_checkpoint(solver: Solver, target: Path) -> Path:
    """Write the solver's checkpoint as directory ``target``, atomically; returns ``target``.

    An existing ``target`` is replaced only once the new checkpoint is complete. On any error
    (a full disk, say) nothing is left behind and the error names the path. In a distributed
    run every rank calls this (see :func:`_write_distributed`).
    """
    target = Path(target)
    if solver.rank_box is not None:
        return _write_distributed(solver, target)
    ensure_writable_dir(target.parent, who="checkpoint")
    temporary = _temporary_for(target)
    try:
        temporary.mkdir()
        state_hash = _save_state(solver, temporary / "state.npz")
        _write_meta(temporary, meta_record(solver, state_hash, geometry_hash(solver.tags)))
        _place(temporary, target)
    except OSError as error:
        raise _write_error(target, error) from error
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return target


def _collective(comm, attempt) -> object:
    """Run ``attempt()`` on every rank of ``comm`` (or here only, for None); every rank raises
    the first failing rank's error, so that all ranks take the same path afterwards."""
    if comm is None:
        return attempt()
    try:
        value, error = attempt(), None
    except (OSError, CheckpointError) as caught:
        value, error = None, caught
    errors = [e for e in comm.allgather(error) if e is not None]
    if errors:
        raise errors[0]
    return value


def _write_distributed(solver: Solver, target: Path) -> Path:
    """Every rank writes ``rank_<r>.npz`` into one temporary directory; after a barrier, rank
    0 adds meta.json (decomposition, per-rank state and geometry hashes) and renames it."""
    comm = solver.rank_box.cart
    lead = comm.rank == 0
    temporary = Path(comm.bcast(str(_temporary_for(target)) if lead else None, root=0))
    try:
        def prepare():
            ensure_writable_dir(target.parent, who="checkpoint")
            if lead:
                temporary.mkdir()

        _collective(comm, prepare)
        local = _collective(comm, lambda: (
            _save_state(solver, temporary / f"rank_{comm.rank}.npz"), geometry_hash(solver.tags)))
        hashes = comm.gather(local, root=0)

        def finish():
            if lead:
                _write_meta(temporary, meta_record(solver, [h[0] for h in hashes],
                                                   [h[1] for h in hashes]))
                _place(temporary, target)

        _collective(comm, finish)
    except OSError as error:
        raise _write_error(target, error) from error
    finally:
        if lead and temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return target


def resolve(path: Path) -> Path:
    """The checkpoint directory that ``path`` names: itself, or the latest under a store root."""
    path = Path(path)
    if (path / "meta.json").is_file():
        return path
    latest = path / "latest"
    if latest.is_file():
        name = latest.read_text(encoding="utf-8").strip()
        if not name or "/" in name or not (path / name / "meta.json").is_file():
            raise CheckpointError(f"'{latest}' points at {name!r}, which is not a checkpoint "
                                  f"directory in '{path}'")
        return path / name
    if not path.exists():
        raise CheckpointError(f"checkpoint '{path}' does not exist")
    raise CheckpointError(f"'{path}' is not a checkpoint: it holds neither meta.json nor a "
                          "'latest' file (give the directory a checkpoint plug-in wrote)")


def read_meta(path: Path) -> tuple[Path, dict]:
    """(directory, meta) of the checkpoint ``path`` names, meta checked for completeness."""
    directory = resolve(path)
    return directory, parse_meta(directory)


def read_state(directory: Path, meta: dict, rank: int | None = None) -> dict[str, np.ndarray]:
    """The state arrays of a checkpoint (of ``rank`` in a distributed one), checksum checked."""
    name = "state.npz" if rank is None else f"rank_{rank}.npz"
    state_file = directory / name
    if not state_file.is_file() or file_hash(state_file) != per_rank(meta, "state_sha256", rank):
        raise CorruptCheckpoint(f"checkpoint '{directory}' is corrupt: {name} is missing or "
                                "does not match the checksum in meta.json")
    try:
        with np.load(state_file, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise CorruptCheckpoint(f"checkpoint '{directory}' is corrupt: {name} cannot be read "
                                f"({error})") from None


def read_checkpoint(path: Path, rank: int | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, state) of a checkpoint, checked for completeness and integrity; ``rank`` picks
    one rank's state of a distributed checkpoint."""
    directory, meta = read_meta(path)
    return meta, read_state(directory, meta, rank)


def candidates(path: Path) -> list[Path]:
    """The checkpoints ``path`` names, to try in order: a checkpoint directory itself; for a
    store root the one ``latest`` points at, then its other ``step_*`` directories, newest
    first (they stand in when the latest is damaged)."""
    path = Path(path)
    latest = path / "latest"
    if (path / "meta.json").is_file() or not latest.is_file():
        return [path]
    name = latest.read_text(encoding="utf-8").strip()
    first = [path / name] if name and "/" not in name else []
    others = sorted((p for p in path.glob("step_*") if p.is_dir() and p not in first),
                    reverse=True)
    return first + others


def load_checkpoint(solver: Solver, path: Path) -> int:
    """Load a checkpoint into ``solver`` after checking it belongs to this configuration and,
    for a distributed run, to this decomposition (every rank loads its own state).

    Given a store root whose latest checkpoint is damaged, the newest intact one is loaded
    instead, with a warning naming both."""
    box = solver.rank_box
    comm, rank = (box.cart, box.cart.rank) if box is not None else (None, None)
    tried = candidates(path)
    store = len(tried) > 1  # a store root with older checkpoints to fall back on
    damaged: list[CorruptCheckpoint] = []
    for directory in tried:
        def check(directory=directory):
            found = directory if store else resolve(directory)
            meta = parse_meta(found)
            check_belongs(meta, solver, found, rank)
            return meta, read_state(found, meta, rank)

        try:
            meta, state = _collective(comm, check)
        except CorruptCheckpoint as error:
            if not store:
                raise
            damaged.append(error)
            continue
        break
    else:
        raise CorruptCheckpoint(f"no intact checkpoint in '{path}': "
                                + "; ".join(map(str, damaged)))
    if damaged:
        warnings.warn(f"{'; '.join(map(str, damaged))}; resuming from '{directory}' (step "
                      f"{meta['step']}), the newest intact checkpoint in '{path}'",
                      CheckpointFallback, stacklevel=3)
    engine_state, arrays = split_state(state)
    solver.engine.load_state(engine_state)
    solver.time_step = int(meta["step"])
    restore_results(solver, meta.get("results", []), arrays)
    return solver.time_step


def check_keep(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"keep must be a positive number of checkpoints to retain, got {value!r}")


@attrs.define
class CheckpointStore:
    """Numbered checkpoints under ``root`` with a ``latest`` pointer, the ``keep`` newest kept."""

    root: Path = attrs.field(converter=Path)
    keep: int = attrs.field(default=2, validator=check_keep)

    def prepare(self) -> None:
        """Create the root directory and check that it is writable."""
        ensure_writable_dir(self.root, who="checkpoint results")

    def write(self, solver: Solver, exclude: object = None) -> Path:
        """Write the checkpoint of the current step and point ``latest`` at it. Queued output
        of the other results plug-ins (all but ``exclude``) is completed first, so that the
        state they save is final."""
        for result in solver.results:
            if result is not exclude:
                as_results(result).flush()
        target = write_checkpoint(solver, self.root / f"step_{int(solver.time_step):010d}")
        if solver.lead:  # every rank's part is in place by now
            atomic_write_text(self.root / "latest", target.name + "\n")
            with contextlib.suppress(OSError):
                self._prune(target.name)
        return target

    def _prune(self, newest: str) -> None:
        """Remove checkpoints older than the ``keep`` newest up to ``newest``."""
        steps = sorted(p for p in self.root.glob("step_*") if p.is_dir() and p.name <= newest)
        for old in steps[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)

"""Checkpoints: the compute state, the step and what the run was, to continue bit for bit.

A checkpoint is a directory holding ``state.npz`` (``engine.state()``, NumPy arrays; in a
distributed run one ``rank_<r>.npz`` per rank, of its owned nodes) and ``meta.json``: format
version, step, the configuration record (lattice, shape, scheme, compute parameters,
precision), the SHA-256 of the geometry (node tags and boundary table), the SHA-256 of
``state.npz``, and the saved state of results plug-ins that have one (e.g. the VTK index).
A distributed checkpoint also records the decomposition (dims, ranks) and holds the two
hashes per rank, in rank order; it restarts only on the same decomposition.

It is written into a temporary directory next to its target and renamed into place, so a
checkpoint directory is either complete or absent. The ``checkpoint`` plug-in writes
``<path>/step_<n>/`` and then replaces ``<path>/latest`` (a one-line text file, atomically)
to point at it; older checkpoints beyond ``keep`` are removed afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
import zipfile
from pathlib import Path

import attrs
import numpy as np

from thelma_py.modules.results.files import atomic_write_text, ensure_writable_dir
from thelma_py.registry import register
from thelma_py.schedule import Every, as_schedule

FORMAT = "thelma-checkpoint"
VERSION = 1
IGNORED_PARAMETERS = ("cuda_options",)
"""Compute parameters that do not change results (GPU tuning): not compared on resume."""


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupt, or from another configuration; the message says which."""


def _json_ready(value):
    """Plain JSON types (tuples become lists, numpy scalars numbers, anything else its repr)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item")
                                 else repr(v)))


def geometry_hash(tags) -> str:
    """SHA-256 of the node tag words and the boundary table (values, dtypes and shapes)."""
    digest = hashlib.sha256()
    for array in (np.ascontiguousarray(tags.tags), np.ascontiguousarray(tags.bc_table)):
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def config_record(solver) -> dict:
    """What must match for a checkpoint to continue this run (JSON types)."""
    compute = solver.compute
    params = attrs.asdict(compute) if attrs.has(type(compute)) else {"repr": repr(compute)}
    for name in IGNORED_PARAMETERS:
        params.pop(name, None)
    return _json_ready({
        "lattice": solver.lattice.name,
        "shape": list(solver.shape),
        "scheme": getattr(compute, "plugin_name", type(compute).__name__),
        "precision": solver.dtype.name,
        "compute": params,
    })


def _flatten(record: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def differences(saved: dict, current: dict) -> list[str]:
    """Lines 'KEY differs: checkpoint A, run B' for every entry that does not match."""
    old, new = _flatten(saved), _flatten(current)
    lines = []
    for key in sorted(set(old) | set(new), key=lambda k: (k.count("."), k)):
        a, b = old.get(key, "(absent)"), new.get(key, "(absent)")
        if a != b:
            label = key.removeprefix("compute.")
            lines.append(f"{label} differs: checkpoint {a}, run {b}")
    return lines


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _results_state(solver) -> list[dict]:
    saved = []
    for result in solver.results:
        if hasattr(result, "state_dict"):
            saved.append({"plugin": getattr(result, "plugin_name", type(result).__name__),
                          "state": _json_ready(result.state_dict())})
    return saved


def _temporary_for(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _meta(solver, state_sha256, geometry_sha256) -> dict:
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "step": int(solver.time_step),
        "config": config_record(solver),
        "geometry_sha256": geometry_sha256,
        "state_sha256": state_sha256,
        "results": _results_state(solver),
    }
    return meta | _layout_record(solver)


def _layout_record(solver) -> dict:
    """{'decomposition': {'dims', 'ranks'}} for a distributed run, {} for one domain."""
    box = getattr(solver, "rank_box", None)
    if box is None:
        return {}
    return {"decomposition": {"dims": list(box.decomposition.dims), "ranks": box.cart.size}}


def _save_state(solver, file: Path) -> str:
    """Write ``engine.state()`` to ``file`` (.npz); returns its SHA-256."""
    state = {name: np.asarray(array) for name, array in solver.engine.state().items()}
    np.savez(file, **state)
    return _file_hash(file)


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


def write_checkpoint(solver, target: Path) -> Path:
    """Write the solver's checkpoint as directory ``target``, atomically; returns ``target``.

    An existing ``target`` is replaced only once the new checkpoint is complete. On any error
    (a full disk, say) nothing is left behind and the error names the path. In a distributed
    run every rank calls this (see :func:`_write_distributed`).
    """
    target = Path(target)
    if getattr(solver, "rank_box", None) is not None:
        return _write_distributed(solver, target)
    ensure_writable_dir(target.parent, who="checkpoint")
    temporary = _temporary_for(target)
    try:
        temporary.mkdir()
        state_hash = _save_state(solver, temporary / "state.npz")
        meta = _meta(solver, state_hash, geometry_hash(solver.tags))
        (temporary / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
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


def _write_distributed(solver, target: Path) -> Path:
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
                meta = _meta(solver, [h[0] for h in hashes], [h[1] for h in hashes])
                (temporary / "meta.json").write_text(json.dumps(meta, indent=2) + "\n",
                                                     encoding="utf-8")
                _place(temporary, target)

        _collective(comm, finish)
    except OSError as error:
        raise _write_error(target, error) from error
    finally:
        if lead and temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return target


def _layout(meta: dict) -> str:
    """'decomposition 2x1 (2 ranks)' or 'one domain' for a meta record."""
    decomposition = meta.get("decomposition")
    if not decomposition:
        return "one domain"
    return (f"decomposition {'x'.join(map(str, decomposition['dims']))} "
            f"({decomposition['ranks']} ranks)")


def check_layout(meta: dict, solver, path) -> None:
    """Refuse a checkpoint written on another decomposition or rank count, naming both."""
    current = _layout_record(solver)
    if _layout(meta) != _layout(current):
        raise CheckpointError(
            f"checkpoint '{path}' was written on {_layout(meta)}; this run is on "
            f"{_layout(current)}. A checkpoint restarts only on the decomposition that wrote "
            "it (same --decomp and mpiexec -n)")


def resolve(path: Path) -> Path:
    """The checkpoint directory that ``path`` names: itself, or the latest under a plug-in root."""
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
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"checkpoint '{directory}' is corrupt: meta.json is unreadable "
                              f"({error})") from None
    missing = [k for k in ("format", "version", "step", "config", "geometry_sha256",
                           "state_sha256") if k not in meta] if isinstance(meta, dict) else ["all"]
    if missing or meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint '{directory}' is corrupt: meta.json lacks "
                              f"{missing or 'the format tag'}")
    if meta["version"] != VERSION:
        raise CheckpointError(f"checkpoint '{directory}' has format version {meta['version']}; "
                              f"this thelma-py reads version {VERSION}")
    return directory, meta


def _per_rank(meta: dict, key: str, rank: int | None):
    """A meta entry of this rank: distributed checkpoints hold one per rank, in rank order."""
    return meta[key] if rank is None else meta[key][rank]


def read_state(directory: Path, meta: dict, rank: int | None = None) -> dict[str, np.ndarray]:
    """The state arrays of a checkpoint (of ``rank`` in a distributed one), checksum checked."""
    name = "state.npz" if rank is None else f"rank_{rank}.npz"
    state_file = directory / name
    if not state_file.is_file() or _file_hash(state_file) != _per_rank(meta, "state_sha256", rank):
        raise CheckpointError(f"checkpoint '{directory}' is corrupt: {name} is missing or "
                              "does not match the checksum in meta.json")
    try:
        with np.load(state_file, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"checkpoint '{directory}' is corrupt: {name} cannot be read "
                              f"({error})") from None


def read_checkpoint(path: Path, rank: int | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, state) of a checkpoint, checked for completeness and integrity; ``rank`` picks
    one rank's state of a distributed checkpoint."""
    directory, meta = read_meta(path)
    return meta, read_state(directory, meta, rank)


def load_checkpoint(solver, path: Path) -> int:
    """Load a checkpoint into ``solver`` after checking it belongs to this configuration and,
    for a distributed run, to this decomposition (every rank loads its own state)."""
    box = getattr(solver, "rank_box", None)
    comm, rank = (box.cart, box.cart.rank) if box is not None else (None, None)

    def check():
        directory, meta = read_meta(path)
        check_layout(meta, solver, path)
        diff = differences(meta["config"], config_record(solver))
        if diff:
            raise CheckpointError(f"checkpoint '{path}' is from another configuration: "
                                  + "; ".join(diff))
        if _per_rank(meta, "geometry_sha256", rank) != geometry_hash(solver.tags):
            raise CheckpointError(f"checkpoint '{path}' is from another geometry (node tags or "
                                  "boundary values differ from this run's)")
        return meta, read_state(directory, meta, rank)

    meta, state = _collective(comm, check)
    solver.engine.load_state(state)
    solver.time_step = int(meta["step"])
    saved = list(meta.get("results", []))
    for result in solver.results:
        if not hasattr(result, "load_state_dict"):
            continue
        name = getattr(result, "plugin_name", type(result).__name__)
        match = next((entry for entry in saved if entry.get("plugin") == name), None)
        if match is not None:
            saved.remove(match)
            result.load_state_dict(match["state"])
    return solver.time_step


def _check_keep(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"keep must be a positive number of checkpoints to retain, got {value!r}")


@register("results", "checkpoint")
@attrs.define(kw_only=True)
class Checkpoint:
    """Checkpoint every N steps into <path>/step_<n>/ (latest in <path>/latest); also on
    SIGINT/SIGTERM during a run. Resume with ``thelma run --resume <path>``.

    In a distributed run each rank writes its own ``rank_<r>.npz`` into the same directory;
    it restarts on the same decomposition only."""

    supports_distributed = True

    path: Path = attrs.field(converter=Path)
    """Root directory of the checkpoints."""
    schedule: Every = attrs.field(
        alias="every",
        default=10_000,
        converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to write: every N steps (an int) or an :class:`~thelma_py.schedule.Every`."""
    keep: int = attrs.field(default=2, validator=_check_keep)
    """How many of the newest checkpoints to retain."""
    after_others: bool = attrs.field(default=True, init=False, repr=False)
    """Called after the other results of the same step (see Solver._ordered_results)."""
    written: list[Path] = attrs.field(factory=list, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.schedule.at_start:  # step 0 holds nothing a rerun would not reproduce
            self.schedule = Every(self.schedule.steps, at_start=False)

    def start(self, solver) -> None:
        ensure_writable_dir(self.path, who="checkpoint results")

    def __call__(self, solver) -> None:
        self.write_now(solver)

    def write_now(self, solver) -> Path:
        """Write the checkpoint of the current step and point ``latest`` at it."""
        for result in solver.results:  # queued output first, so its state is final
            if result is not self and hasattr(result, "flush"):
                result.flush()
        target = write_checkpoint(solver, self.path / f"step_{int(solver.time_step):010d}")
        box = getattr(solver, "rank_box", None)
        if box is None or box.cart.rank == 0:  # every rank's part is in place by now
            atomic_write_text(self.path / "latest", target.name + "\n")
            with contextlib.suppress(OSError):
                self._prune(target.name)
        self.written = [p for p in self.written if p != target] + [target]
        return target

    def _prune(self, newest: str) -> None:
        """Remove checkpoints older than the ``keep`` newest up to ``newest``."""
        steps = sorted(p for p in self.path.glob("step_*") if p.is_dir() and p.name <= newest)
        for old in steps[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)

"""What a checkpoint records about its run: ``meta.json``, its hashes and its checks.

``meta.json`` holds the format version, the step, the configuration record (lattice, shape,
scheme, compute parameters, precision), the SHA-256 of the geometry (node tags and boundary
table) and of the state file, and the saved state of results plug-ins that have one (e.g. the
VTK index). A distributed checkpoint also records the decomposition (dims, ranks) and holds the
two hashes per rank, in rank order. :mod:`thelma_py.checkpoints` writes and reads the files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

from thelma_py.nodes import NodeTags
from thelma_py.registry import plugin_name
from thelma_py.results import as_results

if TYPE_CHECKING:
    from thelma_py.solver import Solver

FORMAT = "thelma-checkpoint"
VERSION = 1
IGNORED_PARAMETERS = ("cuda_options",)
"""Compute parameters that do not change results (GPU tuning): not compared on resume."""
REQUIRED = ("format", "version", "step", "config", "geometry_sha256", "state_sha256")


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupt, or from another configuration; the message says which."""


class CorruptCheckpoint(CheckpointError):
    """A checkpoint is damaged (unreadable or incomplete meta.json, state failing its checksum):
    an older intact one of the same store can take its place."""


def json_ready(value):
    """Plain JSON types (tuples become lists, numpy scalars numbers, anything else its repr)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item")
                                 else repr(v)))


def geometry_hash(tags: NodeTags) -> str:
    """SHA-256 of the node tag words and the boundary table (values, dtypes and shapes)."""
    digest = hashlib.sha256()
    for array in (np.ascontiguousarray(tags.tags), np.ascontiguousarray(tags.bc_table)):
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_record(solver: Solver) -> dict:
    """What must match for a checkpoint to continue this run (JSON types)."""
    compute = solver.compute
    params = attrs.asdict(compute) if attrs.has(type(compute)) else {"repr": repr(compute)}
    for name in IGNORED_PARAMETERS:
        params.pop(name, None)
    return json_ready({
        "lattice": solver.lattice.name,
        "shape": list(solver.shape),
        "scheme": plugin_name(compute),
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


def layout_record(solver: Solver) -> dict:
    """{'decomposition': {'dims', 'ranks'}} for a distributed run, {} for one domain."""
    box = solver.rank_box
    if box is None:
        return {}
    return {"decomposition": {"dims": list(box.decomposition.dims), "ranks": box.cart.size}}


def results_state(solver: Solver) -> list[dict]:
    """The saved state of every results plug-in that has one, keyed by its name."""
    saved = []
    for result in map(as_results, solver.results):
        state = result.state_dict()
        if state is not None:
            saved.append({"plugin": result.label, "state": json_ready(state)})
    return saved


RESULTS_ARRAYS = "results."
"""Prefix of the results plug-ins' arrays in a checkpoint's state file:
``results.<label>.<k>.<name>`` for the k-th plug-in of that label."""


def _occurrences(solver: Solver) -> list[tuple[object, str]]:
    """(plug-in, '<label>.<k>') of every results plug-in, k counting those of one label."""
    seen: dict[str, int] = {}
    out = []
    for result in map(as_results, solver.results):
        k = seen.get(result.label, 0)
        seen[result.label] = k + 1
        out.append((result, f"{result.label}.{k}"))
    return out


def results_arrays(solver: Solver) -> dict[str, np.ndarray]:
    """The arrays of every results plug-in that keeps some, keyed for the state file."""
    return {f"{RESULTS_ARRAYS}{key}.{name}": np.asarray(value)
            for result, key in _occurrences(solver)
            for name, value in result.state_arrays().items()}


def split_state(state: dict[str, np.ndarray]) -> tuple[dict, dict[str, dict]]:
    """(the engine's arrays, {'<label>.<k>': {name: array}}) of a checkpoint's state file."""
    engine, results = {}, {}
    for key, value in state.items():
        if key.startswith(RESULTS_ARRAYS):
            label, k, name = key[len(RESULTS_ARRAYS):].split(".", 2)
            results.setdefault(f"{label}.{k}", {})[name] = value
        else:
            engine[key] = value
    return engine, results


def restore_results(solver: Solver, saved: list[dict],
                    arrays: dict[str, dict] | None = None) -> None:
    """Give each results plug-in the saved state of its name (each entry used once), then the
    arrays it kept (:func:`results_arrays`), if any."""
    saved = list(saved)
    for result, key in _occurrences(solver):
        match = next((entry for entry in saved if entry.get("plugin") == result.label), None)
        if match is not None:
            saved.remove(match)
            result.load_state_dict(match["state"])
        if arrays and key in arrays:
            result.load_state_arrays(solver, arrays[key])


def meta_record(solver: Solver, state_sha256, geometry_sha256) -> dict:
    """The ``meta.json`` of the solver's current step (hashes per rank when distributed)."""
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "step": int(solver.time_step),
        "config": config_record(solver),
        "geometry_sha256": geometry_sha256,
        "state_sha256": state_sha256,
        "results": results_state(solver),
    }
    return meta | layout_record(solver)


def _layout(meta: dict) -> str:
    """'decomposition 2x1 (2 ranks)' or 'one domain' for a meta record."""
    decomposition = meta.get("decomposition")
    if not decomposition:
        return "one domain"
    return (f"decomposition {'x'.join(map(str, decomposition['dims']))} "
            f"({decomposition['ranks']} ranks)")


def check_layout(meta: dict, solver: Solver, path) -> None:
    """Refuse a checkpoint written on another decomposition or rank count, naming both."""
    current = layout_record(solver)
    if _layout(meta) != _layout(current):
        raise CheckpointError(
            f"checkpoint '{path}' was written on {_layout(meta)}; this run is on "
            f"{_layout(current)}. A checkpoint restarts only on the decomposition that wrote "
            "it (same --decomp and mpiexec -n)")


def per_rank(meta: dict, key: str, rank: int | None):
    """A meta entry of this rank: distributed checkpoints hold one per rank, in rank order."""
    return meta[key] if rank is None else meta[key][rank]


def check_belongs(meta: dict, solver: Solver, path, rank: int | None) -> None:
    """Refuse a checkpoint of another decomposition, configuration or geometry."""
    check_layout(meta, solver, path)
    diff = differences(meta["config"], config_record(solver))
    if diff:
        raise CheckpointError(f"checkpoint '{path}' is from another configuration: "
                              + "; ".join(diff))
    if per_rank(meta, "geometry_sha256", rank) != geometry_hash(solver.tags):
        raise CheckpointError(f"checkpoint '{path}' is from another geometry (node tags or "
                              "boundary values differ from this run's)")


def parse_meta(directory: Path) -> dict:
    """``meta.json`` of a checkpoint directory, checked for completeness and version."""
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptCheckpoint(f"checkpoint '{directory}' is corrupt: meta.json is unreadable "
                                f"({error})") from None
    missing = [k for k in REQUIRED if k not in meta] if isinstance(meta, dict) else ["all"]
    if missing or meta.get("format") != FORMAT:
        raise CorruptCheckpoint(f"checkpoint '{directory}' is corrupt: meta.json lacks "
                                f"{missing or 'the format tag'}")
    if meta["version"] != VERSION:
        raise CheckpointError(f"checkpoint '{directory}' has format version {meta['version']}; "
                              f"this thelma-py reads version {VERSION}")
    return meta

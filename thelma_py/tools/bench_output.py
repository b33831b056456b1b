"""``thelma bench --output-every N``: what writing VTK files every N steps costs a GPU run.

The same lidded cavity runs twice through a :class:`~thelma_py.solver.Solver`: once without
results plug-ins and once with a :class:`~thelma_py.modules.results.vtk.VtkWriter` every N
steps (host copy on its own stream, files written by a background thread). The run with output
is timed until its last file is on disk, so a writer that cannot keep pace shows in full.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from thelma_py import registry
from thelma_py.solver import compose

WARM_STEPS = 64


def write_speed(directory: Path, nbytes: int = 256 << 20) -> float:
    """Bytes/s of one large write (with fsync) into ``directory``: what output can reach there."""
    data = memoryview(bytearray(nbytes))
    target = directory / ".thelma-write-test"
    start = time.perf_counter()
    with open(target, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    seconds = time.perf_counter() - start
    target.unlink()
    return nbytes / seconds


def _timed_run(solver, steps: int, writer=None) -> float:
    solver.run(WARM_STEPS)
    if writer is not None:
        writer.flush()
    solver.backend.synchronize()
    start = time.perf_counter()
    solver.run(steps)
    if writer is not None:
        writer.flush()
    solver.backend.synchronize()
    return time.perf_counter() - start


def output_cost(size: int, every: int, steps: int, compression: str = "zlib",
                fields: tuple[str, ...] = ("rho", "u", "kind"),
                directory: str | Path | None = None, device: str = "cuda") -> dict:
    """MLUPS of a D3Q19 BGK fp32 cavity of ``size``³ with and without VTK every ``every``
    steps; files go to a temporary directory (removed afterwards) unless ``directory``."""
    from thelma_py.modules.results.vtk import VtkWriter
    from thelma_py.tools.bench_cases import geometry_for

    geometry = geometry_for("cavity", size, 3)
    compute = registry.create("compute", "lbm", nu=0.02)
    nodes = size ** 3

    def solver(results):
        return compose("D3Q19", geometry, compute, results=results, device=device,
                       precision="float32", check_every=0)

    plain = _timed_run(solver([]), steps)
    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="thelma-output-"))
    try:
        disk = write_speed(root)
        writer = VtkWriter(path=root, every=every, fields=fields, compression=compression)
        with_output = _timed_run(solver([writer]), steps, writer)
        files = sorted(root.glob("*.vti"))
        file_bytes = files[-1].stat().st_size if files else 0
    finally:
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)
    mlups_plain = nodes * steps / plain / 1e6
    mlups_output = nodes * steps / with_output / 1e6
    return {"size": size, "every": every, "steps": steps, "compression": compression,
            "fields": list(fields), "files": steps // every, "file_bytes": file_bytes,
            "disk_write_GBs": disk / 1e9,
            "mlups_plain": mlups_plain, "mlups_with_output": mlups_output,
            "cost": 1.0 - mlups_output / mlups_plain}


def output_lines(payload: dict) -> list[str]:
    """Markdown lines for the output-cost records of a bench JSON file (none if it has none)."""
    records = payload.get("output", [])
    if not records:
        return []
    lines = ["", "VTK output every N steps (D3Q19 BGK fp32 cavity; host copy on its own stream, "
             "files written by a background thread; timed until the last file is written):", "",
             "| size | every | fields | compression | file MB | disk GB/s | MLUPS without | "
             "MLUPS with | cost |", "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in records:
        lines.append(f"| {r['size']}³ | {r['every']} | {','.join(r['fields'])} | "
                     f"{r['compression']} | {r['file_bytes'] / 1e6:.0f} | "
                     f"{r.get('disk_write_GBs', float('nan')):.1f} | "
                     f"{r['mlups_plain']:.0f} | {r['mlups_with_output']:.0f} | "
                     f"{r['cost']:.1%} |")
    return lines

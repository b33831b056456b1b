"""Where the time of writing one 256³ snapshot goes, on the machine it runs on (no GPU needed).

Times (1) the built-in VTK writer on host arrays shaped like a GPU snapshot (ρ, interleaved u,
kind: 285 MB raw) into the temporary directory and into /dev/shm, and (2) plain writes of the
same size from 1, 2 and 4 threads at once, without fsync (the page cache, what a writer thread
meets) and with fsync (the disk). With ``--pipeline`` (GPU) it also runs the bench cavity with
output every 100 steps three ways: without output, with the host copies only (a thread waits
for each copy and drops it) and with VTK files, and reports the time the solver's main thread
spent in results calls. Prints one JSON object::

    python3 benchmarks/output_diag.py [--size 256] [--pipeline] [--out diag.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from thelma_py.modules.results.vtk import write_vti


def snapshot(size: int) -> dict[str, np.ndarray]:
    shape = (size,) * 3
    rng = np.random.default_rng(1)
    rho = (1.0 + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    u = np.moveaxis((0.05 * rng.standard_normal((*shape, 3))).astype(np.float32), -1, 0)
    return {"rho": rho, "u": u, "kind": np.ones(shape, dtype=np.uint8)}


def vti_seconds(directory: Path, fields: dict, repeats: int = 3) -> float:
    best = float("inf")
    for k in range(repeats):
        target = directory / f"diag_{k}.vti"
        start = time.perf_counter()
        write_vti(target, fields, names=("rho", "u", "kind"), compression="none")
        best = min(best, time.perf_counter() - start)
        target.unlink()
    return best


def threaded_GBs(directory: Path, nbytes: int, threads: int, sync: bool) -> float:
    data = memoryview(bytearray(nbytes // threads))

    def one(k: int) -> None:
        with open(directory / f"diag_thread_{k}", "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())

    workers = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - start
    for k in range(threads):
        (directory / f"diag_thread_{k}").unlink()
    return nbytes / seconds / 1e9


class CopyOnly:
    """A results plug-in that takes the GPU snapshot like VtkWriter and only waits for it."""

    def __init__(self, every: int):
        from concurrent.futures import ThreadPoolExecutor

        from thelma_py.schedule import Every

        self.schedule = Every(every)
        self._pool = ThreadPoolExecutor(max_workers=2)
        self._jobs: list = []
        self.call_seconds: list[float] = []
        self.macroscopic_seconds: list[float] = []

    def __call__(self, solver) -> None:
        start = time.perf_counter()
        solver.engine.macroscopic()
        solver.backend.synchronize()
        self.macroscopic_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        pending = solver.fields_later()
        self.call_seconds.append(time.perf_counter() - start)

        def wait_and_release():
            pending()
            pending.release()

        self._jobs.append(self._pool.submit(wait_and_release))

    def flush(self) -> None:
        for job in self._jobs:
            job.result()
        self._jobs.clear()


def pipeline(size: int, every: int, steps: int, directory: Path) -> dict:
    """MLUPS and main-thread results time of the cavity without output, with copies only and
    with raw VTK files into ``directory``."""
    from thelma_py import registry
    from thelma_py.modules.results.vtk import VtkWriter
    from thelma_py.solver import compose
    from thelma_py.tools.bench_cases import geometry_for

    geometry = geometry_for("cavity", size, 3)
    out = {}
    for mode in ("plain", "copies", "files"):
        plugin = {"plain": None, "copies": CopyOnly(every),
                  "files": VtkWriter(path=directory, every=every, compression="none")}[mode]
        solver = compose("D3Q19", geometry, registry.create("compute", "lbm", nu=0.02),
                         results=[plugin] if plugin else [], device="cuda",
                         precision="float32", check_every=0)
        solver.run(64)
        if mode == "copies":
            solver.reserve_host_copies(3)
        if plugin:
            plugin.flush()
        solver.backend.synchronize()
        results_before = solver.results_seconds
        start = time.perf_counter()
        solver.run(steps)
        if plugin:
            plugin.flush()
        solver.backend.synchronize()
        seconds = time.perf_counter() - start
        out[mode] = {"mlups": size ** 3 * steps / seconds / 1e6, "seconds": seconds,
                     "results_seconds": solver.results_seconds - results_before}
        if mode == "copies":
            out[mode]["fields_later_seconds"] = plugin.call_seconds
            out[mode]["macroscopic_seconds"] = plugin.macroscopic_seconds
        for path in directory.glob("*"):
            path.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--pipeline", action="store_true")
    args = parser.parse_args()
    fields = snapshot(args.size)
    nbytes = sum(a.nbytes for a in fields.values())
    result = {"size": args.size, "snapshot_bytes": nbytes, "cpus": os.cpu_count()}
    places = {"tmp": Path(tempfile.mkdtemp(prefix="thelma-diag-"))}
    if Path("/dev/shm").is_dir():
        places["shm"] = Path(tempfile.mkdtemp(prefix="thelma-diag-", dir="/dev/shm"))
    for name, directory in places.items():
        result[f"vti_seconds_{name}"] = vti_seconds(directory, fields)
        for threads in (1, 2, 4):
            for sync in (False, True):
                key = f"write_GBs_{name}_{threads}t_{'fsync' if sync else 'cache'}"
                result[key] = threaded_GBs(directory, nbytes, threads, sync)
        if args.pipeline and name == "shm":
            result["pipeline_shm"] = pipeline(args.size, 100, 2000, directory)
        directory.rmdir()
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

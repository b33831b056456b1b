"""Where the time of writing one 256³ snapshot goes, on the machine it runs on (no GPU needed).

Times (1) the built-in VTK writer on host arrays shaped like a GPU snapshot (ρ, interleaved u,
kind: 285 MB raw) into the temporary directory and into /dev/shm, and (2) plain writes of the
same size from 1, 2 and 4 threads at once, without fsync (the page cache, what a writer thread
meets) and with fsync (the disk). Prints one JSON object::

    python3 benchmarks/output_diag.py [--size 256] [--out diag.json]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--out", type=Path)
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
        directory.rmdir()
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

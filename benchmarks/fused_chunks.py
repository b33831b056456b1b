"""Single-step LW-ACM: MLUPS against the number of planes a block marches through (GPU only).

The engine picks its chunk from the domain and the SM count (:func:`fused_chunk`); this sweep
shows whether that pick is the fastest::

    python3 benchmarks/fused_chunks.py --size 256 --case cavity --chunks 8,16,32,64,128
"""

from __future__ import annotations

import argparse
import json

from thelma_py.backend import select_backend
from thelma_py.bench import BenchConfig, build_engine, time_engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--case", default="cavity")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--chunks", default="8,16,32,64,128")
    parser.add_argument("--out")
    args = parser.parse_args()
    backend = select_backend("gpu")
    config = BenchConfig(compute="lwacm-fused", size=args.size, case=args.case,
                         precision=args.precision)
    engine, nodes = build_engine(config, backend)
    picked = engine.chunk
    rows = []
    for chunk in [int(c) for c in args.chunks.split(",")]:
        engine.chunk = chunk
        engine._graphs.clear()
        timing = time_engine(backend.xp, engine, nodes)
        rows.append({"chunk": chunk, "picked": chunk == picked, "mlups": timing["mlups"]})
        print(f"chunk {chunk:4d}{' (picked)' if chunk == picked else '          '} "
              f"{timing['mlups']:9.0f} MLUPS", flush=True)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"size": args.size, "case": args.case, "precision": args.precision,
                       "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()

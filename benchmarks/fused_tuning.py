"""Single-step LW-ACM: MLUPS against the block's rows and the planes a block marches through
(GPU only).

The engine picks 32 x 8 threads (fp32) and a chunk from the domain and the SM count
(:func:`fused_chunk`); this sweep shows whether that pick is the fastest::

    python3 benchmarks/fused_tuning.py --size 256 --cases cavity,periodic --rows 4,8,12 \\
        --chunks 4,8,16,32 --out tuning.json
"""

from __future__ import annotations

import argparse
import itertools
import json

from thelma_py.backend import select_backend
from thelma_py.tools.bench import BenchConfig, build_engine, time_engine


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--cases", default="cavity,periodic")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--rows", type=_ints, default=[4, 8, 12])
    parser.add_argument("--chunks", type=_ints, default=[4, 8, 16, 32])
    parser.add_argument("--store", default="fp32", help="record storage: fp32, fp16s, fp16c")
    parser.add_argument("--rounding", default="nearest", help="16-bit: nearest, stochastic")
    parser.add_argument("--staging", default="registers", help="16-bit: registers, async")
    parser.add_argument("--min-blocks", type=_ints, default=[0],
                        help="__launch_bounds__ minimum blocks per SM to sweep (0: none)")
    parser.add_argument("--out")
    args = parser.parse_args()
    backend = select_backend("gpu")
    rows_out = []
    for case in args.cases.split(","):
        config = BenchConfig(compute="lwacm-fused", size=args.size, case=case,
                             precision=args.precision, store=args.store,
                             rounding=args.rounding, staging=args.staging)
        engine, nodes = build_engine(config, backend)
        picked = (engine.rows, engine.chunk)
        for rows, min_blocks in itertools.product(args.rows, args.min_blocks):
            engine.retune(rows=rows, min_blocks=min_blocks)
            for chunk in args.chunks:
                engine.retune(chunk=chunk)
                mlups = time_engine(backend.xp, engine, nodes)["mlups"]
                mark = " (picked)" if (rows, chunk, min_blocks) == (*picked, 0) else ""
                rows_out.append({"case": case, "rows": rows, "chunk": chunk, "mlups": mlups,
                                 "min_blocks": min_blocks, "picked": bool(mark)})
                print(f"{case:9s} {args.store} {args.staging} 32x{rows:<3d} m{min_blocks} "
                      f"chunk {chunk:4d} {mlups:9.0f} MLUPS{mark}", flush=True)
        del engine
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"size": args.size, "precision": args.precision, "store": args.store,
                       "rounding": args.rounding, "staging": args.staging, "rows": rows_out},
                      handle, indent=1)


if __name__ == "__main__":
    main()

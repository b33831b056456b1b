"""Issue #19 items 3–4 on the GPU: the propagation experiment (Mawson & Revell 2014) and the
closed-box variants (wall tiles fused or launched apart), in one sweep that fits in about 5
minutes on an H100.

Propagation table: D3Q19 BGK pull and push, periodic; direct, shared and shuffle; blocks 32,
64, 128, 256; fp32 at 128³, 256³, 384³ and fp64 at 256³ (fp64 at 128³ and 384³ trimmed to fit
the time). Closed box: fp32 256³, pull (blocks 128, 256) and AA (blocks 64, 128), periodic and
cavity (lid), each with ``wall_launch`` fused and split (periodic split: the bulk kernel alone,
the price of its tile-flag check), the cavity also with ``moving_tiles`` (both launches); pull
cavity also with the shared and shuffle variants.

Each configuration starts at rest (ρ = 1, u = 0: the kernels have no data-dependent branches in
a periodic box or a cavity, so the state does not change their speed) and is timed with CUDA
events, 5 repeats of ~0.1 s, after a warm-up (``thelma_py.tools.bench.time_engine``). Results go
to ``$OUT/prop.json`` after every configuration; ``--budget`` seconds (default 290) stop the
sweep early (the plan runs by priority) and list what was skipped. Table for the docs, on any
machine::

    python3 benchmarks/prop_table.py out/prop.json
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from thelma_py.backend import select_backend
from thelma_py.tools.bench import BenchConfig, build_engine, copy_bandwidth, time_engine
from thelma_py.tools.bench_cases import environment, save

VARIANTS = ("direct", "shared", "shuffle")


def plan() -> list[tuple[str, BenchConfig]]:
    """(part, configuration) of the sweep, in the order run (closed box first: the bars)."""
    closed = [("closed", BenchConfig(streaming=s, case=c, size=256, block=b, propagation=p,
                                     wall_launch=w, moving_tiles=m))
              for s, c, b, p, w, m in
              [(s, c, b, "direct", w, False) for s, blocks in (("pull", (128, 256)),
                                                               ("aa", (64, 128)))
               for c in ("periodic", "cavity") for b in blocks for w in ("fused", "split")]
              + [(s, "cavity", b, "direct", w, True) for s, blocks in (("pull", (128, 256)),
                                                                       ("aa", (64, 128)))
                 for b in blocks for w in ("fused", "split")]
              + [("pull", "cavity", b, p, "fused", False) for b in (128, 256)
                 for p in ("shared", "shuffle")]]
    # by priority, so that the time budget cuts the least wanted: 256³ fp32, 256³ fp64, then
    # fp32 at 128³ and 384³ (fp64 at 128³ and 384³ is not planned)
    order = [("float32", 256), ("float64", 256), ("float32", 128), ("float32", 384)]
    table = [("propagation", BenchConfig(streaming=s, precision=r, size=n, block=b,
                                         propagation=p))
             for (r, n), s, p, b in itertools.product(
                 order, ("pull", "push"), VARIANTS, (32, 64, 128, 256))]
    return closed + table


def precompile(configs: list[BenchConfig], workers: int = 12) -> int:
    """Compile every configuration's kernels in parallel threads first (NVRTC leaves the
    interpreter lock; CuPy keeps the binaries in its disk cache, so the sweep then loads
    them): about 2 s per source otherwise, most of the sweep's time. Returns how many failed
    (they compile again, and report, in the sweep)."""
    import numpy as np

    from thelma_py.codegen.compile import compile_module
    from thelma_py.lattice import lattice_by_name
    from thelma_py.modules.compute.lbm.kernels import kernel_names
    from thelma_py.tools.bench import compute_params

    def one(cfg: BenchConfig) -> None:
        params = compute_params(cfg)
        source = params.kernel_source(lattice_by_name(cfg.lattice), np.dtype(cfg.precision),
                                      moving_walls=cfg.case == "cavity")  # the lid moves
        part = "bulk" if cfg.wall_launch == "split" else ""
        compile_module.__wrapped__(source).get_function(
            next(iter(kernel_names(cfg.streaming, part).values())))

    failed = 0
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(one, cfg) for cfg in configs]:
            try:
                future.result()
            except Exception as error:  # the sweep compiles it again and reports
                failed += 1
                print(f"precompile: {type(error).__name__}: {error}", file=sys.stderr)
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=Path(os.environ.get("OUT", "out")) / "prop.json")
    parser.add_argument("--budget", type=float, default=290.0,
                        help="seconds after which no new configuration starts")
    parser.add_argument("--target-seconds", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    start = time.time()
    backend = select_backend("cuda")
    cp = backend.xp
    copy_bw = copy_bandwidth(cp)
    env = environment(cp)
    print(f"device: {env['device']}  commit {env['commit']}  copy {copy_bw / 1e9:.0f} GB/s")
    records, skipped = [], []
    failed = precompile([cfg for _, cfg in plan()])
    print(f"{time.time() - start:6.0f}s compiled {len(plan())} sources ({failed} failed)",
          flush=True)
    for part, cfg in plan():
        if time.time() - start > args.budget:
            skipped.append({"part": part, **attrs.asdict(cfg)})
            continue
        try:
            engine, nodes = build_engine(cfg, backend, uniform=True)
            timing = time_engine(cp, engine, nodes, args.target_seconds, args.repeats)
            achieved = timing["mlups"] * 1e6 * engine.traffic_bytes_per_node
            record = {"part": part, **attrs.asdict(cfg), **timing,
                      "bytes_per_node": engine.traffic_bytes_per_node,
                      "fraction_of_copy": achieved / copy_bw}
            del engine
        except Exception as error:  # one failing variant must not cost the rest
            record = {"part": part, **attrs.asdict(cfg), "error": f"{type(error).__name__}: "
                                                               f"{error}"}
        cp.get_default_memory_pool().free_all_blocks()
        records.append(record)
        save(args.out, {**env, "copy_bandwidth_GBs": copy_bw / 1e9, "results": records,
                        "skipped": skipped, "partial": True})
        result = (f"{record['mlups']:8.0f} MLUPS {record['fraction_of_copy']:6.1%}"
                  if "mlups" in record else record["error"])
        print(f"{time.time() - start:6.0f}s {part:<12} {cfg.label:<58} {result}", flush=True)
    save(args.out, {**env, "copy_bandwidth_GBs": copy_bw / 1e9, "results": records,
                    "skipped": skipped})
    print(f"wrote {args.out} ({len(records)} configurations, {len(skipped)} skipped, "
          f"{time.time() - start:.0f} s)")
    sys.path.insert(0, str(Path(__file__).parent))
    from prop_table import summary  # beside this file

    print(summary(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())

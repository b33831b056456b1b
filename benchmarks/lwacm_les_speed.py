"""Single-step LW-ACM with and without Smagorinsky LES: MLUPS and the kernel's registers (GPU).

    python benchmarks/lwacm_les_speed.py [--json FILE] [--quick]

D3Q19 fp32 256³, periodic and cavity: no LES (plain, one node a thread as the engine chooses,
and 2 a thread), LES as shipped (``__launch_bounds__`` with ``LES_MIN_BLOCKS``), LES with 3
blocks per SM; 2 nodes a thread (``thread_rows``) at the caps of 4, 3 and 2 blocks of 32 x 8 and
6 of 32 x 4; 4 nodes a thread in 32 x 4 blocks, 3 and 4 per SM; then D3Q19 fp64 and D3Q27 fp32
periodic, plain against LES as shipped. Timing and records as ``thelma bench`` (median of 7
batches of ~0.25 s, the same engine builder), plus ``num_regs`` and local memory per thread as
the driver reports them. ``--quick``: plain and LES as shipped, periodic; ``--only``: one
configuration with the variants named (also 2 a thread in 32 x 4 blocks, 4, 5, 7 and 8 per
SM).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import attrs

from thelma_py.backend import select_backend
from thelma_py.tools.bench import BenchConfig, build_engine, copy_bandwidth, time_engine
from thelma_py.tools.bench_cases import environment

VARIANTS = [  # (label, les, retune keywords)
    ("plain", "none", {}),
    ("plain r2", "none", {"thread_rows": 2}),
    ("les", "smagorinsky", {}),
    ("les m3", "smagorinsky", {"min_blocks": 3}),
    ("les r2", "smagorinsky", {"thread_rows": 2}),
    ("les r2 m3", "smagorinsky", {"thread_rows": 2, "min_blocks": 3}),
    ("les r2 m2", "smagorinsky", {"thread_rows": 2, "min_blocks": 2}),
    ("les r2 rows4 m4", "smagorinsky", {"thread_rows": 2, "rows": 4, "min_blocks": 4}),
    ("les r2 rows4 m5", "smagorinsky", {"thread_rows": 2, "rows": 4, "min_blocks": 5}),
    ("les r2 rows4 m6", "smagorinsky", {"thread_rows": 2, "rows": 4, "min_blocks": 6}),
    ("les r2 rows4 m7", "smagorinsky", {"thread_rows": 2, "rows": 4, "min_blocks": 7}),
    ("les r2 rows4 m8", "smagorinsky", {"thread_rows": 2, "rows": 4, "min_blocks": 8}),
    ("les r4 rows4 m3", "smagorinsky", {"thread_rows": 4, "rows": 4, "min_blocks": 3}),
    ("les r4 rows4 m4", "smagorinsky", {"thread_rows": 4, "rows": 4, "min_blocks": 4}),
]
CONFIGS = [  # (lattice, precision, case, variant labels)
    ("D3Q19", "float32", "periodic", [v[0] for v in VARIANTS]),
    ("D3Q19", "float32", "cavity", [v[0] for v in VARIANTS]),
    ("D3Q19", "float64", "periodic", ["plain", "les"]),
    ("D3Q27", "float32", "periodic", ["plain", "les"]),
]


def kernel_resources(engine) -> dict:
    """Registers and local bytes per thread of the engine's step kernel (driver attributes)."""
    kernel = next(iter(engine.kernels.values()))
    out = {}
    for key in ("num_regs", "local_size_bytes"):
        try:
            out[key] = int(getattr(kernel, key))
        except (AttributeError, TypeError, ValueError):
            out[key] = None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="lattice:precision:case:label,label,... (one configuration "
                        "and its variants, e.g. D3Q27:float32:periodic:plain,les)")
    args = parser.parse_args(argv)
    import cupy as cp

    backend = select_backend("cuda")
    copy_bw = copy_bandwidth(cp)
    variants = {label: (les, tune) for label, les, tune in VARIANTS}
    configs = [(*CONFIGS[0][:3], ["plain", "les"])] if args.quick else CONFIGS
    if args.only:
        lattice, precision, case, labels = args.only.split(":")
        configs = [(lattice, precision, case, labels.split(","))]
    rows = []
    for lattice, precision, case, labels in configs:
        plain = None
        for label in labels:
            les, tune = variants[label]
            cfg = BenchConfig(compute="lwacm-fused", lattice=lattice, precision=precision,
                              size=args.size, case=case, les=les)
            engine, nodes = build_engine(cfg, backend)
            if tune:
                engine.retune(**tune)
            timing = time_engine(cp, engine, nodes)
            achieved = timing["mlups"] * 1e6 * engine.traffic_bytes_per_node
            row = {**attrs.asdict(cfg), "variant": label, **tune, **kernel_resources(engine),
                   **timing, "fraction_of_copy": achieved / copy_bw}
            plain = row["mlups"] if label == "plain" else plain
            row["of_plain"] = row["mlups"] / plain if plain else None
            rows.append(row)
            del engine
            cp.get_default_memory_pool().free_all_blocks()
            share = f"{row['of_plain']:6.1%} of plain" if row["of_plain"] else ""
            print(f"{lattice} {precision} {case:8} {label:12} {row['mlups']:9,.0f} MLUPS "
                  f"{row['fraction_of_copy']:5.1%} of copy  regs {row['num_regs']} "
                  f"local {row['local_size_bytes']} B  {share}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({**environment(cp), "copy_bandwidth_GBs": copy_bw / 1e9,
                                         "variants": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

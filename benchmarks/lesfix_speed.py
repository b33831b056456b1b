"""Single-step LW-ACM, records of ρ against records of ρ − 1 (``density``), with and without
Smagorinsky LES: MLUPS on the GPU (D3Q19 fp32, periodic box, 256³ by default).

    python benchmarks/lesfix_speed.py [--json FILE] [--size N]

Timing as ``thelma bench`` (its engine builder's random state near rest and ``time_engine``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from thelma_py import registry
from thelma_py.backend import select_backend
from thelma_py.lattice import lattice_by_name
from thelma_py.tools.bench import copy_bandwidth, time_engine
from thelma_py.tools.bench_cases import geometry_for

VARIANTS = [("plain", None, "absolute"), ("plain shifted", None, "shifted"),
            ("les", "smagorinsky", "absolute"), ("les shifted", "smagorinsky", "shifted")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args(argv)
    import cupy as cp

    backend = select_backend("cuda")
    lattice = lattice_by_name("D3Q19")
    geo = geometry_for("periodic", args.size, 3, 0.3)
    tags = geo.evaluate(lattice)
    copy_bw = copy_bandwidth(cp)
    rows, first = [], None
    for label, les, density in VARIANTS:
        params = registry.create("compute", "lwacm-fused", nu=0.02, les=les, density=density)
        engine = params.create(lattice, tags, backend, np.dtype(np.float32))
        rng = np.random.default_rng(1)
        shape = tags.tags.shape
        engine.initialize(backend.to_device((1.0 + 0.01 * rng.standard_normal(shape))
                                            .astype(np.float32)),
                          backend.to_device((0.02 * rng.standard_normal((3, *shape)))
                                            .astype(np.float32)))
        timing = time_engine(cp, engine, geo.node_count)
        kernel = next(iter(engine.kernels.values()))
        row = {"variant": label, "les": les, "density": density, "size": args.size,
               "num_regs": int(getattr(kernel, "num_regs", -1)), **timing,
               "fraction_of_copy": timing["mlups"] * 1e6 * engine.traffic_bytes_per_node
               / copy_bw}
        first = first or row["mlups"]
        rows.append(row)
        print(f"D3Q19 fp32 {args.size}^3 periodic {label:14} {row['mlups']:9,.0f} MLUPS "
              f"{row['fraction_of_copy']:5.1%} of copy, regs {row['num_regs']}, "
              f"{row['mlups'] / first:6.1%} of plain", flush=True)
        del engine
        cp.get_default_memory_pool().free_all_blocks()
    if args.json:
        args.json.write_text(json.dumps({"copy_bandwidth_GBs": copy_bw / 1e9, "results": rows},
                                        indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

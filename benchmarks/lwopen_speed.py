"""Where the single-step LW-ACM loses speed in the slip-obstacle channel (issue #18's bar: within
10 % of its periodic MLUPS): D3Q19 fp32 256³, one engine per geometry, timed as ``thelma bench``
times them, with the ptxas register count of each kernel.

    python benchmarks/lwopen_speed.py [--size 256] [--min-blocks 0 4] [--json FILE]

``--open-ghosts sides links``: the open-boundary ghosts staged into the ring (where every ghost is a
function of its position) or built per link. The geometries separate the causes: the open-boundary
arms compiled in but almost never run (``zchannel``: periodic sides, inlet and outlet on the march
axis), free-slip sides without the body (``slipbox``), the body alone (``sphere``), and the bench
cases themselves.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import attrs
import numpy as np

from thelma_py.backend import select_backend
from thelma_py.geometry import domain
from thelma_py.geometry.shapes import Sphere
from thelma_py.lattice import D3Q19
from thelma_py.modules.compute.lwacm import open_links
from thelma_py.tools.bench import BenchConfig, compute_params, copy_bandwidth, time_engine
from thelma_py.tools.bench_cases import environment, geometry_for


def geometry(name: str, size: int) -> domain.Geometry:
    shape = (size,) * 3
    if name in ("periodic", "cavity", "obstacles", "slip-obstacles"):
        return geometry_for(name, size, 3)
    periodic = name == "sphere"
    geo = domain.Geometry(shape, periodic=(True, True, periodic))
    if name in ("zchannel", "slipbox"):
        geo = domain.Geometry(shape, periodic=(name == "zchannel",) * 2 + (False,))
        geo.inlet("-z", velocity=(0.0, 0.0, 0.05))
        geo.outlet("+z", rho=1.0)
        if name == "slipbox":
            for face in ("-x", "+x", "-y", "+y"):
                geo.free_slip(face)
    if name == "sphere":
        geo.body(Sphere([size / 2 - 0.5, size / 2 - 0.5, size / 4], size / 8))
    return geo


GEOMETRIES = ("periodic", "cavity", "zchannel", "slipbox", "sphere", "obstacles",
              "slip-obstacles")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--min-blocks", type=int, nargs="+", default=[0])
    parser.add_argument("--geometries", nargs="+", default=list(GEOMETRIES))
    parser.add_argument("--open-ghosts", nargs="+", default=["sides", "links"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    backend = select_backend("cuda")
    cp = backend.xp
    copy = copy_bandwidth(cp)
    rows = []
    for name in args.geometries:
        tags = geometry(name, args.size).evaluate(D3Q19)
        for min_blocks, ghosts in itertools.product(args.min_blocks, args.open_ghosts):
            if ghosts == "links" and not open_links.arms(tags):
                continue
            cfg = BenchConfig(compute="lwacm-fused", lattice="D3Q19", precision="float32",
                              case="periodic", size=args.size)
            params = attrs.evolve(compute_params(cfg), open_ghosts=ghosts)
            engine = params.create(D3Q19, tags, backend, np.dtype("float32"))
            if min_blocks:
                engine.retune(min_blocks=min_blocks)
            rng = np.random.default_rng(1)
            shape = tags.tags.shape
            engine.initialize(cp.asarray(1.0 + 0.01 * rng.standard_normal(shape), np.float32),
                              cp.asarray(0.02 * rng.standard_normal((3, *shape)), np.float32))
            timing = time_engine(cp, engine, int(np.prod(shape)))
            regs = engine.kernels[True].num_regs if hasattr(engine.kernels[True], "num_regs") \
                else None
            row = {"geometry": name, "min_blocks": min_blocks, "registers": regs,
                   "open_ghosts": ghosts if engine.sides else "links",
                   "arms": len(engine.config.boundaries),
                   "flagged_tiles": float((engine.tile_flags.get() != 0).mean()), **timing,
                   "fraction_of_copy": timing["mlups"] * 1e6 * engine.traffic_bytes_per_node
                   / copy}
            rows.append(row)
            print(f"{name:15} m{min_blocks} {row['open_ghosts']:5} regs {regs} arms "
                  f"{row['arms']:2} flagged "
                  f"{row['flagged_tiles']:.3f}: {timing['mlups']:8.0f} MLUPS "
                  f"({row['fraction_of_copy']:.1%} of copy)", flush=True)
            del engine
            cp.get_default_memory_pool().free_all_blocks()
    base = next((r["mlups"] for r in rows if r["geometry"] == "periodic"), None)
    if base:
        for r in rows:
            print(f"{r['geometry']:15} m{r['min_blocks']} {r['open_ghosts']:5}: "
                  f"{r['mlups'] / base:.3f} of periodic")
    if args.json:
        args.json.write_text(json.dumps({**environment(cp), "copy_bandwidth_GBs": copy / 1e9,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

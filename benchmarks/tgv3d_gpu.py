"""3D Taylor-Green vortex at Re = 1600 on the GPU, for each compute scheme and size.

Writes one JSON file with, per run, the time series of kinetic energy and enstrophy (units of
the spectral reference in thelma_py/reference: t* = t V0 / L, L = n / 2π), diagnostics computed
on the device. ``docs/validation/tgv3d.md`` and its plot are made from that file by
``python benchmarks/tgv3d_plot.py FILE``.

    python benchmarks/tgv3d_gpu.py --sizes 128,256 --out tgv3d.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import thelma_py as tp
from thelma_py.modules.results.derived import enstrophy, kinetic_energy

SCHEMES = {
    "lbm-bgk": ("lbm", {"collision": "bgk"}),
    "lbm-mrt": ("lbm", {"collision": "mrt"}),
    "lwacm": ("lwacm", {}),
    "lwacm-fused": ("lwacm-fused", {}),
    "lbm-cumulant": ("lbm", {"collision": "cumulant"}),
}
LATTICES = {"lbm-cumulant": "D3Q27"}
"""Schemes that run on another lattice than D3Q19."""


def run(scheme: str, n: int, u0: float, t_end: float, samples: int, precision: str,
        device: str) -> dict:
    name, extra = SCHEMES[scheme]
    length = n / (2 * math.pi)
    nu = u0 * length / 1600.0
    size = (n, n, n)
    solver = tp.compose(
        LATTICES.get(scheme, "D3Q19"), tp.geometry.periodic_box(size),
        tp.plugin("compute", name, nu=nu, **extra),
        init=tp.plugin("init", "taylor-green", u0=u0, size=size),
        device=device, precision=precision, check_every=0)
    total = int(round(t_end * length / u0))
    stride = max(1, total // samples)
    series = {"t": [], "E_k": [], "enstrophy": []}
    diverged = None
    start = time.perf_counter()
    while True:
        u = solver.engine.macroscopic()[1]
        energy = kinetic_energy(u) / u0**2
        if not math.isfinite(energy):
            diverged = solver.time_step * u0 / length
            break
        series["t"].append(solver.time_step * u0 / length)
        series["E_k"].append(energy)
        series["enstrophy"].append(enstrophy(u, (True, True, True)) * (length / u0) ** 2)
        if solver.time_step >= total:
            break
        solver.run(min(stride, total - solver.time_step))
    return {"scheme": scheme, "n": n, "u0": u0, "nu": nu, "precision": precision,
            "reynolds": 1600.0, "steps": solver.time_step, "mlups": solver.mlups,
            "wall_seconds": time.perf_counter() - start, "diverged_at": diverged, **series}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="128,256")
    parser.add_argument("--schemes", default=",".join(s for s in SCHEMES if s != "lbm-cumulant"))
    parser.add_argument("--u0", type=float, default=0.05)
    parser.add_argument("--t-end", type=float, default=14.0)
    parser.add_argument("--samples", type=int, default=140)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs = []
    for n in (int(v) for v in args.sizes.split(",")):
        for scheme in args.schemes.split(","):
            result = run(scheme, n, args.u0, args.t_end, args.samples, args.precision,
                         args.device)
            runs.append(result)
            print(f"{scheme:12s} n={n:4d}: {result['steps']} steps, {result['mlups']:.0f} MLUPS, "
                  f"{result['wall_seconds']:.1f} s"
                  + (f", diverged at t*={result['diverged_at']:.2f}" if result["diverged_at"]
                     is not None else ""), flush=True)
            args.out.write_text(json.dumps({"runs": runs}, indent=1))  # keep partial results


if __name__ == "__main__":
    main()

"""Stability of LBM with Smagorinsky LES: the 3D Taylor-Green vortex at Re = 1600 to t* = 20.

For each collision model and size, runs D3Q19 fp32 with ``les=smagorinsky`` (C_s = 0.16) and
records the kinetic energy and enstrophy (units of thelma_py/reference: t* = t u0 / L,
L = n / 2π) at ``--samples`` times, and the time it diverged (None: it did not). One JSON file:

    python benchmarks/les_tgv.py --sizes 64,128,256 --collisions bgk,mrt --out les_tgv.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import thelma_py as tp
from thelma_py.modules.results.derived import enstrophy, kinetic_energy


def run(collision: str, n: int, les: str | None, u0: float, t_end: float, samples: int,
        device: str) -> dict:
    length = n / (2 * math.pi)
    nu = u0 * length / 1600.0
    size = (n, n, n)
    solver = tp.compose(
        "D3Q19", tp.geometry.periodic_box(size),
        tp.plugin("compute", "lbm", nu=nu, collision=collision, les=les),
        init=tp.plugin("init", "taylor-green", u0=u0, size=size),
        device=device, precision="float32", check_every=0)
    total = int(round(t_end * length / u0))
    stride = max(1, total // samples)
    series: dict[str, list] = {"t": [], "E_k": [], "enstrophy": []}
    diverged = None
    start = time.perf_counter()
    while True:
        u = solver.engine.macroscopic()[1]
        energy = float(kinetic_energy(u)) / u0**2
        if not math.isfinite(energy) or energy > 10.0:
            diverged = solver.time_step * u0 / length
            break
        series["t"].append(solver.time_step * u0 / length)
        series["E_k"].append(energy)
        series["enstrophy"].append(float(enstrophy(u, (True, True, True))) * (length / u0) ** 2)
        if solver.time_step >= total:
            break
        solver.run(min(stride, total - solver.time_step))
    return {"collision": collision, "les": les, "n": n, "u0": u0, "nu": nu, "t_end": t_end,
            "steps": solver.time_step, "mlups": solver.mlups,
            "wall_seconds": time.perf_counter() - start, "diverged_at": diverged, **series}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128,256")
    parser.add_argument("--collisions", default="bgk,mrt")
    parser.add_argument("--les", default="smagorinsky", help="'none' for the resolved run")
    parser.add_argument("--u0", type=float, default=0.05)
    parser.add_argument("--t-end", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    les = None if args.les == "none" else args.les
    runs = []
    for n in (int(v) for v in args.sizes.split(",")):
        for collision in args.collisions.split(","):
            r = run(collision, n, les, args.u0, args.t_end, args.samples, args.device)
            runs.append(r)
            state = (f"DIVERGED at t* = {r['diverged_at']:.2f}" if r["diverged_at"] is not None
                     else f"bounded to t* = {r['t'][-1]:.1f}, E_k = {r['E_k'][-1]:.4f}")
            print(f"TGV Re 1600 {collision}+{args.les} {n}^3: {r['steps']} steps, "
                  f"{r['mlups']:.0f} MLUPS, {r['wall_seconds']:.0f} s: {state}", flush=True)
            args.out.write_text(json.dumps({"runs": runs}, indent=1))


if __name__ == "__main__":
    main()

"""Does 16-bit storage move a body's drag at τ near ½, and does stochastic rounding undo it?
The Schäfer-Turek 2D-1 cylinder (:mod:`thelma_py.cases.cylinder`, Re 20, steady) at a low
lattice velocity, so that τ is near ½ as in the Re 3700 sphere (docs/validation/store16.md):
n = 10, u_max = 0.0075 (τ = 0.5075), LBM TRT, on the CPU. Each store and rounding runs the same
``--steps``; c_D, c_L and Δp are averaged over the last ``--average`` steps, sampled every 100
(the low viscosity leaves the start's sound waves ringing for tens of thousands of steps).

    python benchmarks/store16_cylinder.py OUT.json [--steps 100000] [--average 40000]
        [--only fp16s:stochastic,...]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from thelma_py.cases import cylinder

RUNS = [("fp32", "nearest"), ("fp16s", "nearest"), ("fp16s", "stochastic"),
        ("fp16c", "nearest"), ("fp16c", "stochastic")]


def run(store: str, rounding: str, steps: int, average: int, n: int = 10,
        u_max: float = 0.0075) -> dict:
    """One run: the measures averaged over the last ``average`` steps."""
    solver = cylinder.build(n=n, reynolds=20.0, u_max=u_max, tolerance=None, device="cpu",
                            precision="float32", store=store, rounding=rounding)
    start = time.perf_counter()
    solver.run(steps - average)
    samples = []
    for _ in range(average // 100):
        solver.run(100)
        samples.append(cylinder.schaefer_turek_measures(solver, u_max=u_max))
    mean = {k: float(np.mean([s[k] for s in samples])) for k in samples[0]}
    spread = {f"{k}_std": float(np.std([s[k] for s in samples])) for k in samples[0]}
    return {"store": store, "rounding": rounding, "n": n, "u_max": u_max, "steps": steps,
            "average": average, **mean, **spread, "seconds": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=100000)
    parser.add_argument("--average", type=int, default=40000)
    parser.add_argument("--only", default=None, help="store:rounding pairs, comma-separated")
    args = parser.parse_args()
    runs = RUNS if args.only is None else [tuple(p.split(":")) for p in args.only.split(",")]
    warnings.simplefilter("ignore")  # τ near ½ at the Zou-He faces: expected here
    results = []
    for store, rounding in runs:
        r = run(store, rounding, args.steps, args.average)
        results.append(r)
        print(f"{store} {rounding}: c_D {r['c_D']:.5f} ± {r['c_D_std']:.5f}, "
              f"Δp {r['dp']:.5f}, {r['seconds']:.0f} s", flush=True)
        args.out.write_text(json.dumps({"runs": results}, indent=1))


if __name__ == "__main__":
    main()

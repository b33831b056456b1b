"""3D Taylor-Green vortex at Re 1600 with the single-step LW-ACM and Smagorinsky LES on the GPU:
does it stay finite to t* = 20, and where is its peak dissipation against the spectral DNS?

    python benchmarks/lwacm_les_tgv.py --out "$OUT/lwacm_les_tgv.json" \\
        --runs 64:0.05:smagorinsky,128:0.05:smagorinsky,64:auto:smagorinsky,128:auto:none

Each run is n:u0:les[:scheme] (scheme ``lwacm-fused``, the default, or the two-step ``lwacm``).
``auto`` picks u0 = L / 3200 (L = n / 2π), where the artificial Mach
number u0 / c_a of LW-ACM (c_a = √((2τ − 1)/3) = √(2ν), docs/validation/lwacm_energy.md) is 0.5
at Re 1600. Plot afterwards on the CPU with benchmarks/tgv3d_plot.py (the JSON has its format).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.modules.results.derived import enstrophy, kinetic_energy
from thelma_py.tools import validation as v


def run(n: int, u0: float | str, les: str, t_end: float, samples: int, precision: str,
        device: str, scheme: str = "lwacm-fused") -> dict:
    length = n / (2 * math.pi)
    u0 = length / 3200.0 if u0 == "auto" else float(u0)
    nu = u0 * length / 1600.0
    size = (n, n, n)
    solver = tp.compose(
        "D3Q19", tp.geometry.periodic_box(size),
        tp.plugin("compute", scheme, nu=nu, les=None if les == "none" else les),
        init=tp.plugin("init", "taylor-green", u0=u0, size=size),
        device=device, precision=precision, check_every=0)
    total = int(round(t_end * length / u0))
    stride = max(1, total // samples)
    series = {"t": [], "E_k": [], "enstrophy": [], "mass": []}
    diverged = None
    start = time.perf_counter()
    while True:
        rho, u = solver.engine.macroscopic()
        energy = kinetic_energy(u) / u0**2
        if not math.isfinite(energy):
            diverged = solver.time_step * u0 / length
            break
        series["t"].append(solver.time_step * u0 / length)
        series["E_k"].append(energy)
        series["enstrophy"].append(enstrophy(u, (True, True, True)) * (length / u0) ** 2)
        series["mass"].append(float(rho.sum()))
        if solver.time_step >= total:
            break
        solver.run(min(stride, total - solver.time_step))
    t, e = np.asarray(series["t"]), np.asarray(series["E_k"])
    peak = {}
    if len(t) > 5:
        rate = v.dissipation_rate(t, e)
        k = int(np.argmax(rate))
        ref = v.load_tgv_reference()
        r = int(np.argmax(ref["minus_dEk_dt"]))
        peak = {"peak": float(rate[k]), "peak_time": float(t[k]),
                "reference_peak": float(ref["minus_dEk_dt"][r]),
                "reference_peak_time": float(ref["t"][r]),
                "max_energy_gain": float(np.max(e) / e[0] - 1.0)}
    label = (f"{scheme}+{les}" if les != "none" else scheme) + f" u0={u0:.4f}"
    return {"scheme": label, "n": n, "u0": u0,
            "nu": nu, "les": les, "precision": precision, "reynolds": 1600.0,
            "mach_artificial": u0 / math.sqrt(2 * nu), "steps": solver.time_step,
            "mlups": solver.mlups, "wall_seconds": time.perf_counter() - start,
            "diverged_at": diverged, **peak, **series}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="64:0.05:smagorinsky,128:0.05:smagorinsky")
    parser.add_argument("--t-end", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs = []
    for spec in args.runs.split(","):
        n, u0, les, *scheme = spec.split(":")
        result = run(int(n), u0, les, args.t_end, args.samples, args.precision, args.device,
                     *scheme)
        runs.append(result)
        print(f"{result['scheme']:24s} n={result['n']:4d} u0={result['u0']:.4f} "
              f"Ma_a={result['mach_artificial']:.2f}: {result['steps']} steps, "
              f"{result['mlups']:.0f} MLUPS, diverged at {result['diverged_at']}, peak "
              f"{result.get('peak', float('nan')):.4f} at t*={result.get('peak_time', 0):.2f} "
              f"(DNS {result.get('reference_peak', float('nan')):.4f} at "
              f"{result.get('reference_peak_time', 0):.2f}), max E gain "
              f"{result.get('max_energy_gain', float('nan')):+.4f}", flush=True)
        args.out.write_text(json.dumps({"runs": runs}))


if __name__ == "__main__":
    main()

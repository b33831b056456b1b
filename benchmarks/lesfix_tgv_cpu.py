"""Re 1600 Taylor-Green vortex on the CPU (NumPy), D3Q19, u0 = L / 3200 for LW-ACM: E_k and the
ratio of the actual −dE/dt to the dissipation the scheme's model claims,
⟨2ρ(ν₀ + ν_t) S:S⟩ (S by central differences; ν_t = C_s²|S| by them, or for the two-step
scheme from its own pulled stress), and the dilatation ⟨(∇·u)²⟩ / ⟨S:S⟩ (docs/DESIGN.md,
"Single-step LW-ACM: fp32 records of ρ lose the step"):

    python benchmarks/lesfix_tgv_cpu.py fused-les 64 --t-end 0.5 --samples 5 --precision float32

64³ to t* = 0.5 takes 1.5–3.5 min per run on one core; 32³ to t* = 3 about as long.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.modules.compute.lbm import layouts
from thelma_py.modules.compute.lwacm import rule

LES = {"name": "smagorinsky", "c_s": 0.16}
SCHEMES = {"fused-les": ("lwacm-fused", {"les": LES, "density": "absolute"}),
           "fused-les-shifted": ("lwacm-fused", {"les": LES, "density": "shifted"}),
           "fused": ("lwacm-fused", {}), "fused-shifted": ("lwacm-fused", {"density": "shifted"}),
           "twostep-les": ("lwacm", {"les": LES}), "twostep": ("lwacm", {})}


def diagnostics(engine, nu: float, les: bool, two_step: bool) -> dict:
    rho, u = (np.asarray(a, dtype=np.float64) for a in engine.macroscopic())
    axis = {0: 2, 1: 1, 2: 0}  # u[a] has shape (z, y, x)
    grad = [[(np.roll(u[a], -1, axis[b]) - np.roll(u[a], 1, axis[b])) / 2 for b in range(3)]
            for a in range(3)]
    strain = sum((0.5 * (grad[a][b] + grad[b][a])) ** 2 for a in range(3) for b in range(3))
    nu_t = LES["c_s"] ** 2 * np.sqrt(2 * strain) if les else 0.0 * strain
    central = float(np.mean(nu_t))
    difference = None
    if les and two_step:  # the two-step scheme's own ν_t, from its pulled f* (rule.subgrid_stress)
        lat = engine.lattice
        pulled = layouts.stream(lat, engine.walls, engine.f)
        mass = pulled.sum(0)
        q = rule.pulled_stress(lat, list(pulled), list(engine.j), mass, lambda v, name=None: v)
        norm = np.sqrt(sum((1.0 if a == b else 2.0) * q[(a, b)] ** 2 for a, b in q))
        base = 1 - engine.kappa
        nu_t = (engine.params.les.tau_from_stress(base, norm, mass) - base) / 3
        difference = float(np.mean(LES["c_s"] ** 2 * _difference_strain(lat, engine, pulled,
                                                                         mass, nu)))
    div = grad[0][0] + grad[1][1] + grad[2][2]
    return {"E": 0.5 * float(np.mean(rho * (u**2).sum(0))),
            "model": float(np.mean(2 * rho * (nu + nu_t) * strain)),
            "nu_t": float(np.mean(nu_t)), "nu_t_central": central, "nu_t_difference": difference,
            "dilatation": float(np.mean(div**2) / np.mean(strain))}


def _difference_strain(lat, engine, pulled, rho, nu: float):
    """|S| of a two-step node from its pulled f*_i(x − c_i) less the f*_i(x + c_i) of the
    node downstream (a periodic box; :func:`two_step_strain.difference_moment`): a candidate
    without the curvature of ρ u u that the pulled moment alone carries (DESIGN.md, "LES in
    the two-step LW-ACM"), not the shipped estimate."""
    from two_step_strain import difference_moment, strain_from_moment  # benchmarks/, beside

    pushed = layouts.unstream(lat, engine.walls, engine.f)
    return strain_from_moment(difference_moment(lat, pulled, pushed)[0], rho, 6 * nu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheme", choices=sorted(SCHEMES))
    parser.add_argument("n", type=int)
    parser.add_argument("--t-end", type=float, default=0.5)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--precision", default="float64")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    name, params = SCHEMES[args.scheme]
    n, length = args.n, args.n / (2 * math.pi)
    u0 = length / 3200
    nu = u0 * length / 1600
    solver = tp.compose("D3Q19", tp.geometry.periodic_box((n,) * 3),
                        tp.plugin("compute", name, nu=nu, **params),
                        init=tp.plugin("init", "taylor-green", u0=u0, size=(n,) * 3),
                        device="cpu", precision=args.precision, check_every=0)
    total = int(round(args.t_end * length / u0))
    rows, start = [], time.perf_counter()
    while True:
        row = diagnostics(solver.engine, nu, "les" in params, name == "lwacm")
        rows.append({"t": solver.time_step * u0 / length, "step": solver.time_step, **row})
        if not math.isfinite(row["E"]) or solver.time_step >= total:
            break
        solver.run(min(max(1, total // args.samples), total - solver.time_step))
    for a, b in zip(rows[:-1], rows[1:], strict=False):
        rate = -(b["E"] - a["E"]) / (b["step"] - a["step"])
        print(f"{args.scheme} {args.precision} n={n} t*={b['t']:.2f} "
              f"E/E0={b['E'] / rows[0]['E']:.4f}"
              f" actual/model={rate / (0.5 * (a['model'] + b['model'])):.3f}"
              f" nu_t/nu={b['nu_t'] / nu:.2f} div2/ss={b['dilatation']:.2e}"
              + (f" (central {b['nu_t_central'] / nu:.2f}, difference "
                 f"{b['nu_t_difference'] / nu:.2f})" if b["nu_t_difference"] is not None
                 else ""), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"scheme": args.scheme, "n": n, "u0": u0, "nu": nu,
                                         "precision": args.precision, "rows": rows,
                                         "wall_seconds": time.perf_counter() - start}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

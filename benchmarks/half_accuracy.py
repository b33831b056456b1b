"""Accuracy of 16-bit population storage against fp32 (issue #19 item 2).

Each study runs fp32 and the 16-bit formats of ``Lbm(store=...)`` on the same set-up and writes
JSON; ``benchmarks/half_plot.py`` draws the figures from it on the CPU.

* ``formats``: round-trip error of candidate 16-bit formats on the populations of a cavity
  state (fp32 run), for three lid velocities: the error of f − w and of the velocity computed
  from the rounded populations. This chose fp16c's bias.
* ``cavity``: 2D lid-driven cavity (D2Q9, MRT), centre-line profiles of each store and their
  largest difference from fp32 in units of U.
* ``poiseuille``: force-driven channel from rest (D2Q9 BGK, τ = 1, U = 0.1), L2 error against
  the parabola at several widths, and the observed order; ``--rounding stochastic`` rounds
  the 16-bit stores stochastically (``Lbm(rounding=...)``).
* ``tgv``: 3D Taylor-Green vortex Re 1600 (D3Q19 BGK), kinetic energy and dissipation
  −dE/dt up to t* = 10 (past the peak at t* ≈ 9).

    python benchmarks/half_accuracy.py formats cavity poiseuille --device cpu --small
    python benchmarks/half_accuracy.py cavity tgv poiseuille --out half.json   # GPU sizes
    python benchmarks/half_accuracy.py poiseuille --device cpu --small --rounding stochastic
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.cases.lid_driven_cavity import centerlines
from thelma_py.lattice import D2Q9
from thelma_py.store16 import FORMATS, Format16, decode, encode

STORES = ("fp32", "fp16s", "fp16c")
CANDIDATES = [FORMATS["fp16s"]] + [Format16(f"e4m11b{b}", 4, 11, b) for b in (13, 14, 15, 16)]


def cavity_solver(n: int, reynolds: float, lid: float, store: str, device: str) -> tp.Solver:
    nu = tp.units.from_reynolds(reynolds, n, lid).nu
    return tp.compose("D2Q9", tp.geometry.cavity((n, n), lid_velocity=(lid, 0.0), lid_face="+y"),
                      tp.plugin("compute", "lbm", nu=nu, collision="mrt", store=store),
                      device=device, precision="float32", check_every=0)


def cavity(n: int, reynolds: float, lid: float, steps: int, device: str) -> dict:
    """Centre lines of each store after ``steps``; largest |Δu|, |Δv| from fp32 in units of U."""
    out: dict = {"n": n, "reynolds": reynolds, "lid": lid, "steps": steps, "stores": {}}
    for store in STORES:
        solver = cavity_solver(n, reynolds, lid, store, device)
        start = time.perf_counter()
        solver.run(steps)
        lines = {k: np.asarray(v, dtype=np.float64).tolist()
                 for k, v in centerlines(solver).items()}
        out["stores"][store] = {"seconds": time.perf_counter() - start, **lines}
    ref = out["stores"]["fp32"]
    for store in STORES[1:]:
        s = out["stores"][store]
        s["max_du_over_U"] = float(np.max(np.abs(np.subtract(s["u"], ref["u"]))))
        s["max_dv_over_U"] = float(np.max(np.abs(np.subtract(s["v"], ref["v"]))))
    return out


def formats(n: int, steps: int, device: str) -> dict:
    """Round-trip errors of each candidate on cavity populations at three lid speeds."""
    out: dict = {"n": n, "steps": steps, "runs": []}
    w = np.asarray(D2Q9.w, np.float32).reshape(-1, 1, 1)
    c = D2Q9.c.T.astype(np.float64)
    for lid in (0.1, 0.03, 0.01):
        solver = cavity_solver(n, 100.0, lid, "fp32", device)
        solver.run(steps)
        f = np.asarray(solver.engine.state()["f"], np.float32)
        dev = f - w
        rho = f.astype(np.float64).sum(0)
        u = np.tensordot(c, f.astype(np.float64), axes=1) / rho
        run = {"lid": lid, "max_abs_f_minus_w": float(np.abs(dev).max()), "formats": {}}
        for fmt in CANDIDATES:
            back = decode(fmt, encode(fmt, dev)).astype(np.float64) + w
            err = back - f
            ub = np.tensordot(c, back, axes=1) / back.sum(0)
            run["formats"][fmt.name] = {
                "bits": f"e{fmt.exp_bits}m{fmt.man_bits} bias {fmt.bias}",
                "largest": fmt.largest,
                "rms_f": float(np.sqrt(np.mean(err**2))),
                "max_f": float(np.abs(err).max()),
                "rms_u_over_U": float(np.sqrt(np.mean((ub - u) ** 2))) / lid,
                "max_u_over_U": float(np.abs(ub - u).max()) / lid}
        out["runs"].append(run)
    return out


def poiseuille_error(n: int, store: str, device: str, tau: float = 1.0,
                     u_max: float = 0.1, rounding: str = "nearest") -> float:
    """Relative L2 error of a force-driven channel of width n against the parabola."""
    nu = (tau - 0.5) / 3
    g = 8 * nu * u_max / n**2
    geometry = tp.geometry.Geometry((4, n), periodic=(True, False))
    solver = tp.compose("D2Q9", geometry,
                        tp.plugin("compute", "lbm", nu=nu, collision="bgk", force=(g, 0.0),
                                  store=store, rounding=rounding),
                        device=device, precision="float32", check_every=0)
    y = np.arange(n) + 0.5
    exact = g / (2 * nu) * y * (n - y)
    solver.run(int(12 * n**2 / (math.pi**2 * nu)))  # 12 decay times of the slowest mode
    u = np.asarray(solver.velocity(), np.float64)[0].mean(axis=-1)
    return float(np.linalg.norm(u - exact) / np.linalg.norm(exact))


def poiseuille(widths: list[int], device: str, rounding: str = "nearest") -> dict:
    out: dict = {"widths": widths, "rounding": rounding, "stores": {}}
    for store in STORES:
        mode = "nearest" if store == "fp32" else rounding
        errors = [poiseuille_error(n, store, device, rounding=mode) for n in widths]
        orders = [math.log(errors[k] / errors[k + 1]) / math.log(widths[k + 1] / widths[k])
                  for k in range(len(widths) - 1)]
        out["stores"][store] = {"errors": errors, "orders": orders}
    return out


def tgv(n: int, t_end: float, samples: int, device: str, u0: float = 0.05) -> dict:
    """Kinetic energy and dissipation of each store; dissipation difference from fp32."""
    from thelma_py.modules.results.derived import kinetic_energy

    length = n / (2 * math.pi)
    nu = u0 * length / 1600.0
    out: dict = {"n": n, "u0": u0, "t_end": t_end, "stores": {}}
    total = int(round(t_end * length / u0))
    stride = max(1, total // samples)
    for store in STORES:
        size = (n, n, n)
        solver = tp.compose("D3Q19", tp.geometry.periodic_box(size),
                            tp.plugin("compute", "lbm", nu=nu, collision="bgk", store=store),
                            init=tp.plugin("init", "taylor-green", u0=u0, size=size),
                            device=device, precision="float32", check_every=0)
        t, energy = [], []
        start = time.perf_counter()
        while True:
            u = solver.engine.macroscopic()[1]
            t.append(solver.time_step * u0 / length)
            energy.append(float(kinetic_energy(u)) / u0**2)
            if solver.time_step >= total:
                break
            solver.run(min(stride, total - solver.time_step))
        eps = (-np.gradient(energy, t)).tolist()
        out["stores"][store] = {"t": t, "E_k": energy, "dissipation": eps,
                                "seconds": time.perf_counter() - start, "mlups": solver.mlups}
    ref = np.asarray(out["stores"]["fp32"]["dissipation"])
    peak = int(np.argmax(ref))
    for store in STORES[1:]:
        eps = np.asarray(out["stores"][store]["dissipation"])
        rel = np.abs(eps[: peak + 1] - ref[: peak + 1]) / ref[peak]
        out["stores"][store]["max_dissipation_diff_to_peak_over_peak"] = float(rel.max())
    out["peak_t"] = out["stores"]["fp32"]["t"][peak]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("studies", nargs="+", choices=["formats", "cavity", "poiseuille", "tgv"])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--small", action="store_true", help="CPU sizes (minutes)")
    parser.add_argument("--out", type=Path, default=Path("half_accuracy.json"))
    parser.add_argument("--rounding", default="nearest", choices=["nearest", "stochastic"],
                        help="poiseuille: how the 16-bit stores round (LBM rounding=...)")
    args = parser.parse_args()
    small = args.small
    results: dict = {}
    for study in args.studies:
        start = time.perf_counter()
        if study == "formats":
            results[study] = formats(64 if small else 256, 4000 if small else 60000, args.device)
        elif study == "cavity":
            results[study] = [cavity(64, 100.0, 0.05, 8000, args.device)] if small else [
                cavity(256, re, 0.1, steps, args.device)
                for re, steps in ((100, 60000), (400, 100000), (1000, 150000))]
        elif study == "poiseuille":
            results[study] = poiseuille([8, 16, 32] if small else [16, 32, 64, 128], args.device,
                                        args.rounding)
        else:
            results[study] = tgv(64 if small else 256, 10.0, 100, args.device)
        print(f"{study}: {time.perf_counter() - start:.1f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(summary(results))


def summary(results: dict) -> str:
    lines = []
    for run in results.get("formats", {}).get("runs", []):
        head = f"formats U={run['lid']}: max|f-w|={run['max_abs_f_minus_w']:.3g} "
        lines.append(head + "; ".join(
            f"{k} rms_f={v['rms_f']:.2e} max_u/U={v['max_u_over_U']:.2e}"
            for k, v in run["formats"].items()))
    for run in results.get("cavity", []):
        lines.append(f"cavity n={run['n']} Re={run['reynolds']:.0f}: " + "; ".join(
            f"{s} max|du|/U={v['max_du_over_U']:.2e} max|dv|/U={v['max_dv_over_U']:.2e}"
            for s, v in run["stores"].items() if s != "fp32"))
    if "poiseuille" in results:
        for s, v in results["poiseuille"]["stores"].items():
            errors = " ".join(f"{e:.3e}" for e in v["errors"])
            orders = " ".join(f"{o:.2f}" for o in v["orders"])
            lines.append(f"poiseuille {s}: errors {errors}; orders {orders}")
    if "tgv" in results:
        r = results["tgv"]
        lines.append(f"tgv n={r['n']} peak t*={r['peak_t']:.2f}: " + "; ".join(
            f"{s} max|Δε|/ε_peak={v['max_dissipation_diff_to_peak_over_peak']:.2e}"
            for s, v in r["stores"].items() if s != "fp32"))
    return "\n".join(lines)


if __name__ == "__main__":
    main()

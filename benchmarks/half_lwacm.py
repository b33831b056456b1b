"""16-bit records of the single-step LW-ACM (``LwacmFused(store=...)``, issue #19): which code
for ρ and u, measured on real states (CPU, NumPy reference; a few minutes).

* ``formats``: a D2Q9 lid-driven cavity (64², Re 100) run in fp32 to 4,000 steps at three lid
  velocities; the round-trip error of candidate codes on its ρ and u: ρ itself or ρ − 1 in
  binary16 (fp16s) and e4m11 (fp16c); u in fp16s, fp16c, or 16-bit fixed point of u / u_max
  (u_max = 2U, or 0.5, about the scheme's stability limit √(2ν) at ν = 1/8).
* ``cavity``: the same cavities run with each store: largest |Δu| from fp32 in units of U.
* ``rounding``: the 32² cavity (U = 0.1, 1,500 steps) with records rounded to nearest and
  stochastically (``LwacmFused(rounding=...)``), against fp32.

    python benchmarks/half_lwacm.py formats cavity rounding --out half_lwacm.json
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import thelma_py as tp
from thelma_py.store16 import FORMATS, STORES, decode, encode

LIDS = (0.1, 0.03, 0.01)


def cavity(n: int, lid: float, store: str, steps: int, reynolds: float = 100.0,
           rounding: str = "nearest"):
    nu = tp.units.from_reynolds(reynolds, n, lid).nu
    compute = tp.plugin("compute", "lwacm-fused", nu=nu, store=store,
                        rounding=rounding if store != "fp32" else "nearest")
    solver = tp.compose("D2Q9", tp.geometry.cavity((n, n), lid_velocity=(lid, 0.0),
                                                   lid_face="+y"),
                        compute, device="cpu", precision="float32", check_every=0)
    solver.step(steps)
    return solver.density(), solver.velocity(), solver.tags.fluid


def float_code(name: str, x: np.ndarray) -> np.ndarray:
    fmt = FORMATS[name]
    return decode(fmt, encode(fmt, x.astype(np.float32))).astype(np.float64)


def fixed_code(x: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(np.rint(x / scale * 32767), -32767, 32767) * scale / 32767


def formats(n: int, steps: int) -> list[dict]:
    rows = []
    for lid in LIDS:
        rho, u, fluid = cavity(n, lid, "fp32", steps)
        rho, u = rho[fluid].astype(np.float64), u[:, fluid].astype(np.float64)
        rho_codes = {"fp16s(rho)": float_code("fp16s", rho),
                     "fp16s(rho-1)": 1 + float_code("fp16s", rho - 1),
                     "fp16c(rho-1)": 1 + float_code("fp16c", rho - 1)}
        u_codes = {"fp16s(u)": float_code("fp16s", u), "fp16c(u)": float_code("fp16c", u),
                   "fixed(u/2U)": fixed_code(u, 2 * lid), "fixed(u/0.5)": fixed_code(u, 0.5)}
        row = {"lid": lid, "max_abs_rho_minus_1": float(np.abs(rho - 1).max()),
               "max_abs_u_over_U": float(np.abs(u).max() / lid), "rho": {}, "u": {}}
        for name, value in rho_codes.items():
            err = value - rho
            row["rho"][name] = {"rms": float(np.sqrt(np.mean(err**2))),
                                "max": float(np.abs(err).max())}
        for name, value in u_codes.items():
            err = value - u
            row["u"][name] = {"rms_over_U": float(np.sqrt(np.mean(err**2)) / lid),
                              "max_over_U": float(np.abs(err).max() / lid)}
        rows.append(row)
        print(f"U = {lid}: max|rho - 1| {row['max_abs_rho_minus_1']:.2e}")
        for name, e in row["rho"].items():
            print(f"  {name:14s} rms {e['rms']:.2e}  max {e['max']:.2e}")
        for name, e in row["u"].items():
            print(f"  {name:14s} rms {e['rms_over_U']:.2e} U  max {e['max_over_U']:.2e} U")
    return rows


def cavities(n: int, steps: int) -> list[dict]:
    rows = []
    for lid in LIDS:
        runs = {store: cavity(n, lid, store, steps) for store in STORES}
        _, u32, fluid = runs["fp32"]
        row = {"lid": lid, "n": n, "steps": steps}
        for store in STORES[1:]:
            du = np.abs(runs[store][1][:, fluid] - u32[:, fluid]).max() / lid
            row[store] = float(du)
            sr = cavity(n, lid, store, steps, rounding="stochastic")[1]
            row[store + "-sr"] = float(np.abs(sr[:, fluid] - u32[:, fluid]).max() / lid)
        rows.append(row)
        print(f"cavity {n}^2 U = {lid}, {steps} steps: max |du| / U "
              + ", ".join(f"{s} {row[s]:.2e} (stochastic {row[s + '-sr']:.2e})"
                          for s in STORES[1:]))
    return rows


def rounding(n: int = 32, lid: float = 0.1, steps: int = 1500) -> list[dict]:
    """The 32² cavity with records rounded to nearest and stochastically, against fp32."""
    _, base, fluid = cavity(n, lid, "fp32", steps)
    rows = []
    for mode in ("nearest", "stochastic"):
        for store in STORES[1:]:
            du = np.abs(cavity(n, lid, store, steps, rounding=mode)[1] - base)[:, fluid] / lid
            rows.append({"rounding": mode, "store": store, "max_over_U": float(du.max()),
                         "rms_over_U": float(np.sqrt(np.mean(du**2)))})
            print(f"cavity {n}^2 U = {lid}, {steps} steps, {mode} {store}: max |du| "
                  f"{du.max():.2e} U, rms {np.sqrt(np.mean(du**2)):.2e} U")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("studies", nargs="+", choices=("formats", "cavity", "rounding"))
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--out")
    args = parser.parse_args()
    out = {}
    if "formats" in args.studies:
        out["formats"] = formats(args.n, args.steps)
    if "cavity" in args.studies:
        out["cavity"] = cavities(args.n, args.steps)
    if "rounding" in args.studies:
        out["rounding"] = rounding()
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main()

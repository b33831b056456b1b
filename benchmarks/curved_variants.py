"""Schäfer–Turek 2D-1 (Re 20) with the single step's curved-wall ghost weights varied (issue #18:
which extrapolation of u_g brings LW-ACM's c_L nearest LBM's). Each variant replaces
:func:`thelma_py.modules.compute.lwacm.curved.ghost_weights` (the host table both schemes and
both back ends read) for its runs; LBM (TRT, Bouzidi) runs once per ``--n``. Usage::

    python benchmarks/curved_variants.py --n 20 40 --seconds 20 40 --out out/st_variants.json
    python benchmarks/curved_variants.py --summary out/st_variants.json
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from curved_st import steady_run  # benchmarks/: this script's folder

from thelma_py.cases.cylinder_2d2 import lwacm_u_max
from thelma_py.modules.compute.lwacm import curved
from thelma_py.tools.validation import shedding_run

SHIPPED = curved.ghost_weights


def quadratic_from(q_min):
    """The shipped rule with the quadratic from ``q_min`` at every ν."""
    return lambda q, far_is_fluid, _min_q=None: SHIPPED(q, far_is_fluid, q_min)


def linear_far(q, far_is_fluid, _min_q=None):
    """q ≥ ½: linear through x and the wall (1/q, 1 − 1/q, 0) even where x + c_i is fluid; q < ½
    the mirror (Bouzidi's split applied to u)."""
    return SHIPPED(q, far_is_fluid, 1.0)


def halfway(q, far_is_fluid, _min_q=None):
    """The staircase's mirror for the odd part too (2, −1, 0): the walls' place only through
    which nodes are solid."""
    q = np.asarray(q, dtype=np.float64)
    return np.stack([np.full_like(q, 2.0), np.full_like(q, -1.0), np.zeros_like(q)])


VARIANTS = {"shipped": SHIPPED, "linear-far": linear_far, "halfway": halfway,
            **{f"quadratic-{q}": quadratic_from(q) for q in (0.5, 0.3, 0.2, 0.1, 0.05)}}
"""The ghost weights compared: the shipped rule (quadratic from ``curved.quadratic_min_q``:
max(0.1, 3.5 ν); until session 10 from ½ at every ν: ``quadratic-0.5``) and its variants."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, nargs="+", default=[20, 40])
    parser.add_argument("--seconds", type=float, nargs="+", default=[20, 40])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--shifts", type=float, nargs="*", default=[0.0],
                        help="places of the cylinder (cylinder.build's shift), each run at all")
    parser.add_argument("--shedding", type=float, nargs="*", default=[],
                        help="seconds of a 2D-2 run (Re 100, u_max = n/3200) per --n for each "
                             "variant but the shipped one: does it stay stable at τ → ½")
    parser.add_argument("--compute", default="lwacm-fused")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default="st_variants.json")
    parser.add_argument("--summary")
    args = parser.parse_args()
    if args.summary:
        with open(args.summary) as handle:
            records = json.load(handle)["runs"]
    else:
        records = []
        plan = [(n, seconds, shift, compute, variant)
                for n, seconds in zip(args.n, args.seconds, strict=True) for shift in args.shifts
                for compute, variant in [("lbm", "shipped")]
                + [(args.compute, v) for v in args.variants]]
        plan += [(n, seconds, None, args.compute, variant)
                 for n, seconds in zip(args.n, args.shedding, strict=False)
                 for variant in args.variants if variant != "shipped"]
        for n, seconds, shift, compute, variant in plan:
            curved.ghost_weights = VARIANTS[variant]
            try:
                if shift is None:
                    record = shedding_run(n, compute, u_max=lwacm_u_max(n),
                                          device=args.device, max_seconds=seconds)
                    record.pop("history", None)
                else:
                    record = steady_run(n, compute, True, args.device, "float64", seconds,
                                        shift=shift)
            except Exception as error:  # noqa: BLE001 - record it, run the others
                record = {"compute": compute, "n": n, "error": repr(error)}
            finally:
                curved.ghost_weights = SHIPPED
            record["variant"] = variant
            records.append(record)
            print(json.dumps(record, default=str), flush=True)
            with open(args.out, "w") as handle:
                json.dump({"runs": records}, handle, indent=1, default=str)
    for r in records:
        if "error" in r:
            print(f"{r['n']:>3} {r['variant']:<17} {r['error']}")
            continue
        if "St" in r:
            print(f"{r['n']:>3} 2D-2 {r['compute']:<12} {r['variant']:<17} tau {r['tau']:.4f} "
                  f"steps {r['steps']} St {r['St']:.4f} c_L,max {r['c_L_max']:.4f} "
                  f"diverged {r.get('diverged_at')}")
            continue
        base = next(b for b in records if b["n"] == r["n"] and b["compute"] == "lbm"
                    and b.get("shift") == r.get("shift"))
        cells = " ".join(f"{k} {r[k]:.6f} ({100 * (r[k] / base[k] - 1):+.2f}%)"
                         for k in ("c_D", "c_L", "dp"))
        print(f"{r['n']:>3} {r.get('shift', 0.0):+.1f} {r['compute']:<12} {r['variant']:<17} "
              f"{r['steps']:>7} {r['steady']!s:>5} {cells}")


if __name__ == "__main__":
    main()

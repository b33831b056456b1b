"""Schäfer–Turek 2D-1 diagnosis runs of issue #18 (helper stacc), NumPy on the CPU: where the
LW-ACM and LBM values differ (docs/DESIGN.md, "where LW-ACM and LBM differed").

A run is ``compute:walls:rho:grid[:shift]``: compute lbm / lwacm / lwacm-fused; walls curved or
stair; rho the density of LW-ACM's curved ghosts (half: ρ(x), the scheme's; wall: zero normal
gradient at the wall point, 2q ρ(x) + (1 − 2q) ρ(x + c_i); extrap: 2 ρ(x) − ρ(x + c_i), both
patched into the NumPy references here, not in the code); grid bench (the benchmark's geometry,
``cylinder.build``'s default) or lbm (``same_grid``); shift (``cylinder.build``'s). Each run goes
until the case's steady rule (1e-6) holds; one JSON line per run is printed and appended to
``--out``. Usage (n = 10: about a minute a run on one core; n = 20: 7 to 13 minutes)::

    python benchmarks/stacc_diagnosis.py --n 10 --runs lbm:curved:half:bench \\
        lwacm-fused:curved:half:lbm lwacm-fused:curved:wall:bench lbm:curved:half:bench:1
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from curved_st import steady_run  # benchmarks/: this script's folder

from thelma_py.modules.compute.lbm.interpolated import cut_links
from thelma_py.modules.compute.lwacm import curved, rule

DENSITY = {"half": None, "wall": "wall", "extrap": "extrap"}
_variant = {"rho": None}
_original_init = curved.CurvedGhosts.__init__


def _init(self, lattice, tags, dtype):
    """The scheme's ghosts, plus a row r: ρ_g = ρ(x) + r (ρ(x + c_i) − ρ(x))."""
    _original_init(self, lattice, tags, dtype)
    for i, _, _, far, fluid, _, q in cut_links(lattice, tags):
        flat, _, w = self.links[i]
        cut = fluid & np.isfinite(q)
        if _variant["rho"] == "wall":
            r = np.where(cut, 1.0 - 2.0 * np.where(cut, q, 0.5), 0.0)
        elif _variant["rho"] == "extrap":
            r = np.where(fluid, -1.0, 0.0)
        else:
            r = np.zeros(len(flat))
        self.links[i] = (flat, np.where(fluid, far, flat),
                         np.concatenate([w, r[None].astype(w.dtype)]))


def _ghosts(self, i, rho, u):
    flat, far, w = self.links[i]
    rho_g, u_m, u_g = rule.curved_ghost(rho[flat], [ua[flat] for ua in u],
                                        [ua[far] for ua in u], list(w[:-1]))
    return flat, rho_g + w[-1] * (rho[far] - rho[flat]), u_m, u_g


def _curved_return(self, flat, i, index, nxt, w, term):
    rho, u = curved.node_fields(self.lattice, flat[:, index], self.kappa)
    rho_far, u_far = curved.node_fields(self.lattice, flat[:, nxt], self.kappa)
    rho_g, u_m, u_g = rule.curved_ghost(rho, u, u_far, list(w[:-1]))
    return rule.curved_fstar_i(self.lattice, i, rho_g + w[-1] * (rho_far - rho), u_m, u_g,
                               self.kappa)


def patch() -> None:
    """Route LW-ACM's curved ghosts (both NumPy references and their forces) through
    ``_variant``; "half" gives the scheme's own values to rounding."""
    curved.CurvedGhosts.__init__ = _init
    curved.CurvedGhosts.ghosts = _ghosts
    curved.LwacmExchange.curved_return = _curved_return


def run(n: int, spec: str, cap: int) -> dict:
    """One steady run of ``spec`` (module docstring) at ``n``: its measures and steps."""
    compute, walls, rho, grid, *rest = spec.split(":")
    if rho not in DENSITY or grid not in ("bench", "lbm") or walls not in ("curved", "stair"):
        raise ValueError(f"run {spec!r}: compute:curved|stair:{'|'.join(DENSITY)}:bench|lbm"
                         "[:shift]")
    _variant["rho"] = DENSITY[rho]
    record = steady_run(n, compute, walls == "curved", "cpu", "float64", math.inf,
                        same_grid=grid == "lbm", shift=float(rest[0]) if rest else 0.0,
                        max_steps=cap)
    return {"spec": spec, **record}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--runs", nargs="+", required=True)
    parser.add_argument("--cap", type=int, default=400_000, help="steps at most")
    parser.add_argument("--out", default="stacc_diagnosis.jsonl")
    args = parser.parse_args()
    patch()
    for spec in args.runs:
        record = run(args.n, spec, args.cap)
        print(json.dumps(record), flush=True)
        with open(args.out, "a") as handle:
            handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()

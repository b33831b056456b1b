"""Schäfer–Turek 2D-1 (Re 20) with LBM and both LW-ACM schemes on the GPU (issue #18 bar:
c_D, c_L, Δp of LW-ACM within 0.5 % of LBM at 40 nodes per diameter).

Runs, in order: lbm (TRT, interpolated cylinder: the validated setting), lbm staircase,
lwacm-fused and lwacm (staircase; their curved walls: benchmarks/curved_st.py). Each runs
until the drag is steady (relative spread 1e-6 over 40 samples 8 n steps apart, the case's
rule) or its share of ``--budget`` seconds is spent; the JSON says which. Usage::

    python benchmarks/lwopen_st.py --n 40 --budget 170 --out out/st_lwopen.json
"""

from __future__ import annotations

import argparse
import json

from curved_st import steady_run  # benchmarks/: this script's folder

from thelma_py.cases import cylinder

RUNS = (("lbm", True), ("lbm", False), ("lwacm-fused", False), ("lwacm", False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--budget", type=float, default=170.0)
    parser.add_argument("--precision", default="float64")
    parser.add_argument("--out", default="st_lwopen.json")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    records = []
    share = args.budget / len(RUNS)
    for compute, interpolated in RUNS:
        record = steady_run(args.n, compute, interpolated, args.device, args.precision, share)
        records.append(record)
        print(json.dumps(record), flush=True)
    with open(args.out, "w") as handle:
        json.dump({"published": cylinder.SCHAEFER_TUREK, "runs": records}, handle, indent=1)


if __name__ == "__main__":
    main()

"""Schäfer–Turek 2D-1 (Re 20) with curved (interpolated) cylinder walls: LBM (TRT, Bouzidi)
against both LW-ACM schemes with their curved-wall ghosts (issue #18 item 2) at each ``--n``,
on the benchmark's geometry (``cylinder.build``: LW-ACM's channel is 22 n nodes with the
cylinder at 2 n − ½, since its inlet and outlet lie half a spacing beyond the end nodes), and
the single step on LBM's grid for comparison (``same_grid``: the cylinder half a spacing
further from the inlet, as before issue #18's stacc session).

Each run goes until the drag is steady (the case's rule: relative spread 1e-6 over 40 samples
8 n steps apart) or ``--seconds`` (one per ``--n``; building included) are spent; the JSON says
which. Without ``--seconds``, shares of ``--budget`` ∝ n². Prints one JSON line per run, then
a table relative to LBM at the same n. Usage::

    python benchmarks/curved_st.py --n 20 40 --seconds 24 33 --out out/st_curved.json
    python benchmarks/curved_st.py --summary out/st_curved.json      (the table again)
"""

from __future__ import annotations

import argparse
import json
import time

from thelma_py.cases import cylinder

RUNS = (("lbm", True, False, 0.0), ("lwacm", True, False, 0.0),
        ("lwacm-fused", True, False, 0.0), ("lwacm-fused", True, True, 0.0))
"""(compute, interpolated cylinder, on LBM's grid, shift) of each run."""
PLACEMENT = (("lbm", True, False, 0.5), ("lbm", True, False, -0.5),
             ("lwacm-fused", True, True, -1.0))
"""With ``--placement``: LBM with the cylinder between nodes (as LW-ACM's on the benchmark's
geometry) half a spacing further from and closer to the inlet, and LW-ACM on LBM's grid one
spacing closer to it (with ``same_grid``'s run: half a spacing either side)."""
KEYS = ("c_D", "c_L", "dp")


def steady_run(n: int, compute: str, interpolated: bool, device: str, precision: str,
               seconds: float, same_grid: bool = False, shift: float = 0.0,
               max_steps: int | None = None, u_max: float | None = None) -> dict:
    """Schäfer–Turek 2D-1 at ``n`` nodes per diameter and inflow centre speed ``u_max``
    (None: 1/n) until its drag is steady, ``seconds`` (building included) are spent or
    ``max_steps`` are run: steps, whether steady, run seconds, MLUPS, c_D, c_L, Δp."""
    start = time.perf_counter()
    solver = cylinder.build(n=n, compute=compute, interpolated=interpolated, device=device,
                            precision=precision, same_grid=same_grid, shift=shift,
                            u_max=u_max)
    built = time.perf_counter()
    while (solver.stop_reason is None and time.perf_counter() - start < seconds
           and (max_steps is None or solver.time_step < max_steps)):
        solver.run(20 * 8 * n)
    elapsed = time.perf_counter() - built
    nodes = solver.geometry.shape[0] * solver.geometry.shape[1]
    return {"compute": compute, "interpolated": interpolated, "same_grid": same_grid,
            "shift": shift, "n": n, "u_max": cylinder.inflow_speed(n, u_max),
            "steps": int(solver.time_step), "steady": solver.stop_reason is not None,
            "seconds": elapsed, "mlups": nodes * int(solver.time_step) / elapsed / 1e6,
            **cylinder.schaefer_turek_measures(solver, u_max)}


def table(records: list[dict]) -> str:
    """c_D, c_L, Δp of every run and their deviation from LBM (interpolated) at the same n."""
    lines = [f"{'n':>3} {'u_max':>8} {'compute':<12} {'walls':<8} {'grid':<9} {'steps':>7} "
             f"{'steady':>6} "
             + " ".join(f"{k:>9} {'vs lbm':>8}" for k in KEYS) + f" {'MLUPS':>7}"]
    for r in records:
        base = next((b for b in records if b["n"] == r["n"] and b["compute"] == "lbm"
                     and b["interpolated"] and not b.get("shift")
                     and b.get("u_max") == r.get("u_max")), None)
        cells = []
        for k in KEYS:
            rel = "" if base is None else f"{100 * (r[k] / base[k] - 1):+.2f}%"
            cells.append(f"{r[k]:9.5f} {rel:>8}")
        walls = "curved" if r["interpolated"] else "stair"
        # runs before the stacc session (no "same_grid") were all on LBM's grid
        grid = "lbm" if r.get("same_grid", True) or r["compute"] == "lbm" else "bench"
        grid += f"{r['shift']:+.1f}" if r.get("shift") else ""
        u_max = r.get("u_max", 1.0 / r["n"])
        lines.append(f"{r['n']:>3} {u_max:8.5f} {r['compute']:<12} {walls:<8} {grid:<9} "
                     f"{r['steps']:>7} {str(r['steady']):>6} " + " ".join(cells)
                     + f" {r['mlups']:7.0f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, nargs="+", default=[20, 40])
    parser.add_argument("--budget", type=float, default=160.0)
    parser.add_argument("--seconds", type=float, nargs="+", help="cap of each run, per --n")
    parser.add_argument("--placement", type=int, nargs="*", default=[],
                        help="values of --n that also run PLACEMENT (after all the others)")
    parser.add_argument("--u-max", type=float, nargs="+",
                        help="inflow centre speeds: run --computes at each (benchmark geometry) "
                             "instead of the grid and placement runs")
    parser.add_argument("--computes", nargs="+", default=["lbm", "lwacm-fused"])
    parser.add_argument("--precision", default="float64")
    parser.add_argument("--out", default="st_curved.json")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--summary", help="print the table of a JSON written before")
    args = parser.parse_args()
    if args.summary:
        with open(args.summary) as handle:
            print(table(json.load(handle)["runs"]))
        return
    records = []
    # shares ∝ n² (steps ∝ n / u_max = n², nodes ∝ n²; small grids are launch-bound)
    weights = {n: n * n for n in args.n}
    total = sum(weights.values()) * len(RUNS)
    if args.seconds and len(args.seconds) != len(args.n):
        parser.error(f"--seconds needs one value per --n ({len(args.n)}), got {args.seconds}")
    if not set(args.placement) <= set(args.n):
        parser.error(f"--placement {args.placement}: each must be one of --n {args.n}")
    if args.u_max:
        plan = [(n, (compute, True, False, 0.0), u) for n in args.n for u in args.u_max
                for compute in args.computes]
    else:
        plan = [(n, run, None) for n in args.n for run in RUNS]
        plan += [(n, run, None) for n in args.placement for run in PLACEMENT]
    for n, (compute, interpolated, same_grid, shift), u_max in plan:
        index = args.n.index(n)
        share = args.seconds[index] if args.seconds else args.budget * weights[n] / total
        try:
            record = steady_run(n, compute, interpolated, args.device, args.precision,
                                share, same_grid, shift, u_max=u_max)
        except Exception as error:  # noqa: BLE001 - record it, run the others
            print(json.dumps({"compute": compute, "n": n, "error": repr(error)}), flush=True)
            continue
        records.append(record)
        print(json.dumps(record), flush=True)
        with open(args.out, "w") as handle:
            json.dump({"published": cylinder.SCHAEFER_TUREK, "runs": records}, handle,
                      indent=1)
    print(table(records))


if __name__ == "__main__":
    main()

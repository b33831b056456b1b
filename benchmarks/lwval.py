"""LW-ACM validation (issue #18 item 4): Schäfer–Turek 2D-2 (Re 100, vortex shedding) with LBM
TRT and both LW-ACM schemes (curved cylinder), and the table of the sphere runs at Re 20 / 100
that ``thelma_py.tools.flows sphere`` writes (``benchmarks/device_lwval.sh`` runs both).

LBM runs at u_max = 0.05 (the validated setting) for 36 nominal shedding periods; LW-ACM at
:func:`thelma_py.cases.cylinder_2d2.lwacm_u_max` (n / 3200, at most 0.05) for 30, unless
``--u-max`` or ``--periods`` is given. Usage::

    python benchmarks/lwval.py cylinder --n 40 20 --device cuda --out OUT
    python benchmarks/lwval.py summary OUT          # the tables of docs/validation/
    python benchmarks/lwval.py plot OUT             # OUT/lwval_2d2.png (needs matplotlib)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from thelma_py.cases import cylinder_2d2
from thelma_py.tools.validation import shedding_run

SCHEMES = ("lbm", "lwacm", "lwacm-fused")
PUBLISHED = cylinder_2d2.SCHAEFER_TUREK_2D2


def case_u_max(compute: str, n: int) -> float:
    """LBM: 0.05; LW-ACM: :func:`thelma_py.cases.cylinder_2d2.lwacm_u_max`."""
    return 0.05 if compute == "lbm" else cylinder_2d2.lwacm_u_max(n)


def case_periods(compute: str) -> float:
    """Nominal shedding periods of a run: LBM 36 (144 000 steps at n = 40); LW-ACM 30 (its
    periods are 4 times longer at n = 40; at n = 20 its St settled by the 8th period, its
    c_L,max by the 12th)."""
    return 36.0 if compute == "lbm" else 30.0


def _line(r: dict) -> str:
    if "error" in r:
        return f"2D-2 n={r['n']} {r['compute']}: {r['error']}"
    extra = "".join(f", {k} at {r[k]:.1f} periods" for k in ("stopped_at", "diverged_at")
                    if r.get(k) is not None)
    return (f"2D-2 n={r['n']} {r['compute']} u_max={r['u_max']:g} tau={r['tau']:.4f}: "
            f"St {r['St']:.4f}, c_D,max {r['c_D_max']:.4f}, c_L,max {r['c_L_max']:.4f} over "
            f"{r['periods']} periods; {r['steps']} steps, {r['wall_seconds']:.1f} s, "
            f"{r['mlups']:.0f} MLUPS{extra}")


def cylinder_runs(args: argparse.Namespace) -> None:
    runs = []
    path = args.out / f"lwval_2d2{args.tag}.json"
    args.out.mkdir(parents=True, exist_ok=True)
    for n in args.n:
        for compute in args.schemes.split(","):
            u_max = args.u_max or case_u_max(compute, n)
            try:
                r = shedding_run(n, compute, u_max=u_max,
                                 periods=args.periods or case_periods(compute),
                                 device=args.device, precision=args.precision,
                                 max_seconds=args.max_seconds)
            except Exception as error:  # noqa: BLE001 - record it, run the others
                r = {"n": n, "compute": compute, "u_max": u_max,
                     "error": f"{type(error).__name__}: {error}"}
            runs.append(r)
            path.write_text(json.dumps({"published": PUBLISHED, "runs": runs}, default=float))
            print(_line(r), flush=True)


def _load(out: Path, pattern: str) -> list[dict]:
    return [r for p in sorted(out.glob(pattern)) for r in json.loads(p.read_text())["runs"]
            if "error" not in r]


def _pct(value: float, base: float | None) -> str:
    return "–" if base is None or not math.isfinite(value) else f"{100 * (value / base - 1):+.2f} %"


def summary(out: Path) -> str:
    """Markdown tables: 2D-2 per n and scheme against LBM at the same n and the published
    intervals; the sphere's c_D per Re against LBM TRT and the reference."""
    runs = sorted(_load(out, "lwval_2d2*.json"), key=lambda r: (r["n"], r["u_max"]))
    lines = ["| n | scheme | u_max | τ | u_max / c | periods | St | vs LBM | c_D,max | vs LBM "
             "| c_L,max | vs LBM | s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        base = next((b for b in runs if b["n"] == r["n"] and b["compute"] == "lbm"), None)
        cells = []
        for k in ("St", "c_D_max", "c_L_max"):
            cells += [f"{r[k]:.4f}", _pct(r[k], base and base[k]) if r is not base else ""]
        lines.append(f"| {r['n']} | {r['compute']} | {r['u_max']:g} | {r['tau']:.4f} | "
                     f"{r['u_over_c']:.2f} | {r['periods']} | " + " | ".join(cells)
                     + f" | {r['wall_seconds']:.0f} |")
    lines += ["", "Published: " + ", ".join(f"{k} {lo}–{hi}" for k, (lo, hi) in
                                             PUBLISHED.items()), ""]
    lines += [extrapolated(runs, n) for n in sorted({r["n"] for r in runs})
              if len({r["u_max"] for r in runs if r["n"] == n and r["compute"] != "lbm"}) > 1]
    lines += [""]
    spheres = _load(out, "flows_sphere*_lwval*.json")
    lines += ["| Re | scheme | U | d | c_D | vs LBM TRT | reference | vs ref | MLUPS | wall s |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(spheres, key=lambda r: (r["reynolds"], r["scheme"], -r["u"])):
        base = next((b for b in spheres if b["reynolds"] == r["reynolds"]
                     and b["scheme"] == "trt"), None)
        ref = (r.get("reference") or {}).get("c_D")
        lines.append(f"| {r['reynolds']:g} | {r['scheme']} | {r['u']:g} | {r['d']} | "
                     f"{r['c_D']:.4f} | {_pct(r['c_D'], base and base['c_D'])} | "
                     f"{ref and round(ref, 3)} | {_pct(r['c_D'], ref)} | {r['mlups']:.0f} | "
                     f"{r['wall_seconds']:.0f} |")
    return "\n".join(lines)


def extrapolated(runs: list[dict], n: int) -> str:
    """St of the LW-ACM single step at n fitted as a + b u_max over its speeds (the error goes
    with (u_max / c_a)² ∝ u_max at fixed n and Re) and a, its value at u_max → 0, against LBM."""
    pairs = sorted((r["u_max"], r["St"]) for r in runs if r["n"] == n
                   and r["compute"] == "lwacm-fused" and math.isfinite(r["St"]))
    base = next((r["St"] for r in runs if r["n"] == n and r["compute"] == "lbm"), None)
    if len(pairs) < 2:
        return f"n = {n}: fewer than two finished single-step speeds"
    u, st = np.array(pairs).T
    slope, zero = np.polyfit(u, st, 1)
    return (f"n = {n}, single step, St = a + b u_max over u_max = "
            + ", ".join(f"{x:g}" for x in u) + f": a = {zero:.4f} ({_pct(zero, base)} against "
            f"LBM), b = {slope:.3f}")


def plot(out: Path) -> Path:
    """c_L against time (in periods of St = 0.3) over the last 5 periods of each 2D-2 run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = _load(out, "lwval_2d2*.json")
    sizes = sorted({r["n"] for r in runs})
    fig, axes = plt.subplots(len(sizes), 1, figsize=(7, 2.6 * len(sizes)), squeeze=False)
    for ax, n in zip(axes[:, 0], sizes, strict=True):
        for r in (r for r in runs if r["n"] == n):
            period = 5.0 * n / r["u_max"]
            steps, _, c_l = r["history"]
            t = [s / period for s in steps]
            keep = [i for i, s in enumerate(t) if s >= t[-1] - 5]
            ax.plot([t[i] - t[-1] for i in keep], [c_l[i] for i in keep],
                    label=f"{r['compute']} u_max={r['u_max']:g}: St {r['St']:.4f}")
        ax.set(title=f"Schäfer–Turek 2D-2, n = {n}", xlabel="t / (D / (0.3 U)) from the end",
               ylabel="c_L")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "lwval_2d2.png"
    fig.savefig(path, dpi=120)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("cylinder", "summary", "plot"))
    parser.add_argument("out", nargs="?", type=Path, default=None)
    parser.add_argument("--out", dest="out_dir", type=Path, default=Path("out"))
    parser.add_argument("--n", type=int, nargs="+", default=[40, 20])
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--u-max", type=float, default=None,
                        help="one u_max for every run (default: case_u_max)")
    parser.add_argument("--periods", type=float, default=None,
                        help="nominal shedding periods, 5 n / u_max steps each (default: "
                             "case_periods)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="end each run after this long, at a whole period")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="float64")
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    args = parser.parse_args(argv)
    args.out = args.out or args.out_dir
    if args.part == "cylinder":
        cylinder_runs(args)
    elif args.part == "summary":
        print(summary(args.out))
    else:
        print(plot(args.out))


if __name__ == "__main__":
    main()

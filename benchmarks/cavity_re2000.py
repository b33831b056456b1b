"""The seed paper's validation study (Obrecht et al. 2014, section 5): the lid-driven cubic
cavity at Re = 2000 to t U / L = 18.4, LBM MRT and both LW-ACM schemes at a range of
resolutions, each run's velocity against a reference run on a finer grid.

The paper compared with a spectral-element solution we do not have; here the reference is
the finest run (``--reference``, LBM MRT on 320³ by default), interpolated trilinearly onto
each coarser grid (walls halfway between nodes: node i of n sits at (i + ½) / n, so every
coarse node lies inside the reference's node range). Per run: the relative ℓ² discrepancy
‖u − u_ref‖ / ‖u_ref‖ over all nodes, its largest pointwise value / U, both centre lines,
the discrepancy |u − u_ref| / U on the planes x = ½ (across the lid's stream-wise edges,
where the paper found the single-step scheme's largest discrepancies) and y = ½, wall
seconds (time to solution) and MLUPS. Runs that diverge are recorded as such.

    python benchmarks/cavity_re2000.py --out re2000.json          # H100: about 7 minutes
    python benchmarks/cavity_re2000.py --device cpu --sizes 8,12 --reference lbm-mrt:16 \\
        --t-end 0.5 --out /tmp/re2000.json                         # a check of the script

Plots and the table: ``python benchmarks/cavity_re2000_plot.py re2000.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from thelma_py.backend import array_module, select_backend
from thelma_py.cases.lid_driven_cavity import build
from thelma_py.tools.bench_cases import environment

REYNOLDS = 2000.0
SCHEMES = {"lbm-mrt": ("lbm", "mrt"), "lwacm": ("lwacm", "bgk"),
           "lwacm-fused": ("lwacm-fused", "bgk")}
PLANE_SIZE = 128
"""Discrepancy planes are kept at runs of at most this many nodes per side."""


def run(scheme: str, n: int, lid: float, t_end: float, device: str, precision: str,
        reynolds: float = REYNOLDS):
    """(velocity / U as (3, z, y, x) on the run's device, or None if it diverged; record)."""
    compute, collision = SCHEMES[scheme]
    solver = build(n=n, reynolds=reynolds, lid_velocity=lid, collision=collision, dim=3,
                   compute=compute, device=device, precision=precision)
    solver.check_every = 0
    steps = int(round(t_end * n / lid))
    start = time.perf_counter()
    solver.run(steps)
    solver.backend.synchronize()
    seconds = time.perf_counter() - start
    u = solver.engine.macroscopic()[1] / lid
    xp = array_module(u)
    finite = bool(xp.isfinite(u).all())
    record = {"scheme": scheme, "n": n, "lid_velocity": lid, "steps": steps,
              "nu": lid * n / reynolds, "seconds": seconds,
              "mlups": n**3 * steps / seconds / 1e6, "diverged": not finite}
    return (u.astype(xp.float32) if finite else None), record


def interpolate(reference, n: int):
    """The reference field (c, z, y, x) on m³ nodes at the nodes of an n³ cavity (linear along
    each axis in turn; node i at (i + ½) / size)."""
    xp = array_module(reference)
    m = reference.shape[-1]
    position = (np.arange(n) + 0.5) * m / n - 0.5  # in reference node units
    low = np.clip(np.floor(position).astype(np.int64), 0, m - 2)
    weight = xp.asarray((position - low).astype(np.float32))
    low, high = xp.asarray(low), xp.asarray(low + 1)
    field = reference
    for axis in (-1, -2, -3):
        shape = [1] * field.ndim
        shape[axis] = n
        w = weight.reshape(shape)
        field = xp.take(field, low, axis=axis) * (1 - w) + xp.take(field, high, axis=axis) * w
    return field


def centre_lines(u) -> dict:
    """u_x along z at x = y = ½ and u_z along x at y = z = ½ (mean of the middle nodes)."""
    n = u.shape[-1]
    middle = [n // 2 - 1, n // 2] if n % 2 == 0 else [n // 2]
    xp = array_module(u)
    ux = u[0][:, middle][:, :, middle].mean(axis=(1, 2))
    uz = u[2][middle][:, middle].mean(axis=(0, 1))
    return {"z": ((np.arange(n) + 0.5) / n).tolist(), "u_x": xp.asnumpy(ux).tolist()
            if xp is not np else ux.tolist(),
            "u_z": xp.asnumpy(uz).tolist() if xp is not np else uz.tolist()}


def discrepancy(u, reference) -> dict:
    xp = array_module(u)
    n = u.shape[-1]
    target = interpolate(reference, n)
    error = xp.sqrt(((u - target) ** 2).sum(axis=0))
    result = {"l2": float(xp.sqrt((error**2).sum() / (target**2).sum())),
              "max": float(error.max())}
    mid_u, mid_r = centre_lines(u), centre_lines(target)
    result["centre_line_max"] = max(
        float(np.max(np.abs(np.subtract(mid_u[k], mid_r[k])))) for k in ("u_x", "u_z"))
    if n <= PLANE_SIZE:
        def host(a):
            return a.get() if hasattr(a, "get") else a
        result["plane_x"] = np.round(host(error[:, :, n // 2]), 5).tolist()  # (z, y)
        result["plane_y"] = np.round(host(error[:, n // 2, :]), 5).tolist()  # (z, x)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,96,128,192,256")
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--reference", default="lbm-mrt:320", help="scheme:size of the "
                        "reference run (finer than every size), or none (runs and centre "
                        "lines only)")
    parser.add_argument("--reynolds", type=float, default=REYNOLDS)
    parser.add_argument("--lid-velocity", type=float, default=0.1,
                        help="lattice lid speed (the paper's runs: about 0.1)")
    parser.add_argument("--t-end", type=float, default=18.4)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    machine = ({"device": "cpu"} if args.device == "cpu" else
               environment(select_backend(args.device).xp))
    report = {**machine, "reynolds": args.reynolds, "t_end": args.t_end,
              "precision": args.precision, "reference": args.reference, "runs": []}
    reference = None
    if args.reference != "none":
        ref_scheme, ref_size = args.reference.split(":")
        if int(ref_size) <= max(sizes):
            parser.error(f"the reference size {ref_size} must exceed every size {sizes}")
        reference, record = run(ref_scheme, int(ref_size), args.lid_velocity, args.t_end,
                                args.device, args.precision, args.reynolds)
        if reference is None:
            raise SystemExit(f"the reference run {args.reference} diverged")
        record["centre_lines"] = centre_lines(reference)
        report["reference_run"] = record
        print(f"reference {args.reference}: {record['seconds']:.1f} s, "
              f"{record['mlups']:.0f} MLUPS", flush=True)
    for n in sizes:
        for scheme in args.schemes.split(","):
            u, record = run(scheme, n, args.lid_velocity, args.t_end, args.device,
                            args.precision, args.reynolds)
            if u is not None:
                record["centre_lines"] = centre_lines(u)
                if reference is not None:
                    record.update(discrepancy(u, reference))
                del u
            report["runs"].append(record)
            args.out.write_text(json.dumps(report))
            l2 = record.get("l2", math.nan)
            print(f"{scheme:12s} {n:4d}: l2 {l2:.4f}  max {record.get('max', math.nan):.3f}  "
                  f"centre lines {record.get('centre_line_max', math.nan):.4f}  "
                  f"{record['seconds']:.1f} s  {record['mlups']:.0f} MLUPS"
                  + ("  DIVERGED" if record["diverged"] else ""), flush=True)
    args.out.write_text(json.dumps(report))


if __name__ == "__main__":
    main()

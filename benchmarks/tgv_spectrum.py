"""Where LW-ACM's Taylor-Green vortex loses its energy: spectra of the Re 1600 vortex (GPU).

    python benchmarks/tgv_spectrum.py --out spectra.json [--n 256] [--times 3,5,7,9]
        [--schemes lbm-bgk-les,lwacm-fused-les,lwacm-les]

Each scheme runs the vortex of ``thelma_py.tools.flows`` (the same set-up, u0 and ν as its
``tgv`` runs) and, at each t*, stores the shell-summed spectrum of ½|û|² (solenoidal and
dilatational parts, k = 0 … n/2 in units of 2π/n), the enstrophy from central differences
(what ``flows tgv`` records) and from spectral derivatives, the mean of (∇·u)²/2 both ways,
and the spectrum of the density fluctuation. Velocities and energies in V0 = u0 and L = n/2π.
If LW-ACM carries energy near the grid scale (k → n/2), where central differences do not see
it, its dissipation beyond 2νΩ (docs/validation/flows.md, session 11) is that energy's.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from thelma_py.tools.bench_cases import environment
from thelma_py.tools.flows import tgv_solver


def spectra(xp, rho, u, n: int) -> dict:
    """Shell spectra and enstrophies of one field (u: 3 arrays (z, y, x); values in lattice
    units; k in units of 2π/n)."""
    k1 = xp.fft.fftfreq(n, 1.0 / n)
    kz, ky, kx = xp.meshgrid(k1, k1, k1, indexing="ij")
    k2 = kx * kx + ky * ky + kz * kz
    shell = xp.rint(xp.sqrt(k2)).astype(xp.int64).ravel()
    hats = [xp.fft.fftn(ua) / n**3 for ua in u]  # (z, y, x) order: u[0] is u_x
    waves = (kx, ky, kz)
    parallel = sum(w * h for w, h in zip(waves, hats, strict=True))  # k·û
    safe = xp.where(k2 > 0, k2, 1.0)
    energy = 0.5 * sum(xp.abs(h) ** 2 for h in hats)
    dilatational = 0.5 * xp.abs(parallel) ** 2 / safe
    count = n // 2 + 1

    def binned(field):
        sums = xp.bincount(shell, weights=field.ravel(), minlength=count)[:count]
        return [float(v) for v in (sums.get() if hasattr(sums, "get") else sums)]

    scale = 2 * math.pi / n  # d/dx of e^{i k 2π x / n}
    vort = [waves[1] * hats[2] - waves[2] * hats[1], waves[2] * hats[0] - waves[0] * hats[2],
            waves[0] * hats[1] - waves[1] * hats[0]]
    spectral_enstrophy = 0.5 * scale**2 * float(sum((xp.abs(w) ** 2).sum() for w in vort))
    spectral_dilatation = 0.5 * scale**2 * float((xp.abs(parallel) ** 2).sum())

    def central(f, axis):  # (f(x + 1) − f(x − 1)) / 2 along x (axis 2), y (1), z (0)
        return 0.5 * (xp.roll(f, -1, axis) - xp.roll(f, 1, axis))

    axis_of = (2, 1, 0)
    grad = [[central(u[a], axis_of[b]) for b in range(3)] for a in range(3)]
    omega = [grad[2][1] - grad[1][2], grad[0][2] - grad[2][0], grad[1][0] - grad[0][1]]
    central_enstrophy = 0.5 * float(sum((w * w).mean() for w in omega))
    div = grad[0][0] + grad[1][1] + grad[2][2]
    central_dilatation = 0.5 * float((div * div).mean())
    drho = xp.fft.fftn(rho - rho.mean()) / n**3
    return {"E": binned(energy), "E_dilatational": binned(dilatational),
            "rho": binned(xp.abs(drho) ** 2),
            "enstrophy_central": central_enstrophy, "enstrophy_spectral": spectral_enstrophy,
            "dilatation_central": central_dilatation,
            "dilatation_spectral": spectral_dilatation}


def run(scheme: str, n: int, times: list[float], xp) -> dict:
    solver, u0, nu, _ = tgv_solver(scheme, n, device="cpu" if xp is np else "cuda")
    length = n / (2 * math.pi)
    out = {"scheme": scheme, "n": n, "u0": u0, "nu": nu, "samples": []}
    start = time.perf_counter()
    for t in times:
        steps = int(round(t * length / u0))
        solver.run(steps - solver.time_step)
        rho, u = solver.engine.macroscopic()
        got = spectra(xp, xp.asarray(rho, dtype=xp.float64),
                      [xp.asarray(ua, dtype=xp.float64) / u0 for ua in u], n)
        # enstrophy in (V0/L)²: the derivatives above are per node, so times L²
        for key in ("enstrophy_central", "enstrophy_spectral", "dilatation_central",
                    "dilatation_spectral"):
            got[key] *= length**2
        got["t"] = solver.time_step * u0 / length
        got["E_k"] = float(sum(got["E"]))
        out["samples"].append(got)
        print(f"{scheme:16} n={n} t*={got['t']:5.2f} E_k {got['E_k']:.5f} enstrophy central "
              f"{got['enstrophy_central']:.3f} spectral {got['enstrophy_spectral']:.3f} "
              f"E(k > n/4) {sum(got['E'][n // 4:]):.3e} dilatational "
              f"{sum(got['E_dilatational']):.3e}", flush=True)
    out["wall_seconds"] = time.perf_counter() - start
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--times", default="3,5,7,9")
    parser.add_argument("--schemes", default="lbm-bgk-les,lwacm-fused-les,lwacm-les")
    parser.add_argument("--cpu", action="store_true", help="NumPy on the CPU (small n)")
    args = parser.parse_args(argv)
    if args.cpu:
        xp = np
    else:
        import cupy as xp

    times = [float(t) for t in args.times.split(",")]
    runs = [run(s, args.n, times, xp) for s in args.schemes.split(",")]
    meta = {"device": "cpu"} if xp is np else environment(xp)
    args.out.write_text(json.dumps({**meta, "runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

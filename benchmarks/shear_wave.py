"""Decay of a small shear wave at high wavenumber: LW-ACM against LBM (issue #17, session 11).

A wave u_z = A sin(k x) (or along the face diagonal, k(x + y)) on a periodic D3Q19 box, fp64,
ν = 0.002: the measured decay per step over ν k², for n = 4 … 32 nodes per wavelength. LW-ACM's
viscous term is the explicit step of the nearest-neighbour Laplacian, 2(1 − cos k)/k² of the
continuum rate (tests/test_lwacm_energy.py pins it); LBM's relaxation gives more.

    python benchmarks/shear_wave.py      # ~1 min on one core
"""

from __future__ import annotations

import math

import numpy as np

import thelma_py as tp

NU = 0.002
SCHEMES = {"lbm-bgk": ("lbm", {"collision": "bgk"}), "lbm-mrt": ("lbm", {"collision": "mrt"}),
           "lwacm": ("lwacm", {})}


def relative_rate(scheme: str, n: int, diagonal: bool = False, steps: int = 400) -> float:
    """Decay rate of the wave over ν|k|², from its amplitude after ``steps`` and 2 ``steps``."""
    name, params = SCHEMES[scheme]
    k = 2 * math.pi / n

    def velocity(x, y, z):
        phase = k * (x + y) if diagonal else k * x
        return (0 * x, 0 * x, 1e-3 * np.sin(phase) + 0 * x)

    size = (n, n, 2) if diagonal else (n, 2, 2)
    solver = tp.compose("D3Q19", tp.geometry.periodic_box(size),
                        tp.plugin("compute", name, nu=NU, **params),
                        init=tp.plugin("init", "equilibrium", u=velocity), device="cpu",
                        precision="float64", check_every=0)
    amplitudes = []
    for _ in range(2):  # skip the first ``steps``: LBM's start from equilibrium
        solver.run(steps)
        uz = np.asarray(solver.engine.macroscopic()[1])[2]
        amplitudes.append(math.sqrt(2 * float((uz**2).mean())))
    k2 = k * k * (2 if diagonal else 1)
    return -math.log(amplitudes[1] / amplitudes[0]) / steps / (NU * k2)


def main() -> None:
    print("| nodes per wavelength | k | LBM BGK | LBM MRT | LW-ACM | 2(1 − cos k)/k² "
          "| diagonal: LBM BGK | LW-ACM |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (4, 6, 8, 12, 16, 32):
        k = 2 * math.pi / n
        axis = [relative_rate(s, n) for s in SCHEMES]
        diag = [relative_rate(s, n, diagonal=True) for s in ("lbm-bgk", "lwacm")]
        cells = " | ".join(f"{v:.4f}" for v in (*axis, 2 * (1 - math.cos(k)) / k**2, *diag))
        print(f"| {n} | {k:.3f} | {cells} |")


if __name__ == "__main__":
    main()

"""Oblique shear waves in a uniform flow: LW-ACM's single step written again with np.roll
(D3Q19, fp64), with the third-order equilibrium part and an optional finite-difference term
β ∂a²(ρ u_a³) per axis (the diagonal third moment no lattice here holds). Session 14,
docs/validation/lwacm_energy.md section 8.

Prints, for U = 0.5 c_a along x and k = 2π (m0, m1, 0)/16, the decay rate over the same
scheme's at rest, for waves polarized out of the plane of U and k and in it. β = 0
reproduces the plug-in (`equilibrium_order=3`) to the digits shown.

    python benchmarks/lwacm_oblique.py     # ~30 s on one core
"""

from __future__ import annotations

import math

import numpy as np

from thelma_py.lattice import D3Q19
from thelma_py.modules.compute.lwacm.rule import cubic_i

NU = 0.002
KAPPA = 2 * (1 - (3 * NU + 0.5))
WAVES = ((1, 0), (2, 1), (1, 1), (1, 2))


def upstream(a: np.ndarray, c) -> np.ndarray:
    """The value at x − c of a field indexed [z, y, x] (periodic)."""
    return np.roll(a, (int(c[2]), int(c[1]), int(c[0])), axis=(0, 1, 2))


def step(lat, rho, u, beta: float):
    """One single step (eq. 11 as sums) with the cubic part, plus β ∂a²(ρ u_a³)."""
    usq = (u * u).sum(0)
    rho_new, j = 0.0, np.zeros_like(u)
    for i in range(lat.q):
        c, w = lat.c[i], float(lat.w[i])
        cu = sum(int(c[a]) * u[a] for a in range(3))
        f = w * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * usq - 3 * KAPPA * cu)
        f = f + w * rho * cubic_i(lat, i, list(u))
        moved = upstream(f, c)
        rho_new = rho_new + moved
        for a in range(3):
            if c[a]:
                j[a] += int(c[a]) * moved
    j += KAPPA * rho * u
    for a in range(3 if beta else 0):
        g = rho * u[a] ** 3
        e = np.eye(3, dtype=int)[a]
        j[a] += beta * (upstream(g, e) + upstream(g, -e) - 2 * g)
    return rho_new, j / rho_new


def relative_rate(lat, m, polarization: str, beta: float, speed: float = 0.5, n: int = 16,
                  steps: int = 400) -> float:
    kx, ky = 2 * math.pi * m[0] / n, 2 * math.pi * m[1] / n
    ex, ey = -ky / math.hypot(kx, ky), kx / math.hypot(kx, ky)
    z, y, x = np.meshgrid(np.arange(2), np.arange(n), np.arange(n), indexing="ij")

    def rate(along: float) -> float:
        a = 1e-4 * np.sin(kx * x + ky * y)
        u = (np.stack([along + ex * a, ey * a, 0 * a]) if polarization == "in"
             else np.stack([along + 0 * a, 0 * a, a]))
        rho, amplitudes = np.ones_like(a), []
        for _ in range(2):
            for _ in range(steps):
                rho, u = step(lat, rho, u, beta)
            p = u - u.mean(axis=(1, 2, 3), keepdims=True)
            amplitudes.append(math.sqrt(float((p * p).sum(0).mean())))
        return -math.log(amplitudes[1] / amplitudes[0]) / steps

    return rate(speed * math.sqrt(2 * NU)) / rate(0.0)


def main() -> None:
    lat = D3Q19
    print("| β | " + " | ".join(f"{m} {p}" for m in WAVES for p in ("out", "in")) + " |")
    for beta in (0.0, 0.5, -0.5):
        cells = [f"{relative_rate(lat, m, p, beta):.3f}" for m in WAVES for p in ("out", "in")]
        print(f"| {beta} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

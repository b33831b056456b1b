"""The two-step LW-ACM's strain estimates on the Re 1600 Taylor-Green vortex's initial field
(D3Q19, fp64, u0 = L / 3200, the LES runs' settings), against the exact |S|:

    python benchmarks/two_step_strain.py [N ...]        # default 32 64 128

* pulled: the shipped estimate, the node's pulled second moment (:func:`rule.pulled_stress`),
  −(1 − κ)/3 (∇j + ∇jᵀ) plus ½ Σ c c (c·∇)² f^(e), the curvature of ρ u u, which does not
  shrink with 1 − κ = 6ν;
* difference: ½ Σ_i c_i c_i (f*_i(x − c_i) − f*_i(x + c_i)) less its trace, the odd part of
  f* only (a candidate; docs/DESIGN.md, "LES in the two-step LW-ACM").

Both scaled to |S| = √(2 S:S) by |Q| = 4 ρ ν |S| / √2; printed as rms over rms of the exact.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from thelma_py.lattice import D3Q19
from thelma_py.modules.compute.lwacm import rule


def fields(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """ρ, u (3, n, n, n; axes x, y, z) of the vortex at t = 0, the exact |S|, and ν."""
    length = n / (2 * math.pi)
    u0 = length / 3200
    x = (np.arange(n) + 0.5) / length
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    u = np.stack([u0 * np.sin(X) * np.cos(Y) * np.cos(Z),
                  -u0 * np.cos(X) * np.sin(Y) * np.cos(Z), np.zeros_like(X)])
    rho = 1 + 3 * u0**2 / 16 * (np.cos(2 * X) + np.cos(2 * Y)) * (np.cos(2 * Z) + 2)
    k = u0 / length  # S_xx = −S_yy = ∂x u_x; S_xy = 0 (∂y u_x = −∂x u_y); S_xz, S_yz from ∂z
    sxx = k * np.cos(X) * np.cos(Y) * np.cos(Z)
    sxz = -0.5 * k * np.sin(X) * np.cos(Y) * np.sin(Z)
    syz = 0.5 * k * np.cos(X) * np.sin(Y) * np.sin(Z)
    exact = np.sqrt(2 * (2 * sxx**2 + 2 * sxz**2 + 2 * syz**2))
    return rho, u, exact, u0 * length / 1600


def estimates(n: int) -> dict[str, float]:
    """rms of each estimate over rms of the exact |S| on n³ nodes."""
    lat = D3Q19
    rho, u, exact, nu = fields(n)
    kappa = 1 - 6 * nu
    c = np.asarray(lat.c, dtype=int)
    fstar = []
    for i in range(lat.q):
        cu = sum(c[i, a] * u[a] for a in range(3))
        fstar.append(lat.w[i] * rho * (1 + 3 * cu + 4.5 * cu**2 - 1.5 * (u**2).sum(0))
                     - kappa * 3 * lat.w[i] * rho * cu)
    pulled = [np.roll(fstar[i], tuple(c[i]), axis=(0, 1, 2)) for i in range(lat.q)]
    pushed = [np.roll(fstar[i], tuple(-c[i]), axis=(0, 1, 2)) for i in range(lat.q)]
    mass = sum(pulled)
    q = rule.pulled_stress(lat, pulled, list(rho * u), mass, lambda v, name=None: v)
    shipped = np.sqrt(sum((1.0 if a == b else 2.0) * q[(a, b)] ** 2 for a, b in q))
    moment = [[0.5 * sum(c[i, a] * c[i, b] * (pulled[i] - pushed[i]) for i in range(lat.q))
               for b in range(3)] for a in range(3)]
    trace = sum(moment[a][a] for a in range(3)) / 3
    candidate = np.sqrt(sum((moment[a][b] - (trace if a == b else 0)) ** 2
                            for a in range(3) for b in range(3)))
    rms = lambda a: float(np.sqrt(np.mean(a**2)))  # noqa: E731
    to_strain = math.sqrt(2.0) / (4 * nu)
    return {"pulled": rms(to_strain * shipped / mass) / rms(exact),
            "difference": rms(to_strain * candidate / rho) / rms(exact)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="*", default=[32, 64, 128])
    for n in parser.parse_args().sizes:
        ratios = estimates(n)
        print(f"{n}^3: pulled {ratios['pulled']:.3f}, difference {ratios['difference']:.3f} "
              "of the exact rms |S|")


if __name__ == "__main__":
    main()

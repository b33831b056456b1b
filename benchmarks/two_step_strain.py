"""The two-step LW-ACM's strain estimates on the Re 1600 Taylor-Green vortex's initial field
(D3Q19, fp64, u0 = L / 3200, the LES runs' settings), against the exact |S|, and the vortex run
with candidate eddy viscosities in place of the shipped one (NumPy, a periodic box only):

    python benchmarks/two_step_strain.py [N ...]        # default 32 64 128
    python benchmarks/two_step_strain.py --run 32 --t-end 12 --variant difference

* pulled: the shipped estimate, the node's pulled second moment (:func:`rule.pulled_stress`),
  −(1 − κ)/3 (∇j + ∇jᵀ) plus ½ Σ c c (c·∇)² f^(e), the curvature of ρ u u, which does not
  shrink with 1 − κ = 6ν;
* difference: ½ Σ_i c_i c_i (f*_i(x − c_i) − f*_i(x + c_i)) less its trace, the odd part of
  f* only (a candidate; docs/DESIGN.md, "LES in the two-step LW-ACM").

Both scaled to |S| = √(2 S:S) by |Q| = 4 ρ ν |S| / √2; printed as rms over rms of the exact.

``--run``: the two-step scheme with Smagorinsky LES (C_s = 0.16) whose ν_t comes from
``shipped`` (the engine as it is), ``difference`` (above), or ``grid``: the mean of the squared
forward and backward link differences of c_i·j, each neighbour's c_i·j read from the odd part
of its f*_i and f*_ī (pulled and pushed), 2 S:S = 4.5 Σ_i w_i ((Δ⁺_i)² + (Δ⁻_i)²) − (∇·j)²
(D3Q19's isotropic fourth moment), which sees 2Δx modes as the single step's norm does. The
eddy stress travels in f* as shipped, Π_t = −2 ρ ν_t S with S from the difference moment.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import thelma_py as tp
from thelma_py.codegen.expr import identity_let
from thelma_py.lattice import D3Q19
from thelma_py.modules.compute.lbm import layouts
from thelma_py.modules.compute.lwacm import rule
from thelma_py.modules.compute.lwacm.reference import NumpyLwacm

C_S = 0.16


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


def difference_moment(lattice, pulled, pushed) -> tuple[dict, np.ndarray]:
    """Q_ab (a ≤ b) = ½ Σ_i c_ia c_ib (f*_i(x − c_i) − f*_i(x + c_i)) less its trace, and that
    trace, −(5/3)(1 − κ) ∇·j: the odd part of f* only, −(1 − κ)/3 (∇j + ∇jᵀ) = −4 ρ ν S."""
    c = np.asarray(lattice.c, dtype=int)
    q = {(a, b): 0.5 * sum(c[i, a] * c[i, b] * (pulled[i] - pushed[i])
                           for i in range(lattice.q) if c[i, a] * c[i, b])
         for a in range(3) for b in range(a, 3)}
    trace = sum(q[(a, a)] for a in range(3))
    for a in range(3):
        q[(a, a)] = q[(a, a)] - trace / 3
    return q, trace


def frobenius(q: dict) -> np.ndarray:
    """√(Q:Q) of a symmetric tensor given by its entries a ≤ b."""
    return np.sqrt(sum((1.0 if a == b else 2.0) * v**2 for (a, b), v in q.items()))


def strain_from_moment(q: dict, rho, base: float) -> np.ndarray:
    """|S| = √(2 S:S) of Q = −(1 − κ)/3 · 2 ρ S, ``base`` = 1 − κ."""
    return math.sqrt(2.0) * 3 * frobenius(q) / (2 * rho * base)


def estimates(n: int) -> dict[str, float]:
    """rms of each estimate over rms of the exact |S| on n³ nodes."""
    lat = D3Q19
    rho, u, exact, nu = fields(n)
    kappa = 1 - 6 * nu
    c = np.asarray(lat.c, dtype=int)
    fstar = rule.fstar(lat, rho, list(u), kappa, identity_let)
    pulled = [np.roll(fstar[i], tuple(c[i]), axis=(0, 1, 2)) for i in range(lat.q)]
    pushed = [np.roll(fstar[i], tuple(-c[i]), axis=(0, 1, 2)) for i in range(lat.q)]
    mass = sum(pulled)
    shipped = rule.pulled_stress(lat, pulled, list(rho * u), mass, identity_let)
    rms = lambda a: float(np.sqrt(np.mean(a**2)))  # noqa: E731
    return {"pulled": rms(strain_from_moment(shipped, mass, 6 * nu)) / rms(exact),
            "difference": rms(strain_from_moment(difference_moment(lat, pulled, pushed)[0],
                                                 rho, 6 * nu)) / rms(exact)}


class CandidateLwacm(NumpyLwacm):
    """The two-step NumPy engine with the candidate ν_t of :attr:`variant` (periodic box)."""

    variant = "difference"

    def step(self, n: int = 1) -> None:
        lat, base = self.lattice, 1.0 - float(self.kappa)
        c, w, opposite = np.asarray(lat.c, dtype=int), np.asarray(lat.w), lat.opposite
        for _ in range(n):
            pulled = layouts.stream(lat, self.walls, self.f)
            pushed = layouts.unstream(lat, self.walls, self.f)  # f*_i(x + c_i)
            rho, _, j, post = rule.two_step(lat, list(pulled), list(self.j), self.kappa,
                                            identity_let, self.force)
            q, trace = difference_moment(lat, pulled, pushed)
            if self.variant == "grid":
                squares = 0.0
                for i in range(1, lat.q):
                    scale = 0.5 / (base * 3 * w[i])  # odd part of f*_i over (1 − κ) 3 w_i
                    behind = (pulled[i] - pushed[opposite[i]]) * scale  # c_i·j(x − c_i)
                    ahead = (pushed[i] - pulled[opposite[i]]) * scale  # c_i·j(x + c_i)
                    here = sum(c[i, a] * self.j[a] for a in range(3) if c[i, a])
                    squares = squares + w[i] * ((ahead - here) ** 2 + (here - behind) ** 2)
                divergence = -3 * trace / (5 * base)
                strain = np.sqrt(np.maximum(4.5 * squares - divergence**2, 0.0)) / rho
            else:
                strain = strain_from_moment(q, rho, base)
            stress = {p: 3 * C_S**2 * strain * v / base for p, v in q.items()}  # −2 ρ ν_t S
            extra = rule.stress_populations(lat, stress, identity_let)  # rides in f*, as shipped
            self.f = np.array([p + e for p, e in zip(post, extra, strict=True)],
                              dtype=self.dtype)
            self.j = np.array(j, dtype=self.dtype)


def run_vortex(n: int, t_end: float, variant: str, samples: int = 60) -> None:
    """E_k* and −dE*/dt* of the Re 1600 vortex on n³ nodes to t* = ``t_end``; stops when E_k*
    exceeds 0.25 (diverged)."""
    length = n / (2 * math.pi)
    u0 = length / 3200
    solver = tp.compose("D3Q19", tp.geometry.periodic_box((n,) * 3),
                        tp.plugin("compute", "lwacm", nu=u0 * length / 1600,
                                  les={"name": "smagorinsky", "c_s": C_S}),
                        init=tp.plugin("init", "taylor-green", u0=u0, size=(n,) * 3),
                        device="cpu", precision="float64", check_every=0)
    if variant != "shipped":
        solver.engine.__class__ = CandidateLwacm
        solver.engine.variant = variant
    total = int(round(t_end * length / u0))
    times, energies = [], []
    while True:
        _, u = solver.engine.macroscopic()
        energies.append(0.5 * float(np.mean((np.asarray(u) ** 2).sum(0))) / u0**2)
        times.append(solver.time_step * u0 / length)
        if not energies[-1] <= 0.25 or solver.time_step >= total:
            break
        solver.run(min(max(1, total // samples), total - solver.time_step))
    rates = -np.gradient(np.asarray(energies), np.asarray(times))
    for t, e, r in zip(times, energies, rates, strict=True):
        print(f"{variant} {n}^3 t*={t:.2f} E_k*={e:.5f} -dE/dt*={r:.5f}")
    if not energies[-1] <= 0.25:
        print(f"{variant} {n}^3: diverged at t* {times[-1]:.2f}")
        return
    late = np.flatnonzero(np.asarray(times) >= 1.0)  # the start sheds energy in its first steps
    if not len(late):
        return
    peak = late[np.argmax(rates[late])]
    print(f"{variant} {n}^3: peak -dE/dt* {rates[peak]:.5f} at t* {times[peak]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="*", default=[32, 64, 128])
    parser.add_argument("--run", type=int, help="run the vortex on this many nodes a side")
    parser.add_argument("--t-end", type=float, default=12.0)
    parser.add_argument("--variant", choices=("shipped", "difference", "grid"),
                        default="difference")
    args = parser.parse_args()
    if args.run:
        run_vortex(args.run, args.t_end, args.variant)
        return
    for n in args.sizes:
        ratios = estimates(n)
        print(f"{n}^3: pulled {ratios['pulled']:.3f}, difference {ratios['difference']:.3f} "
              "of the exact rms |S|")


if __name__ == "__main__":
    main()

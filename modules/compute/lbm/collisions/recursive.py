"""Recursive regularized BGK (Malaspinas 2015, arXiv:1505.06900; Coreixas et al. 2017,
Phys. Rev. E 96, 033306).

Like the projection model ("regularized", Latt & Chopard 2006) the post-collision state is
rebuilt from a few Hermite coefficients, but the off-equilibrium part keeps third- and
fourth-order terms, computed recursively from the second-order one and the velocity, and the
equilibrium carries the matching higher-order terms:

    f'_i = f_eq,i + w_i Σ_k H_k(c_i) [G⁻¹ ((1 − ω) a₁ + a_eq,hi)]_k (+ Guo's F/2 + F/2),

over the lattice's product Hermite polynomials H_m(c) = Π_α h_{m_α}(c_α) (h₀ = 1, h₁ = c,
h₂ = c² − c_s²) of orders 2 to 4 that the lattice can hold (:func:`hermite_set`):

    D2Q9   xx yy xy | xxy xyy | xxyy
    D3Q19  xx yy zz xy xz yz | xxy xxz xyy yyz xzz yzz | xxyy xxzz yyzz
    D3Q27  the D3Q19 set and xyz | xxyz xyyz xyzz

(D3Q19 has no velocity with three non-zero components, so no xyz, xxyz... terms.) The
coefficients are a₁⁽²⁾ = Π⁽¹⁾ = Σ c c (f − f_eq + F/2) and recursively
a₁⁽ⁿ⁾_{α₁..αₙ} = Σ_{pairs p<q} Π⁽¹⁾_{α_p α_q} Π_{r≠p,q} u_{α_r} (Malaspinas eq. 31 unrolled),
a_eq⁽ⁿ⁾ = ρ Π_r u_{α_r} for n ≥ 3 (second order: the lattice's own equilibrium). G is the
Gram matrix Σ_i w_i H_k H_l of the set on the lattice: diagonal (m! c_s^{2n}) on the tensor
product lattices D2Q9 and D3Q27, not on D3Q19 (e.g. xxy and yzz overlap), so G⁻¹ makes the
rebuilt populations carry exactly the coefficients a, on every lattice. Mass and momentum are
kept (the set is orthogonal to 1 and c: checked when the model is bound to a lattice). Guo's
forcing stays second order.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.codegen.expr import dot
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import CollisionModel, register_collision

MAX_ORDER = 4


def _h(order: int, c, cs2: float):
    return 1.0 if order == 0 else (c if order == 1 else c * c - cs2)


def hermite_set(lattice: Lattice) -> tuple[tuple[int, ...], ...]:
    """Multi-indices m (each m_α ≤ 2, orders 2..4) of the Hermite polynomials the lattice
    holds: no more non-zero components than its velocities have."""
    reach = int((lattice.c != 0).sum(axis=1).max())
    found = [m for m in itertools.product(range(3), repeat=lattice.d)
             if 2 <= sum(m) <= MAX_ORDER and sum(1 for v in m if v) <= reach]
    return tuple(sorted(found, key=lambda m: (sum(m), [-v for v in m])))


@functools.cache
def basis(lattice: Lattice) -> tuple[tuple[tuple[int, ...], ...], np.ndarray, np.ndarray]:
    """(multi-indices, H of shape (K, Q), G⁻¹ of shape (K, K)), exact zeros kept zero."""
    ms = hermite_set(lattice)
    c = lattice.c.astype(float)
    h = np.array([[math.prod(_h(k, ci[a], lattice.cs2) for a, k in enumerate(m)) for ci in c]
                  for m in ms])
    gram = (h * lattice.w) @ h.T
    inverse = np.linalg.inv(gram)
    inverse[np.abs(inverse) < 1e-12 * np.abs(inverse).max()] = 0.0
    return ms, h, inverse


def _indices(m: Sequence[int]) -> list[int]:
    """The index tuple of a multi-index: (2, 1, 0) -> [0, 0, 1]."""
    return [a for a, k in enumerate(m) for _ in range(k)]


@register_collision("recursive")
@attrs.frozen(kw_only=True)
class Recursive(CollisionModel):
    """Recursive regularized BGK: off-equilibrium and equilibrium up to the fourth-order
    Hermite terms the lattice holds; only ω (the plug-in's ν) to set."""

    def check(self, lattice: Lattice) -> None:
        super().check(lattice)
        _, h, _ = basis(lattice)
        low = np.vstack([np.ones(lattice.q), lattice.c.T.astype(float)])
        if np.abs((h * lattice.w) @ low.T).max() > 1e-12:
            raise ValueError(f"recursive: the Hermite set of {lattice.name} is not orthogonal "
                             "to mass and momentum")

    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        raise TypeError("the recursive model needs the node's ρ and u: call relax_at")

    def relax_at(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus,
                 rho, u: Sequence) -> list:
        ms, h, inverse = basis(lattice)
        c = lattice.c
        stress = {}
        for a in range(lattice.d):
            for b in range(a, lattice.d):
                stress[a, b] = stress[b, a] = let(dot(c[:, a] * c[:, b], g))
        keep = let(1.0 - omega)
        coefficients = []
        for m in ms:
            idx = _indices(m)
            if len(idx) == 2:
                coefficients.append(keep * stress[idx[0], idx[1]])
                continue
            off = 0.0
            for p, q in itertools.combinations(range(len(idx)), 2):
                term = stress[idx[p], idx[q]]
                for r, axis in enumerate(idx):
                    if r not in (p, q):
                        term = term * u[axis]
                off = term if isinstance(off, float) else off + term
            eq = rho
            for axis in idx:
                eq = eq * u[axis]
            coefficients.append(let(keep * off + eq))
        scaled = [let(dot(row, coefficients)) for row in inverse]
        return [gi - dot(float(lattice.w[i]) * h[:, i], scaled) for i, gi in enumerate(g)]

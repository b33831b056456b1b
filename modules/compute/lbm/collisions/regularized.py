"""Regularized BGK (Latt & Chopard 2006): before relaxing, the non-equilibrium part is replaced
by its projection on the second-order Hermite polynomials,

    g_i → P g_i = w_i / (2 c_s⁴) Σ_ab (c_ia c_ib − c_s² δ_ab) Π_ab,   Π_ab = Σ_j c_ja c_jb g_j,

so f' = f_eq + (1 − ω) P g (+ the forcing terms): K g = g − (1 − ω) P g. Everything but the
viscous stress (the ghost, non-hydrodynamic moments) is reset to equilibrium each step, which
keeps BGK stable much closer to τ = ½. Mass and momentum are conserved: P g has neither.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from thelma_py.codegen.expr import dot
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import CollisionModel, register_collision


@register_collision("regularized")
@attrs.frozen(kw_only=True)
class Regularized(CollisionModel):
    """Regularized BGK: only the non-equilibrium stress Π survives the collision."""

    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        c, d, cs2 = lattice.c, lattice.d, lattice.cs2
        pairs = [(a, b) for a in range(d) for b in range(a, d)]
        stress = [let(dot(c[:, a] * c[:, b], g)) for a, b in pairs]
        keep = let(omega - 1.0)
        out = []
        for i, gi in enumerate(g):
            hermite = [(1.0 if a == b else 2.0) * (c[i, a] * c[i, b] - (cs2 if a == b else 0.0))
                       for a, b in pairs]
            weight = float(lattice.w[i]) / (2.0 * cs2 * cs2)
            projected = dot([weight * h for h in hermite], stress)
            out.append(gi + keep * projected)
        return out

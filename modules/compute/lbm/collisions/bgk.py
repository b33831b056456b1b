"""BGK: one relaxation rate ω = 1/τ for every population (Bhatnagar, Gross & Krook 1954)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import CollisionModel, register_collision


@register_collision("bgk")
@attrs.frozen(kw_only=True)
class Bgk(CollisionModel):
    """BGK: K = ω I. No parameters beyond the plug-in's ν."""

    sturdier = "collision='mrt' (or 'trt', 'regularized')"

    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        return [omega * gi for gi in g]

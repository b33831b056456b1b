"""TRT: ω⁺ on the even and ω⁻ on the odd part of each pair of opposite populations
(Ginzburg, Verhaeghe & d'Humières 2008)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import (
    CollisionModel,
    register_collision,
    trt_omega_minus,
)


@register_collision("trt")
@attrs.frozen(kw_only=True)
class Trt(CollisionModel):
    """TRT: ω⁺ = 1/τ sets the viscosity; ω⁻ follows from the magic parameter Λ."""

    sturdier = "collision='mrt'"

    magic: float = attrs.field(default=3.0 / 16.0, validator=attrs.validators.gt(0.0))
    """Λ = (1/ω⁺ − ½)(1/ω⁻ − ½); 3/16 puts halfway bounce-back walls exactly for Poiseuille,
    1/4 gives ω⁻ = 1 at ω⁺ = 1."""

    def omega_minus(self, omega: float) -> float:
        return trt_omega_minus(omega, self.magic)

    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        out = [omega * g[0]] + [None] * (lattice.q - 1)
        for i, j in enumerate(lattice.opposite):
            if i == 0 or j < i:
                continue
            even = let(0.5 * omega * (g[i] + g[j]))
            odd = let(0.5 * omega_minus * (g[i] - g[j]))
            out[i], out[j] = even + odd, even - odd
        return out

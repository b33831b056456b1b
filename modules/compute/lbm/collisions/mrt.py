"""MRT: relaxation in an orthogonal moment space, K = M⁻¹ S M (d'Humières et al. 2002 for
D3Q19, Lallemand & Luo 2000 for D2Q9; the bases are :attr:`Lattice.mrt`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.codegen.expr import dot
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import (
    CollisionModel,
    register_collision,
    trt_omega_minus,
)

ODD_MOMENTS = ("qx", "qy", "qz", "mx", "my", "mz")
"""Moments that ``odd='magic'`` relaxes at ω⁻."""
ODD_RATE = -1.0
"""In :meth:`Mrt.diagonal`: this moment relaxes at the run-time ω⁻ (TRT's odd rate)."""


def _check_rates(instance, attribute, value: dict) -> None:
    for name, rate in value.items():
        if not (isinstance(name, str) and isinstance(rate, int | float)
                and math.isfinite(rate)):
            raise ValueError(f"MRT rates are numbers by moment name, got {name!r}: {rate!r}")


@register_collision("mrt")
@attrs.frozen(kw_only=True)
class Mrt(CollisionModel):
    """MRT: the shear moments relax at ω = 1/τ, the others at fixed rates."""

    rates: dict = attrs.field(factory=dict, converter=dict, validator=_check_rates)
    """Relaxation rates by moment name (``Lattice.mrt.names``), overriding the defaults."""
    odd: str = attrs.field(default="published",
                           validator=attrs.validators.in_(("published", "magic")))
    """Rate of the odd non-conserved moments (energy flux q, third-order m): 'published' keeps
    the constants of d'Humières et al. (2002), stable in under-resolved turbulence (3D
    Taylor-Green at Re = 1600); 'magic' relaxes them at TRT's ω⁻ for Λ = ``magic``
    (Ginzburg & d'Humières 2003: halfway walls at the same place for every ν, and no almost
    undamped mode at D3Q19 Zou-He edges, where the published s_m = 1.98 diverges), but ω⁻ → 0
    as τ → ½, so at high Reynolds numbers those moments are hardly damped (the Re = 1600
    Taylor-Green vortex diverged by t* = 1.4). Use 'magic' for ducts with Zou-He faces at
    moderate Re. ``rates`` overrides either by name."""
    magic: float = attrs.field(default=3.0 / 16.0, validator=attrs.validators.gt(0.0))
    """Λ of ω⁻ for ``odd='magic'``."""

    def omega_minus(self, omega: float) -> float:
        return trt_omega_minus(omega, self.magic)

    def unsupported(self, lattice: Lattice) -> str | None:
        if lattice.mrt is None:
            return (f"MRT is available for D2Q9 and D3Q19, not {lattice.name}; "
                    "use collision='trt' or 'bgk'")
        return None

    def check(self, lattice: Lattice) -> None:
        super().check(lattice)
        self.diagonal(lattice)  # unknown moment names raise here

    def diagonal(self, lattice: Lattice) -> tuple[float, ...]:
        """The diagonal of S: NaN where the rate is the run-time ω and :data:`ODD_RATE` where
        it is the run-time ω⁻."""
        s = lattice.mrt.rates(float("nan"), **self.rates)
        if self.odd == "magic":
            for k, name in enumerate(lattice.mrt.names):
                if name in ODD_MOMENTS and name not in self.rates:
                    s[k] = ODD_RATE
        return tuple(float(v) for v in s)

    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        m = lattice.mrt.matrix
        norms = (m * m).sum(axis=1)
        relaxed = []
        for k, s in enumerate(self.diagonal(lattice)):
            if s == 0.0:
                relaxed.append(0.0)
                continue
            mk = dot(m[k], g)
            rate = omega if np.isnan(s) else (omega_minus if s == ODD_RATE else float(s))
            relaxed.append(let(mk * (rate / float(norms[k]))))
        return [dot(m[:, i], relaxed) for i in range(lattice.q)]

"""Collision operators written once, for NumPy arrays and for traced CUDA expressions.

Every function takes populations as a list indexed by lattice direction, and a ``let`` callable
that names intermediates (identity for NumPy, :meth:`Emitter.let` for CUDA). Run-time scalars
(ω, ω⁻) arrive as values: Python floats for NumPy, kernel-argument names for CUDA.

The post-collision state is f' = f − K (f − f_eq + F/2) + F, with the relaxation operator K:
BGK ωI; TRT ω⁺ on the even and ω⁻ on the odd part of each pair (i, ī); MRT M⁻¹ S M. F is Guo's
forcing term for a uniform acceleration g, and the velocity is then u = (Σ c f)/ρ + g/2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.codegen.expr import dot
from thelma_py.lattice import Lattice

COLLISIONS = ("bgk", "trt", "mrt")
ODD_RATE = -1.0
"""In ``Relaxation.mrt_rates``: this moment relaxes at the run-time ω⁻ (TRT's odd rate)."""


def moments(lattice: Lattice, f: Sequence, let: Callable, force: Sequence[float] | None = None):
    """Density and velocity from populations: (ρ, [u_x, u_y, ...])."""
    rho = let(sum(f[1:], f[0]), "rho")
    inv_rho = let(1.0 / rho, "inv_rho")
    u = []
    for a, axis in enumerate("xyz"[: lattice.d]):
        j = dot(lattice.c[:, a], f)
        ua = j * inv_rho
        if force is not None and force[a] != 0.0:
            ua = ua + 0.5 * force[a]
        u.append(let(ua, f"u{axis}"))
    return rho, u


def guo_forcing(lattice: Lattice, rho, u: Sequence, force: Sequence[float]) -> list:
    """Guo, Zheng & Shi (2002) source term F_i for a uniform acceleration ``force``."""
    out = []
    for ci, wi in zip(lattice.c, lattice.w, strict=True):
        cg = sum(float(c) * g for c, g in zip(ci, force, strict=True))
        ug = sum(ua * g for ua, g in zip(u, force, strict=True) if g != 0.0)
        cu = dot(ci, u)
        out.append(float(wi) * rho * (3.0 * (cg - ug) + 9.0 * cu * cg))
    return out


@attrs.frozen
class Relaxation:
    """The relaxation operator K, built from a collision name and the lattice."""

    lattice: Lattice
    kind: str = attrs.field(validator=attrs.validators.in_(COLLISIONS))
    mrt_rates: tuple[float, ...] | None = None
    """For MRT: the full diagonal of S, with NaN where the rate is the run-time ω and
    :data:`ODD_RATE` where it is the run-time ω⁻."""

    def apply(self, g: Sequence, let: Callable, omega, omega_minus=None) -> list:
        """K g for non-equilibrium populations ``g``."""
        lat = self.lattice
        if self.kind == "bgk":
            return [omega * gi for gi in g]
        if self.kind == "trt":
            out = [omega * g[0]] + [None] * (lat.q - 1)
            for i, j in enumerate(lat.opposite):
                if i == 0 or j < i:
                    continue
                even = let(0.5 * omega * (g[i] + g[j]))
                odd = let(0.5 * omega_minus * (g[i] - g[j]))
                out[i], out[j] = even + odd, even - odd
            return out
        basis = lat.mrt
        m = basis.matrix
        norms = (m * m).sum(axis=1)
        relaxed = []
        for k, s in enumerate(self.mrt_rates):
            if s == 0.0:
                relaxed.append(0.0)
                continue
            mk = dot(m[k], g)
            rate = omega if np.isnan(s) else (omega_minus if s == ODD_RATE else float(s))
            relaxed.append(let(mk * (rate / float(norms[k]))))
        return [dot(m[:, i], relaxed) for i in range(lat.q)]


def collide(relax: Relaxation, f: Sequence, let: Callable, omega, omega_minus=None,
            force: Sequence[float] | None = None):
    """One collision: returns (post-collision populations, ρ, u)."""
    lat = relax.lattice
    rho, u = moments(lat, f, let, force)
    feq = lat.equilibrium(rho, u)
    forcing = guo_forcing(lat, rho, u, force) if force is not None and any(force) else None
    if forcing is None:
        neq = [let(fi - ei) for fi, ei in zip(f, feq, strict=True)]
    else:
        neq = [let(fi - ei + 0.5 * Fi) for fi, ei, Fi in zip(f, feq, forcing, strict=True)]
    relaxed = relax.apply(neq, let, omega, omega_minus)
    post = [fi - ri for fi, ri in zip(f, relaxed, strict=True)]
    if forcing is not None:
        post = [p + Fi for p, Fi in zip(post, forcing, strict=True)]
    return post, rho, u


def wall_momentum(lattice: Lattice, i: int, velocity: Sequence, rho_wall) -> object:
    """Ladd's moving-wall term for population i leaving a wall: 2 w_i ρ_w (c_i · u_w) / c_s²."""
    cu = dot(lattice.c[i], velocity)
    return (2.0 * float(lattice.w[i]) / lattice.cs2) * rho_wall * cu


def trt_omega_minus(omega: float, magic: float) -> float:
    """ω⁻ from ω⁺ and the magic parameter Λ = (1/ω⁺ − ½)(1/ω⁻ − ½)."""
    return 1.0 / (magic / (1.0 / omega - 0.5) + 0.5)

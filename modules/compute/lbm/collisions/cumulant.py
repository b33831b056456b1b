"""Cumulant collision on D3Q27 (Geier, Schönherr, Pasquali & Krafczyk 2015, Comput. Math. Appl.
70, 507–547; limiter from Geier, Pasquali & Schönherr 2017, J. Comput. Phys. 348, 862–888).

The populations go to central moments κ_abc = Σ (c_x − u_x)^a (c_y − u_y)^b (c_z − u_z)^c f
by three sweeps of the 1D "Chimera" transform (z, y, then x), central moments to cumulants C
(orders 4–6 by the cumulant relations, orders ≤ 3 are equal), each group of cumulants relaxes
with its own rate towards its equilibrium (ρ/3 δ_ab at order 2, zero above), then back again.

Rates (``omega_*`` names follow the 2015 paper's ω1 … ω10): ω1 is the run-time ω = 1/τ
(shear viscosity ν = (1/ω − ½)/3); ``omega_bulk`` (ω2) relaxes the trace of the second-order
cumulants (bulk viscosity); ``omega_3``/``omega_4``/``omega_5`` the third-order sums,
differences and C_111; ``omega_6``/``omega_7``/``omega_8`` the fourth-order differences,
trace and C_211-like; ``omega_9`` order 5 and ``omega_10`` C_222. All default to 1 (the
2015 paper's choice for under-resolved flows: every higher cumulant is set to its
equilibrium each step). ``limiter`` (λ > 0, None: off) is the 2017 paper's limiter on the
third-order rates, ω' = ω + (1 − ω) |C| / (ρ λ + |C|): a large third-order cumulant relaxes
faster (at rate 1 in the limit), the stabilizer of under-resolved runs.

``parametrized=True`` is the 2017 paper's parametrization for fourth-order accurate diffusion
(the "K17" model of VirtualFluids): ω3, ω4, ω5 become functions of ω1 (its eqs. 111–113 with
ω2 = 1, so ``omega_bulk`` must stay 1) and the fourth-order cumulants relax (at ω6, ω7, ω8)
towards non-zero equilibria proportional to the velocity gradients, with the factors A and B of
its eqs. 115–116 (the gradients come from the pre-collision second-order cumulants). The three
rates lie in (0, 2) only for 1.75 < ω1 < 2 (ν < 0.024) and 1 < ω1 < 1.43: elsewhere (ω4 has
a pole at ω1 = 1.556, A and B at ω1 = 1) the run diverges. As ω1 → 2 they go to zero
(ω3 = 0.052 at τ = 0.5027), which is why the paper pairs them with the limiter.

A body force (Guo-like, second order): u includes g/2 (:func:`..collision.moments`), so the
pre-collision first central moments are −ρ g/2; the collision sets them to +ρ g/2, which adds
the momentum ρ g per step.

``galilean_correction=True`` adds the 2015 paper's correction of the second-order diagonal
cumulants by velocity derivatives (eqs. 55–57; it affects normal stresses at high Mach number).

Not implemented: the 2017 paper's rates for ω2 ≠ 1 (``parametrized`` needs ω2 = 1); the
transform works on the full populations (the "well-conditioned" variant that subtracts the
lattice weights is not used).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from thelma_py.codegen.expr import absolute, identity_let
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import CollisionModel, register_collision

_RATE = attrs.validators.and_(attrs.validators.gt(0.0), attrs.validators.lt(2.0))


K17 = {"name": "cumulant", "parametrized": True, "limiter": 0.01}
"""Geier, Pasquali & Schönherr (2017)'s parametrized cumulant with its third-order limiter
(λ = 0.01, the paper's value): the "K17" model of the flows and of ``thelma bench
--collision k17``."""


def _rate(default: float = 1.0):
    return attrs.field(default=default, validator=_RATE)


def _positive_or_none(instance, attribute, value) -> None:
    if value is not None and not (isinstance(value, int | float) and value > 0.0):
        raise ValueError(f"limiter must be a positive number (λ) or None, got {value!r}")


def chimera_forward(k0, k1, k2, u, let: Callable):
    """One 1D sweep: values at c = −1, 0, +1 → central moments of orders 0, 1, 2 about u."""
    m0 = let(k0 + k1 + k2)
    m1 = let(k2 - k0 - u * m0)
    m2 = let(k2 + k0 - 2.0 * u * (k2 - k0) + u * u * m0)
    return m0, m1, m2


def chimera_backward(m0, m1, m2, u, let: Callable):
    """The inverse sweep: central moments of orders 0, 1, 2 about u → values at c = −1, 0, +1."""
    raw1 = let(m1 + u * m0)  # Σ c f
    raw2 = let(m2 + 2.0 * u * m1 + u * u * m0)  # Σ c² f
    return let(0.5 * (raw2 - raw1)), let(m0 - raw2), let(0.5 * (raw2 + raw1))


def _sweep(cube: dict, axis: int, u, let: Callable, step, src: tuple, dst: tuple) -> dict:
    """Apply ``step`` along ``axis`` to every line of the 3×3×3 cube: entries ``src`` (indices on
    that axis) in, entries ``dst`` out."""
    out = {}
    for key in cube:
        if key[axis] != src[0]:
            continue
        line = [cube[key[:axis] + (v,) + key[axis + 1:]] for v in src]
        for v, value in zip(dst, step(*line, u, let), strict=True):
            out[key[:axis] + (v,) + key[axis + 1:]] = value
    return out


def central_moments(lattice: Lattice, f: Sequence, u: Sequence, let: Callable) -> dict:
    """κ_abc (a, b, c ∈ 0..2, not divided by ρ) by Chimera sweeps over z, y, x."""
    cube = {tuple(int(v) for v in c): fi for c, fi in zip(lattice.c, f, strict=True)}
    for axis in (2, 1, 0):
        cube = _sweep(cube, axis, u[axis], let, chimera_forward, (-1, 0, 1), (0, 1, 2))
    return cube


def populations(lattice: Lattice, kappa: dict, u: Sequence, let: Callable) -> list:
    """The inverse of :func:`central_moments`: populations in lattice order."""
    cube = kappa
    for axis in (0, 1, 2):
        cube = _sweep(cube, axis, u[axis], let, chimera_backward, (0, 1, 2), (-1, 0, 1))
    return [cube[tuple(int(v) for v in c)] for c in lattice.c]


def _perm(a: int, b: int, c: int, order: tuple) -> tuple:
    """Index (a, b, c) with its axes permuted: order = (axis of a, axis of b, axis of c)."""
    key = [0, 0, 0]
    for value, axis in zip((a, b, c), order, strict=True):
        key[axis] = value
    return tuple(key)


PERMUTATIONS = ((0, 1, 2), (1, 2, 0), (2, 0, 1))
"""Cyclic axis orders: x→x, y, z; the 4th- and 5th-order relations are written for the first and
rotated."""


def cumulants_from_central(k: dict, inv_rho, let: Callable) -> dict:
    """Cumulants C_abc (as ρ-weighted quantities) of orders 4–6 from central moments; orders ≤ 3
    are the central moments themselves."""
    c = dict(k)
    for x, y, z in PERMUTATIONS:
        def key(a, b, cc, order=(x, y, z)):
            return _perm(a, b, cc, order)
        # C_211 = κ_211 − (κ_200 κ_011 + 2 κ_110 κ_101)/ρ, and its rotations
        c[key(2, 1, 1)] = let(k[key(2, 1, 1)] - (k[key(2, 0, 0)] * k[key(0, 1, 1)]
                                                 + 2.0 * k[key(1, 1, 0)] * k[key(1, 0, 1)])
                              * inv_rho)
        # C_220 = κ_220 − (κ_200 κ_020 + 2 κ_110²)/ρ
        c[key(2, 2, 0)] = let(k[key(2, 2, 0)] - (k[key(2, 0, 0)] * k[key(0, 2, 0)]
                                                 + 2.0 * k[key(1, 1, 0)] * k[key(1, 1, 0)])
                              * inv_rho)
        # C_122 = κ_122 − (κ_002 κ_120 + κ_020 κ_102 + 4 κ_011 κ_111
        #                  + 2 (κ_101 κ_021 + κ_110 κ_012))/ρ
        c[key(1, 2, 2)] = let(k[key(1, 2, 2)] - (k[key(0, 0, 2)] * k[key(1, 2, 0)]
                                                 + k[key(0, 2, 0)] * k[key(1, 0, 2)]
                                                 + 4.0 * k[key(0, 1, 1)] * k[key(1, 1, 1)]
                                                 + 2.0 * (k[key(1, 0, 1)] * k[key(0, 2, 1)]
                                                          + k[key(1, 1, 0)] * k[key(0, 1, 2)]))
                              * inv_rho)
    c[(2, 2, 2)] = let(k[(2, 2, 2)] - _sixth(k, inv_rho))
    return c


def _sixth(k: dict, inv_rho):
    """κ_222 − C_222, in terms of lower central moments."""
    second = (4.0 * k[(1, 1, 1)] * k[(1, 1, 1)]
              + k[(2, 0, 0)] * k[(0, 2, 2)] + k[(0, 2, 0)] * k[(2, 0, 2)]
              + k[(0, 0, 2)] * k[(2, 2, 0)]
              + 4.0 * (k[(0, 1, 1)] * k[(2, 1, 1)] + k[(1, 0, 1)] * k[(1, 2, 1)]
                       + k[(1, 1, 0)] * k[(1, 1, 2)])
              + 2.0 * (k[(1, 2, 0)] * k[(1, 0, 2)] + k[(2, 1, 0)] * k[(0, 1, 2)]
                       + k[(2, 0, 1)] * k[(0, 2, 1)]))
    third = (16.0 * k[(1, 1, 0)] * k[(1, 0, 1)] * k[(0, 1, 1)]
             + 4.0 * (k[(1, 0, 1)] * k[(1, 0, 1)] * k[(0, 2, 0)]
                      + k[(0, 1, 1)] * k[(0, 1, 1)] * k[(2, 0, 0)]
                      + k[(1, 1, 0)] * k[(1, 1, 0)] * k[(0, 0, 2)])
             + 2.0 * k[(2, 0, 0)] * k[(0, 2, 0)] * k[(0, 0, 2)])
    return second * inv_rho - third * inv_rho * inv_rho


def central_from_cumulants(c: dict, inv_rho, let: Callable) -> dict:
    """The inverse of :func:`cumulants_from_central` (lower orders first)."""
    k = dict(c)
    for x, y, z in PERMUTATIONS:
        def key(a, b, cc, order=(x, y, z)):
            return _perm(a, b, cc, order)
        k[key(2, 1, 1)] = let(c[key(2, 1, 1)] + (k[key(2, 0, 0)] * k[key(0, 1, 1)]
                                                 + 2.0 * k[key(1, 1, 0)] * k[key(1, 0, 1)])
                              * inv_rho)
        k[key(2, 2, 0)] = let(c[key(2, 2, 0)] + (k[key(2, 0, 0)] * k[key(0, 2, 0)]
                                                 + 2.0 * k[key(1, 1, 0)] * k[key(1, 1, 0)])
                              * inv_rho)
    for x, y, z in PERMUTATIONS:
        def key(a, b, cc, order=(x, y, z)):
            return _perm(a, b, cc, order)
        k[key(1, 2, 2)] = let(c[key(1, 2, 2)] + (k[key(0, 0, 2)] * k[key(1, 2, 0)]
                                                 + k[key(0, 2, 0)] * k[key(1, 0, 2)]
                                                 + 4.0 * k[key(0, 1, 1)] * k[key(1, 1, 1)]
                                                 + 2.0 * (k[key(1, 0, 1)] * k[key(0, 2, 1)]
                                                          + k[key(1, 1, 0)] * k[key(0, 1, 2)]))
                              * inv_rho)
    k[(2, 2, 2)] = let(c[(2, 2, 2)] + _sixth(k, inv_rho))
    return k


def parametrized_rates(omega, let: Callable) -> tuple:
    """ω3, ω4, ω5 of Geier, Pasquali & Schönherr (2017), eqs. 111–113 with ω2 = 1: the
    third-order rates that make diffusion fourth-order accurate (all → 0 as ω → 2)."""
    w2 = omega * omega
    rate_3 = let(8.0 * (omega - 2.0) * (1.0 + 2.0 * omega) / (7.0 * w2 - 14.0 * omega - 8.0))
    rate_4 = let(8.0 * (omega - 2.0) * (4.0 * omega - 7.0) / (9.0 * w2 - 50.0 * omega + 56.0))
    rate_5 = let(24.0 * (omega - 2.0) * (3.0 * w2 - 7.0 * omega - 2.0)
                 / (29.0 * w2 * omega - 130.0 * w2 + 152.0 * omega + 48.0))
    return rate_3, rate_4, rate_5


def diagonal_gradients(c: dict, rho, omega, omega_bulk, let: Callable) -> tuple:
    """ρ ∂_x u_x, ρ ∂_y u_y, ρ ∂_z u_z from the pre-collision second-order cumulants: the
    differences C_xx − C_yy relax at ω (−ρ/(3ω) · 2(∂_x u_x − ∂_y u_y) off equilibrium), the
    trace at ω2 (−2ρ/(3 ω2) ∇·u)."""
    xx, yy, zz = c[(2, 0, 0)], c[(0, 2, 0)], c[(0, 0, 2)]
    dxy, dxz = let(xx - yy), let(xx - zz)
    dxux = let(-0.5 * omega * (dxy + dxz) + 0.5 * omega_bulk * (rho - xx - yy - zz))
    return dxux, let(dxux + 1.5 * omega * dxy), let(dxux + 1.5 * omega * dxz)


def fourth_order_factors(omega, let: Callable) -> tuple:
    """(1/ω − ½)(2/3) A and (1/ω − ½)(1/3) B of the 2017 paper's fourth-order equilibria
    (A and B of its eqs. 115–116 with ω2 = 1)."""
    w2 = omega * omega
    factor = let(1.0 / omega - 0.5)
    a = let(factor * (2.0 / 3.0) * (4.0 + 2.0 * omega - 3.0 * w2)
            / (5.0 * w2 - 7.0 * omega + 2.0))
    b = let(factor * (1.0 / 3.0) * (4.0 + 28.0 * omega - 14.0 * w2)
            / (15.0 * w2 - 21.0 * omega + 6.0))
    return a, b


def fourth_order_equilibria(c: dict, rho, omega, let: Callable, factors: tuple) -> dict:
    """The 2017 paper's fourth-order cumulant equilibria (eqs. 43–48), ρ-weighted like ``c``:
    C_220 = −(1/ω − ½)(2/3) A ρ(∂_x u_x + ∂_y u_y), C_211 = −(1/ω − ½)(1/3) B ρ(∂_y u_z +
    ∂_z u_y) and rotations, with ``factors`` of :func:`fourth_order_factors`, the gradients
    from the pre-collision second-order cumulants (C_ab^neq = −ρ/(3ω) (∂_a u_b + ∂_b u_a), the
    trace at ω2 = 1)."""
    a, b = factors
    dxux, dyuy, dzuz = diagonal_gradients(c, rho, omega, 1.0, let)
    shear = {axes: let(-3.0 * omega * c[axes]) for axes in ((1, 1, 0), (1, 0, 1), (0, 1, 1))}
    return {(2, 2, 0): let(-a * (dxux + dyuy)), (2, 0, 2): let(-a * (dxux + dzuz)),
            (0, 2, 2): let(-a * (dyuy + dzuz)),
            (1, 1, 2): let(-b * shear[(1, 1, 0)]), (1, 2, 1): let(-b * shear[(1, 0, 1)]),
            (2, 1, 1): let(-b * shear[(0, 1, 1)])}


@register_collision("cumulant")
@attrs.frozen(kw_only=True)
class Cumulant(CollisionModel):
    """Cumulant LBM (Geier et al. 2015) on D3Q27: ω = 1/τ on the shear cumulants, fixed rates
    (default 1) on the others, optional third-order limiter (Geier et al. 2017)."""

    omega_bulk: float = _rate()
    """ω2: the trace C_200 + C_020 + C_002 (bulk viscosity ζ = 2/9 (1/ω2 − ½))."""
    omega_3: float = _rate()
    """Third order: C_120 + C_102 and its rotations."""
    omega_4: float = _rate()
    """Third order: C_120 − C_102 and its rotations."""
    omega_5: float = _rate()
    """Third order: C_111."""
    omega_6: float = _rate()
    """Fourth order: C_220 − 2 C_202 + C_022 and C_220 + C_202 − 2 C_022."""
    omega_7: float = _rate()
    """Fourth order: C_220 + C_202 + C_022."""
    omega_8: float = _rate()
    """Fourth order: C_211, C_121, C_112."""
    omega_9: float = _rate()
    """Fifth order: C_122, C_212, C_221."""
    omega_10: float = _rate()
    """Sixth order: C_222."""
    limiter: float | None = attrs.field(default=None, validator=_positive_or_none)
    """λ of the 2017 limiter on ω_3, ω_4, ω_5 (None: off; the paper used λ = 0.01 … 1e-3)."""
    parametrized: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Geier et al. 2017's fourth-order diffusion: ω3, ω4, ω5 from ω1 and the fourth-order
    equilibria A, B (``omega_3``/``omega_4``/``omega_5`` unused, ``omega_bulk`` must be 1)."""

    galilean_correction: bool = attrs.field(default=False,
                                            validator=attrs.validators.instance_of(bool))
    """The 2015 paper's correction of the diagonal second-order cumulants (its eqs. 55–57,
    eqs. 33–35 of the 2017 paper): −3 (1 − ω/2) (u_x² ρ∂_x u_x − u_y² ρ∂_y u_y) on the
    differences, likewise at ω2 on the trace, removing the O(u²) error of the normal-stress
    viscosity that D3Q27's c_x³ = c_x leaves (what makes it Mach-dependent)."""

    def __attrs_post_init__(self) -> None:
        if self.parametrized and (self.omega_bulk != 1.0 or
                                  (self.omega_3, self.omega_4, self.omega_5) != (1.0, 1.0, 1.0)):
            raise ValueError("cumulant parametrized=True sets omega_3/4/5 from omega and needs "
                             "omega_bulk = 1 (the 2017 formulas for ω2 = 1); leave them at 1")

    def unsupported(self, lattice: Lattice) -> str | None:
        if lattice.name != "D3Q27":
            return (f"the cumulant model exists for D3Q27 only, not {lattice.name}; "
                    "use lattice='D3Q27' (or collision='mrt', 'trt', 'regularized', 'bgk')")
        return None

    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        raise TypeError("the cumulant model collides whole populations (post_collision), "
                        "not non-equilibrium parts")

    def uniforms(self, omega, let: Callable = identity_let) -> tuple:
        """Parametrized: ω3, ω4, ω5 (:func:`parametrized_rates`) and the two factors of the
        fourth-order equilibria (:func:`fourth_order_factors`), six divisions that a kernel
        would otherwise evaluate at every node (NOTES run 63)."""
        if not self.parametrized:
            return ()
        return (*parametrized_rates(omega, let), *fourth_order_factors(omega, let))

    def post_collision(self, lattice: Lattice, f: Sequence, rho, u: Sequence, let: Callable,
                       omega, omega_minus, force: Sequence[float] | None,
                       uniforms: tuple | None = None) -> list:
        inv_rho = let(1.0 / rho)
        kappa = central_moments(lattice, f, u, let)
        c = cumulants_from_central(kappa, inv_rho, let)
        post = self._relax_cumulants(c, rho, u, omega, force, let,
                                     uniforms or self.uniforms(omega, let))
        kappa = central_from_cumulants(post, inv_rho, let)
        return populations(lattice, kappa, u, let)

    def _third_rate(self, rate: float, value, rho, let: Callable):
        if self.limiter is None or (isinstance(rate, float) and rate == 1.0):
            return rate
        size = let(absolute(value))  # |C|
        # |C| times the reciprocal of λρ + |C| ≥ λρ, not |C| / (λρ + |C|): a division checks
        # its dividend too and takes a slow path where |C| is 0 or tiny (a uniform stream)
        return let(rate + (1.0 - rate) * size * (1.0 / (self.limiter * rho + size)))

    def _relax_cumulants(self, c: dict, rho, u: Sequence, omega, force, let: Callable,
                         uniforms: tuple) -> dict:
        post = {(0, 0, 0): rho}
        for axis in range(3):
            key = [0, 0, 0]
            key[axis] = 1
            g = 0.0 if force is None else float(force[axis])
            post[tuple(key)] = 0.5 * g * rho if g != 0.0 else 0.0
        keep = let(1.0 - omega)
        # second order: off-diagonal and the two diagonal differences at ω, the trace at ω2
        for key in ((1, 1, 0), (1, 0, 1), (0, 1, 1)):
            post[key] = let(keep * c[key])
        xx, yy, zz = c[(2, 0, 0)], c[(0, 2, 0)], c[(0, 0, 2)]
        dxy = let(keep * (xx - yy))
        dxz = let(keep * (xx - zz))
        trace = let(self.omega_bulk * rho + (1.0 - self.omega_bulk) * (xx + yy + zz))
        if self.galilean_correction:
            gx, gy, gz = diagonal_gradients(c, rho, omega, self.omega_bulk, let)
            gx, gy, gz = let(u[0] * u[0] * gx), let(u[1] * u[1] * gy), let(u[2] * u[2] * gz)
            weight = let(3.0 * (1.0 - 0.5 * omega))
            dxy = let(dxy - weight * (gx - gy))
            dxz = let(dxz - weight * (gx - gz))
            trace = let(trace - 3.0 * (1.0 - 0.5 * self.omega_bulk) * (gx + gy + gz))
        post[(2, 0, 0)] = let((dxy + dxz + trace) * (1.0 / 3.0))
        post[(0, 2, 0)] = let(post[(2, 0, 0)] - dxy)
        post[(0, 0, 2)] = let(post[(2, 0, 0)] - dxz)
        # third order: sums at ω3, differences at ω4, C_111 at ω5 (limited if λ is set)
        rate_3, rate_4, rate_5 = (uniforms[:3] if self.parametrized
                                  else (self.omega_3, self.omega_4, self.omega_5))
        for x, y, z in PERMUTATIONS:
            a, b = _perm(1, 2, 0, (x, y, z)), _perm(1, 0, 2, (x, y, z))
            total = let(c[a] + c[b])
            diff = let(c[a] - c[b])
            total = let((1.0 - self._third_rate(rate_3, total, rho, let)) * total)
            diff = let((1.0 - self._third_rate(rate_4, diff, rho, let)) * diff)
            post[a] = let(0.5 * (total + diff))
            post[b] = let(0.5 * (total - diff))
        xyz = c[(1, 1, 1)]
        post[(1, 1, 1)] = let((1.0 - self._third_rate(rate_5, xyz, rho, let)) * xyz)
        # fourth order: two differences at ω6, the trace at ω7, C_211-like at ω8, towards zero
        # or (parametrized) towards the 2017 equilibria
        eq = (fourth_order_equilibria(c, rho, omega, let, uniforms[3:]) if self.parametrized
              else None)
        a, b, cc = c[(2, 2, 0)], c[(2, 0, 2)], c[(0, 2, 2)]
        if eq is not None:
            a, b, cc = (let(a - eq[(2, 2, 0)]), let(b - eq[(2, 0, 2)]),
                        let(cc - eq[(0, 2, 2)]))
        d1 = (1.0 - self.omega_6) * (a - 2.0 * b + cc)
        d2 = (1.0 - self.omega_6) * (a + b - 2.0 * cc)
        tr = (1.0 - self.omega_7) * (a + b + cc)
        post[(2, 2, 0)] = let((d1 + d2 + tr) * (1.0 / 3.0))
        post[(2, 0, 2)] = let((tr - d1) * (1.0 / 3.0))
        post[(0, 2, 2)] = let((tr - d2) * (1.0 / 3.0))
        for key in ((2, 1, 1), (1, 2, 1), (1, 1, 2)):
            post[key] = let((1.0 - self.omega_8) * c[key])
        if eq is not None:
            for key in eq:
                post[key] = let(post[key] + eq[key])
        for key in ((1, 2, 2), (2, 1, 2), (2, 2, 1)):
            post[key] = let((1.0 - self.omega_9) * c[key])
        post[(2, 2, 2)] = let((1.0 - self.omega_10) * c[(2, 2, 2)])
        return post

"""Curved walls at their exact position for both LW-ACM schemes: ghost records on the links of
INTERPOLATED nodes (bodies declared ``interpolated=True``; LBM's are in
:mod:`thelma_py.modules.compute.lbm.interpolated`).

A link i of a fluid node x is cut by the wall at x − q c_i (``NodeTags.curved_q``, exact from
the body's shape), the wall moving at u_w (the boundary row of the solid node x − c_i). The
population the link brings to x is f*_i of a ghost record at x − c_i
(:func:`.rule.curved_fstar_i`): its even part (density, momentum flux) from the halfway mirror
(ρ(x), 2 u_w − u(x)), as bounce-back, and its odd part (the momentum through the link) from

    u_g = a u_w + b u(x) + c u(x + c_i),

u extrapolated along the link through the exact wall point:

    q ≥ q₀, x + c_i fluid:     quadratic through x + c_i, x and the wall:
                              (a, b, c) = (2/(q(1 + q)), −2(1 − q)/q, (1 − q)/(1 + q))
    q < min(q₀, ½), x + c_i fluid: the mirror image of the point x + (1 − 2q) c_i about the
                              wall, interpolated between x and x + c_i: (2, −2q, 2q − 1)
    q ≥ ½ and below q₀ or x + c_i not fluid: linear through x and the wall: (1/q, 1 − 1/q, 0)
    q < ½, x + c_i not fluid, and links the body does not cut: halfway (2, −1, 0)

with q₀ = max(0.1, 3.5 ν), ν = 1/6 with LES (:func:`quadratic_min_q`). The mirror rule is
Bouzidi, Firdaouss & Lallemand 2001's linear interpolation applied to u; the extrapolations are
those of Guo, Zheng & Shi 2002 and of ghost-cell finite differences. The quadratic is exact for
a parabolic u along the link, so the velocity gradient the scheme takes between x − c_i and x is
second order; the mirror is exact for linear u only. The quadratic's weights grow as 1/q, and
the ghost's odd part enters with 1 − κ = 6 ν, so how small q may be depends on ν: Couette flow
between off-lattice walls (both schemes) stays exact at q ≥ 0.1 for ν ≤ 1/30, and needs q ≥ 0.15
/ 0.2 / 0.3 / 0.45 at ν = 0.05 / 0.07 / 0.1 / 0.13 (below those it does not settle or diverges;
at ν = 1/6 not at q = ½ either, where the linear extrapolation now serves), hence 3.5 ν; below
0.1 Schäfer–Turek 2D-1 diverged (ν = 1/30). Until session 10 q₀ was ½: LW-ACM's c_L at n = 40
was 1.2 % below LBM's at every place of the cylinder (docs/DESIGN.md, "the quadratic ghost from
q₀").

A whole ghost record (u_g in the even part too) is as accurate but diverges at τ → ½ where the
wall is near x − c_i (Schäfer–Turek at Re 100, n = 10): its momentum flux then vanishes on one
side of the node. A density at the exact wall point in the even part (ρ_g = 2q ρ(x) +
(1 − 2q) ρ(x + c_i), or 2 ρ(x) − ρ(x + c_i)) took Schäfer–Turek 2D-1 further from LBM
(docs/DESIGN.md, "where LW-ACM and LBM differed"): ρ_g = ρ(x) stays.
The single step takes the ghost as its upstream record with c_i · u_g in the odd part; the
two-step scheme pulls the population, with ρ, u of x and x + c_i taken from their f* (ρ = Σ f*,
u = Σ c f* / ((1 − κ) ρ), as its open links do: a node's j is updated in place by its own
thread).

Per link the host stores (a, b, c, u_w) (3 + D reals: :attr:`CurvedGhosts.table`, rows in
``NodeTags.curved_nodes`` order, found by binary search in CUDA as for LBM).
"""

from __future__ import annotations

import numpy as np

from thelma_py.backend import host_copy
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.forces import MomentumExchange
from thelma_py.modules.compute.lbm.interpolated import cut_links
from thelma_py.modules.compute.lwacm import rule
from thelma_py.nodes import NodeTags

QUADRATIC_MIN_Q = 0.1
"""The smallest wall fraction whose ghost may be the quadratic extrapolation (:mod:`.curved`)."""


def quadratic_min_q(params) -> float:
    """q₀ = max(0.1, 3.5 ν), the smallest wall fraction whose ghost is the quadratic
    extrapolation (:mod:`.curved`), for an LW-ACM compute plug-in ``params``: ν = (1 − κ) / 6
    its viscosity, or with LES 1/6, since the eddy viscosity raises ν locally up to LW-ACM's
    limit (q₀ = 0.58: the quadratic for q ≥ 0.58 only, where Couette flow stays exact at every
    ν)."""
    nu = 1.0 / 6.0 if params.les is not None else (1.0 - params.kappa) / 6.0
    return max(QUADRATIC_MIN_Q, 3.5 * nu)


def ghost_weights(q, far_is_fluid, min_q: float = QUADRATIC_MIN_Q) -> np.ndarray:
    """(a, b, c), shape (3, n), of u_g = a u_w + b u(x) + c u(x + c_i) for wall fractions ``q``
    (NaN: halfway) and whether x + c_i is fluid (:mod:`.curved`), the quadratic from
    ``min_q`` (:func:`quadratic_min_q`).

    >>> ghost_weights(np.array([1.0, 0.5, 0.25, 0.05, 0.5]),
    ...               np.array([False, True, True, True, False])).T.round(3).tolist()
    [[1.0, 0.0, 0.0], [2.667, -2.0, 0.333], [6.4, -6.0, 0.6], [2.0, -0.1, -0.9], [2.0, -1.0, 0.0]]
    >>> ghost_weights(np.array([0.25, 0.6]), np.array([True, True]), 0.7).T.round(3).tolist()
    [[2.0, -0.5, -0.5], [1.667, -0.667, 0.0]]
    """
    q = np.asarray(q, dtype=np.float64)
    far = np.asarray(far_is_fluid, dtype=bool) & np.isfinite(q)
    q = np.where(np.isfinite(q), q, 0.5)
    halfway = (q < 0.5) & ~far
    q = np.where(halfway, 0.5, q)
    quadratic = far & (q >= min_q)
    mirror = far & (q < min(min_q, 0.5))
    a = np.select([quadratic, mirror], [2.0 / (q * (1.0 + q)), 2.0], 1.0 / q)
    b = np.select([quadratic, mirror], [-2.0 * (1.0 - q) / q, -2.0 * q], 1.0 - 1.0 / q)
    c = np.select([quadratic, mirror], [(1.0 - q) / (1.0 + q), 2.0 * q - 1.0], 0.0)
    return np.stack([a, b, c])


def node_fields(lattice: Lattice, cols, kappa) -> tuple:
    """ρ = Σ_k f*_k and u = Σ_k c_k f*_k / ((1 − κ) ρ) of nodes whose f* are the columns of
    ``cols`` (Q, n) (NumPy or CuPy)."""
    rho = cols[0]
    for k in range(1, lattice.q):
        rho = rho + cols[k]
    scale = 1.0 / ((1.0 - kappa) * rho)
    u = []
    for a in range(lattice.d):
        total = 0.0
        for k in range(lattice.q):
            if lattice.c[k][a]:
                total = total + cols[k] if lattice.c[k][a] > 0 else total - cols[k]
        u.append(total * scale)
    return rho, u


class CurvedGhosts:
    """The wall links of the INTERPOLATED nodes of ``tags``, by direction (NumPy arrays).

    ``links[i]`` = (flat x, flat x + c_i, weights (3 + D, n) = (a, b, c, u_w)); ``table``
    (n_nodes, Q − 1, 3 + D) holds the same per node (halfway rows where a link has no wall).
    The quadratic begins at ``min_q`` (:func:`quadratic_min_q`)."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype, min_q: float):
        self.lattice = lattice
        nodes = np.asarray(tags.curved_nodes, dtype=np.int64)
        width = 3 + lattice.d
        self.table = np.zeros((len(nodes), lattice.q - 1, width))
        self.table[..., 0], self.table[..., 1] = 2.0, -1.0  # halfway: u_g = 2 u_w − u(x)
        self.nodes = nodes
        self.links: dict[int, tuple] = {}
        for i, rows, flat, far, fluid, row, q in cut_links(lattice, tags):
            a, b, cw = ghost_weights(q, fluid, min_q)
            wall = row[:, : lattice.d].T
            weights = np.concatenate([a[None], b[None], cw[None], wall]).astype(dtype)
            self.table[rows, i - 1] = weights.T
            self.links[i] = (flat, np.where(cw != 0, far, flat), weights)
        self.table = self.table.astype(dtype)

    def __bool__(self) -> bool:
        return bool(self.links)

    def ghosts(self, i: int, rho, u: list):
        """(flat x, ρ_g, u_m, u_g) of direction i's links (:func:`.rule.curved_ghost`) from
        the flat node fields ``rho`` (N), ``u`` (D arrays of N)."""
        flat, far, w = self.links[i]
        return (flat, *rule.curved_ghost(rho[flat], [ua[flat] for ua in u],
                                         [ua[far] for ua in u], list(w)))


class LwacmExchange(MomentumExchange):
    """Momentum exchange of an LW-ACM engine: a link of an interpolated body gives
    −c_i (f*_ī(x) + f_i) with f_i the population of :func:`.rule.curved_fstar_i` (what the
    node sends into the wall and what comes back, in both schemes), the other wall links as
    :class:`~thelma_py.modules.compute.lbm.forces.MomentumExchange`."""

    def __init__(self, lattice: Lattice, tags: NodeTags, wall_tags: NodeTags, dtype,
                 kappa: float, min_q: float, xp=np, owned=None):
        """``tags``: the geometry's; ``wall_tags``: with the rows the moving-wall term of the
        other wall links takes (LW-ACM's are scaled, ``force_tags``); ``min_q``: where the
        ghosts' quadratic begins (:func:`quadratic_min_q`)."""
        super().__init__(lattice, wall_tags, dtype, xp, owned)
        self.kappa = kappa
        ghosts = CurvedGhosts(lattice, tags, dtype, min_q)
        for body, rows in self.curved.items():
            mine = []
            for i, index, _, _, _ in rows:
                flat, far, w = ghosts.links[i]
                at = np.searchsorted(flat, host_copy(index))
                mine.append((i, index, xp.asarray(far[at]), xp.asarray(w[:, at]), None))
            self.curved[body] = mine

    def curved_sum(self, f_post, take, body: int):
        """Σ c_i (f*_ī(x) + f_i) (device, float64) over the interpolated links of ``body``,
        one direction at a time (:meth:`curved_return` reads every population at its nodes)."""
        flat, opposite = f_post.reshape(self.lattice.q, -1), self.lattice.opposite
        total = self.xp.zeros(self.lattice.d)
        for i, index, nxt, w, term in self.curved[body]:
            sent = flat[opposite[i]][index] + self.curved_return(flat, i, index, nxt, w, term)
            total = total + sent.astype(np.float64).sum() * self.xp.asarray(
                self.lattice.c[i].astype(np.float64))
        return total

    def curved_return(self, flat, i: int, index, nxt, w, term):
        """f*_i(ρ_g, u_g) of the links ``index`` (their far nodes ``nxt``) from f* (Q, N)."""
        rho, u = node_fields(self.lattice, flat[:, index], self.kappa)
        _, u_far = node_fields(self.lattice, flat[:, nxt], self.kappa)
        rho_g, u_m, u_g = rule.curved_ghost(rho, u, u_far, list(w))
        return rule.curved_fstar_i(self.lattice, i, rho_g, u_m, u_g, self.kappa)



class CurvedExchange:
    """What an LW-ACM engine (NumPy or CUDA) gives the ``forces`` plug-in: its momentum
    exchange, wall rows scaled by 1 − κ (``force_tags``) and the ghosts of curved links."""

    def momentum_exchange(self, owned=None) -> LwacmExchange:
        return LwacmExchange(self.lattice, self.tags, self.force_tags, self.dtype,
                             self.params.kappa, quadratic_min_q(self.params), self.backend.xp,
                             owned)

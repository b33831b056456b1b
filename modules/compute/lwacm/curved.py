"""Curved walls at their exact position for both LW-ACM schemes: ghost records on the links of
INTERPOLATED nodes (bodies declared ``interpolated=True``; LBM's are in
:mod:`thelma_py.modules.compute.lbm.interpolated`).

A link i of a fluid node x is cut by the wall at x − q c_i (``NodeTags.curved_q``, exact from
the body's shape), the wall moving at u_w (the boundary row of the solid node x − c_i). Where
the upstream record x − c_i would be read, the update reads the ghost (:func:`.rule.curved_ghost`)

    ρ_g = ρ(x),    u_g = a u_w + b u(x) + c u(x + c_i),

u extrapolated linearly along the link through the wall point:

    q ≥ ½:  through x and the wall:        (a, b, c) = (1/q, 1 − 1/q, 0)
    q < ½:  through x + c_i and the wall:   (a, b, c) = (2/(1 + q), 0, (q − 1)/(1 + q))

the two extrapolations of Guo, Zheng & Shi (2002, their u_b1 and u_b2), split at q = ½ as
Bouzidi et al. (2001) split their interpolations, so that no weight exceeds 2 in magnitude and
q = ½ gives the staircase ghost u_g = 2 u_w − u(x) exactly. Where x + c_i is not fluid (a solid
or beyond a face), q < ½ falls back to halfway (2, −1, 0), as LBM's scheme does; so do a
node's wall links that the interpolated body does not cut (q NaN). The single step uses the ghost
as its upstream record; the two-step scheme pulls f*_i(ρ_g, u_g), with ρ, u of x and x + c_i
taken from their f* (ρ = Σ f*, u = Σ c f* / ((1 − κ) ρ), as its open links do: a node's j is
updated in place by its own thread).

Per link the host stores (b, c, a u_w) (2 + D reals: :attr:`CurvedGhosts.table`, rows in
``NodeTags.curved_nodes`` order, found by binary search in CUDA as for LBM).
"""

from __future__ import annotations

import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.forces import MomentumExchange
from thelma_py.modules.compute.lbm.open_nodes import offset_nodes
from thelma_py.modules.compute.lwacm import rule
from thelma_py.nodes import NodeTags


def ghost_weights(q, far_is_fluid) -> np.ndarray:
    """(a, b, c), shape (3, n), of u_g = a u_w + b u(x) + c u(x + c_i) for wall fractions ``q``
    (NaN: halfway) and whether x + c_i is fluid (:mod:`.curved`).

    >>> ghost_weights(np.array([1.0, 0.5, 0.25, 0.5]), np.array([False, True, True, False])
    ...               ).T.round(12).tolist()
    [[1.0, 0.0, 0.0], [2.666666666667, -2.0, 0.333333333333], [2.0, -0.5, -0.5], [2.0, -1.0, 0.0]]
    """
    q = np.asarray(q, dtype=np.float64)
    far = np.asarray(far_is_fluid, dtype=bool) & np.isfinite(q)
    q = np.where(np.isfinite(q), q, 0.5)
    near = q < 0.5
    halfway = near & ~far
    q = np.where(halfway, 0.5, q)
    quadratic = far & ~near
    mirror = far & near
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

    ``links[i]`` = (flat x, flat x + c_i, weights (2 + D, n) = (b, c, a u_w)); ``table``
    (n_nodes, Q − 1, 2 + D) holds the same per node (halfway rows where a link has no wall)."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype):
        self.lattice = lattice
        nodes = np.asarray(tags.curved_nodes, dtype=np.int64)
        shape = tags.tags.shape
        solid = tags.solid.reshape(-1)
        links = tags.layout.links(tags.tags).reshape(-1)[nodes]
        coords = np.unravel_index(nodes, shape)[::-1]
        width = 2 + lattice.d
        self.table = np.zeros((len(nodes), lattice.q - 1, width))
        self.table[..., 0] = -1.0  # halfway at rest: u_g = −u(x)
        self.nodes = nodes
        self.links: dict[int, tuple] = {}
        for i in range(1, lattice.q):
            rows = np.flatnonzero((links >> np.uint64(i - 1)) & np.uint64(1))
            if not len(rows):
                continue
            c = lattice.c[i]
            far, inside = offset_nodes([x[rows] for x in coords], c, shape, tags.periodic)
            a, b, cw = ghost_weights(tags.curved_q[rows, i], inside & ~solid[far])
            flat = nodes[rows]
            window = tuple(slice(1 - ci, 1 - ci + n) for ci, n in
                           zip(reversed(c.tolist()), shape, strict=True))
            wall = tags.bc_table[tags.halo_bc_id[window].reshape(-1)[flat], : lattice.d].T
            weights = np.concatenate([b[None], cw[None], a * wall]).astype(dtype)
            self.table[rows, i - 1] = weights.T
            self.links[i] = (flat, np.where(cw != 0, far, flat), weights)
        self.table = self.table.astype(dtype)

    def __bool__(self) -> bool:
        return bool(self.links)

    def ghosts(self, i: int, rho, u: list):
        """(flat x, ρ_g, u_g) of direction i's links from the flat node fields ``rho`` (N),
        ``u`` (D arrays of N)."""
        flat, far, w = self.links[i]
        rho_g, u_g = rule.curved_ghost(rho[flat], [ua[flat] for ua in u],
                                       [ua[far] for ua in u], list(w))
        return flat, rho_g, u_g


class LwacmExchange(MomentumExchange):
    """Momentum exchange of an LW-ACM engine: a link of an interpolated body gives
    −c_i (f*_ī(x) + f*_i(ρ_g, u_g)) with the ghost of :func:`.rule.curved_ghost` (what the
    node sends into the wall and what the two-step scheme pulls back; the single step's
    update reads the ghost record itself), the other wall links as
    :class:`~thelma_py.modules.compute.lbm.forces.MomentumExchange`."""

    def __init__(self, lattice: Lattice, tags: NodeTags, wall_tags: NodeTags, dtype,
                 kappa: float, xp=np, owned=None):
        """``tags``: the geometry's; ``wall_tags``: with the rows the moving-wall term of the
        other wall links takes (LW-ACM's are scaled, ``force_tags``)."""
        super().__init__(lattice, wall_tags, dtype, xp, owned)
        self.kappa = kappa
        ghosts = CurvedGhosts(lattice, tags, dtype)
        for body, rows in self.curved.items():
            mine = []
            for i, index, _, _, _ in rows:
                flat, far, w = ghosts.links[i]
                at = np.searchsorted(flat, _host(index))
                mine.append((i, index, xp.asarray(far[at]), xp.asarray(w[:, at]), None))
            self.curved[body] = mine

    def curved_return(self, flat, i: int, index, nxt, w, term):
        """f*_i(ρ_g, u_g) of the links ``index`` (their far nodes ``nxt``) from f* (Q, N)."""
        rho, u = node_fields(self.lattice, flat[:, index], self.kappa)
        _, u_far = node_fields(self.lattice, flat[:, nxt], self.kappa)
        rho_g, u_g = rule.curved_ghost(rho, u, u_far, list(w))
        usq = sum(ua * ua for ua in u_g)
        return rule.fstar_i(self.lattice, i, rho_g, u_g, usq, self.kappa)


def _host(array) -> np.ndarray:
    return array.get() if hasattr(array, "get") else np.asarray(array)


class CurvedExchange:
    """What an LW-ACM engine (NumPy or CUDA) gives the ``forces`` plug-in: its momentum
    exchange, wall rows scaled by 1 − κ (``force_tags``) and the ghosts of curved links."""

    def momentum_exchange(self, owned=None) -> LwacmExchange:
        return LwacmExchange(self.lattice, self.tags, self.force_tags, self.dtype,
                             self.params.kappa, self.backend.xp, owned)

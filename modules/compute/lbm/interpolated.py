"""Interpolated bounce-back for curved walls: Bouzidi, Firdaouss & Lallemand (2001), linear.

A fluid node x (kind INTERPOLATED) has a link i cut by a body's wall at the fraction q of the
way from x to x − c_i (``NodeTags.curved_q``, exact from the body's shape). After streaming,

    q < ½:  f_i(x) = 2q f*_ī(x) + (1 − 2q) f*_ī(x + c_i) + T_i
    q ≥ ½:  f_i(x) = f*_ī(x) / (2q) + (1 − 1/(2q)) f*_i(x) + T_i / (2q)

with f* the post-collision populations of the previous step and T_i Ladd's moving-wall term.
Both are one formula, f_i = a f*_ī(x) + b f*_ī(x + c_i) + c f*_i(x) + (a + b) T_i, with weights
(a, b, c) computed once per link on the host (:func:`bouzidi_weights`). Where x + c_i is not a
fluid node (a solid or a face beyond), q < ½ falls back to halfway bounce-back (1, 0, 0); q = ½
is halfway exactly. :func:`interpolated_bounce` is plain arithmetic, like :mod:`.collision`:
NumPy arrays give the reference, traced expressions the CUDA arm of ``open_boundary``.

Only FLUID nodes become INTERPOLATED: an open-boundary node whose link a body cuts keeps its
kind, and that link stays halfway (the boundary rule owns the node).

The momentum exchange stays consistent with it: the body receives −c_i (f*_ī(x) + f_i(x)) per
link (:mod:`.forces`), which closes the fluid's momentum balance exactly.
"""

from __future__ import annotations

import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import wall_momentum
from thelma_py.modules.compute.lbm.open_nodes import offset_nodes
from thelma_py.nodes import NodeTags


def bouzidi_weights(q: np.ndarray, next_is_fluid: np.ndarray) -> np.ndarray:
    """Weights (a, b, c), shape (3, n), of the linear scheme for wall fractions ``q`` (NaN:
    halfway) and whether the node x + c_i beyond the node is fluid.

    >>> bouzidi_weights(np.array([0.25, 0.5, 1.0]), np.array([True, True, True])).T.tolist()
    [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.5, 0.0, 0.5]]
    """
    q = np.asarray(q, dtype=np.float64)
    halfway = ~np.isfinite(q) | ((q < 0.5) & ~np.asarray(next_is_fluid, dtype=bool))
    q = np.where(halfway, 0.5, q)
    near = q < 0.5
    inv = 1.0 / (2.0 * q)
    a = np.where(near, 2.0 * q, inv)
    b = np.where(near, 1.0 - 2.0 * q, 0.0)
    c = np.where(near, 0.0, 1.0 - inv)
    return np.stack([a, b, c])


def interpolated_bounce(w, f_bar, f_bar_next, f_i, term=0.0):
    """f_i(x) after streaming: a f*_ī(x) + b f*_ī(x + c_i) + c f*_i(x) + (a + b) T_i."""
    value = w[0] * f_bar + w[1] * f_bar_next + w[2] * f_i
    return value + (w[0] + w[1]) * term


def cut_links(lattice: Lattice, tags: NodeTags):
    """The wall links of the INTERPOLATED nodes (``NodeTags.curved_nodes``), by direction:
    yields (i, rows into that node list, flat x, flat x + c_i, whether x + c_i is fluid, wall
    rows of ``tags.bc_table`` (n, 4), cut fractions q); LBM's Bouzidi links and LW-ACM's curved
    ghosts weigh them their own way."""
    nodes = np.asarray(tags.curved_nodes, dtype=np.int64)
    shape = tags.tags.shape
    solid = tags.solid.reshape(-1)
    links = tags.layout.links(tags.tags).reshape(-1)[nodes]
    coords = np.unravel_index(nodes, shape)[::-1]  # x, y[, z]
    for i in range(1, lattice.q):
        rows = np.flatnonzero((links >> np.uint64(i - 1)) & np.uint64(1))
        if not len(rows):
            continue
        c = lattice.c[i]
        far, inside = offset_nodes([x[rows] for x in coords], c, shape, tags.periodic)
        flat = nodes[rows]
        window = tuple(slice(1 - ci, 1 - ci + n) for ci, n in
                       zip(reversed(c.tolist()), shape, strict=True))
        wall = tags.bc_table[tags.halo_bc_id[window].reshape(-1)[flat]]
        yield i, rows, flat, far, inside & ~solid[far], wall, tags.curved_q[rows, i]


class CurvedLinks:
    """Interpolated links of one sub-box, by direction, on NumPy or CuPy arrays.

    ``table`` (n_nodes, Q − 1, 3) holds the weights of every link of each INTERPOLATED node in
    ``NodeTags.curved_nodes`` order (halfway (1, 0, 0) for links that are not interpolated):
    the CUDA kernel finds a node's row by binary search in the sorted node list, so no
    per-volume array is needed (3 (Q − 1) reals per node next to a curved body).
    """

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype, xp=np):
        self.lattice = lattice
        nodes = np.asarray(tags.curved_nodes, dtype=np.int64)
        self.table = np.zeros((len(nodes), lattice.q - 1, 3))
        self.table[..., 0] = 1.0
        self.nodes = nodes
        self.links: dict[int, tuple] = {}
        """i -> (flat x, flat x + c_i, weights (3, n), Ladd term or None)."""
        for i, rows, flat, nxt, fluid, row, q in cut_links(lattice, tags):
            weights = bouzidi_weights(q, fluid)
            self.table[rows, i - 1] = weights.T
            term = np.asarray(wall_momentum(lattice, i, [row[:, a] for a in range(lattice.d)],
                                            row[:, 3]), dtype=np.float64) * np.ones(len(flat))
            self.links[i] = (xp.asarray(flat), xp.asarray(nxt),
                             xp.asarray(weights.astype(dtype)),
                             xp.asarray(term.astype(dtype)) if np.any(term) else None)

    def __bool__(self) -> bool:
        return bool(self.links)

    def incoming(self, f, i: int):
        """(flat x, f_i(x) after streaming) of direction i's interpolated links, from the
        post-collision populations ``f`` (Q, *S)."""
        flat, nxt, w, term = self.links[i]
        q = self.lattice.q
        g = f.reshape(q, -1)
        j = self.lattice.opposite[i]
        value = interpolated_bounce(w, g[j][flat], g[j][nxt], g[i][flat],
                                    0.0 if term is None else term)
        return flat, value

    def apply(self, f, out) -> None:
        """Overwrite the interpolated links of the streamed array ``out`` (from ``f``)."""
        q = self.lattice.q
        target = out.reshape(q, -1)
        for i in self.links:
            flat, value = self.incoming(f, i)
            target[i][flat] = value

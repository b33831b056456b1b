"""Streaming and its inverse, on NumPy or CuPy arrays, and the state layouts of each scheme.

The canonical LBM state is post-collision populations f* (what the pull scheme stores). The push
scheme and the AA scheme after an odd step hold streamed, pre-collision populations S(f*); the
AA scheme after an even step holds f* with each node's populations reversed (slot ī holds f*_i).
Solid nodes keep f* in every layout. Converting through these functions is how checkpoints stay
scheme-independent and how the GPU schemes are checked against the NumPy reference.
"""

from __future__ import annotations

import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import wall_momentum
from thelma_py.nodes import NodeTags


class WallLinks:
    """Per direction i: flat indices of fluid nodes whose population i arrives through a wall,
    and Ladd's moving-wall term there (None where every such wall is at rest).

    ``velocity[i]`` holds the wall velocity itself, shape (D, links), or None where every such
    wall is at rest (single-step LW-ACM uses it as a Dirichlet value)."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype: np.dtype, xp=np):
        self.index: dict[int, object] = {}
        self.term: dict[int, object | None] = {}
        self.velocity: dict[int, object | None] = {}
        shape = tags.tags.shape
        for i, flat in tags.layout.wall_crossings(tags.tags):
            window = tuple(slice(1 - c, 1 - c + n) for c, n in
                           zip(reversed(lattice.c[i].tolist()), shape, strict=True))
            row = tags.bc_table[tags.halo_bc_id[window].reshape(-1)[flat]]
            velocity = [row[:, a] for a in range(lattice.d)]
            term = np.asarray(wall_momentum(lattice, i, velocity, row[:, 3]), dtype=dtype)
            self.index[i] = xp.asarray(flat)
            self.term[i] = xp.asarray(term) if np.any(term) else None
            wall_u = np.asarray(row[:, : lattice.d].T, dtype=dtype)
            self.velocity[i] = xp.asarray(wall_u) if np.any(wall_u) else None
        self.moving = any(t is not None for t in self.term.values())


def _roll(xp, array, shift: tuple[int, ...]):
    return xp.roll(array, shift=shift, axis=tuple(range(len(shift))))


def stream(lattice: Lattice, walls: WallLinks, f, xp=np):
    """Pull streaming with halfway bounce-back: pre-collision populations from f*.

    f has shape (Q, *S). Values at solid nodes are whatever the roll brings; callers that keep a
    layout restore them (see :func:`keep_solid`).
    """
    out = xp.empty_like(f)
    for i in range(lattice.q):
        out[i] = _roll(xp, f[i], tuple(int(v) for v in lattice.c[i][::-1]))
    opposite = lattice.opposite
    for i, flat in walls.index.items():
        bounced = f[opposite[i]].reshape(-1)[flat]
        term = walls.term[i]
        out[i].reshape(-1)[flat] = bounced if term is None else bounced + term
    return out


def unstream(lattice: Lattice, walls: WallLinks, g, xp=np):
    """Inverse of :func:`stream` on fluid nodes: f* from pre-collision populations."""
    out = xp.empty_like(g)
    opposite = lattice.opposite
    for i in range(lattice.q):
        out[i] = _roll(xp, g[i], tuple(-int(v) for v in lattice.c[i][::-1]))
    for j, flat in walls.index.items():
        i = opposite[j]  # population i of this node went into the wall and came back as j
        back = g[j].reshape(-1)[flat]
        term = walls.term[j]
        out[i].reshape(-1)[flat] = back if term is None else back - term
    return out


def keep_solid(target, source, solid_index, xp=np) -> None:
    """Copy the solid nodes' populations from ``source`` into ``target`` (in place)."""
    q = target.shape[0]
    target.reshape(q, -1)[:, solid_index] = source.reshape(q, -1)[:, solid_index]


def to_scheme(lattice: Lattice, walls: WallLinks, solid_index, f_post, scheme: str,
              phase: str, xp=np):
    """The array(s) content a scheme holds for the canonical state f*.

    ``phase`` is 'post-even' or 'post-odd' for AA (what the last step was), ignored otherwise.
    """
    opposite = lattice.opposite
    if scheme == "pull":
        return f_post.copy()
    if scheme == "aa" and phase == "post-even":
        return f_post[opposite].copy()
    streamed = stream(lattice, walls, f_post, xp)
    solid_values = f_post if scheme == "push" else f_post[opposite]
    keep_solid(streamed, solid_values, solid_index, xp)
    return streamed


def from_scheme(lattice: Lattice, walls: WallLinks, solid_index, held, scheme: str,
                phase: str, xp=np):
    """Canonical f* from what a scheme holds (inverse of :func:`to_scheme`)."""
    opposite = lattice.opposite
    if scheme == "pull":
        return held.copy()
    if scheme == "aa" and phase == "post-even":
        return held[opposite].copy()
    f_post = unstream(lattice, walls, held, xp)
    solid_values = held if scheme == "push" else held[opposite]
    keep_solid(f_post, solid_values, solid_index, xp)
    return f_post

"""Momentum-exchange force on solid bodies, from the canonical post-collision state f*.

A wall link (x, i) has a fluid node x whose upstream x − c_i is solid. Each step population ī
leaves x towards the wall (f*_ī) and comes back as f_i = f*_ī + Ladd's term (halfway
bounce-back with the moving-wall correction). The momentum the body receives is
c_ī f*_ī − c_i f_i, so

    F_body = − Σ_links c_i (2 f*_ī(x) + term_i(x)),

summed over the links whose solid end carries the body's boundary id. Links of interpolated
bodies come back as the interpolated f_i (:mod:`.interpolated`), so they give
− c_i (f*_ī(x) + f_i(x)). Links whose upstream lies beyond an open face are rebuilt by the
boundary rule, not bounced, and are left out.
The same array operations run on NumPy or CuPy arrays (no kernel).

In a distributed run each rank sums the links whose fluid node it owns (the solid end may lie
in a ghost layer or beyond a face: its id comes from the global geometry) and the per-body
sums are added over the ranks, so every link counts once; only the order of the additions
differs from one domain.
"""

from __future__ import annotations

import numpy as np

from thelma_py.backend import host_copy
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import wall_momentum
from thelma_py.modules.compute.lbm.interpolated import CurvedLinks, interpolated_bounce
from thelma_py.nodes import FACES, NodeTags
from thelma_py.tags import halo_upstream


class MomentumExchange:
    """Wall links grouped by body (boundary id of the solid end) and direction."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype, xp=np,
                 owned: tuple[slice, ...] | None = None):
        """``owned``: index of the nodes whose links count (a distributed run's owned box in
        its grown arrays, :attr:`thelma_py.parallel.RankBox.inner`); None: every node."""
        self.lattice, self.xp = lattice, xp
        self.links: dict[int, list[tuple[int, object, object]]] = {}
        self.curved: dict[int, list[tuple]] = {}
        """body -> [(i, flat x, flat x + c_i, weights, term or None)] of interpolated links."""
        self.reads_ghosts = False
        """Does an interpolated link of an owned node read f*(x + c_i) in a ghost layer?"""
        curved = CurvedLinks(lattice, tags, dtype)
        shape = tags.tags.shape
        mine = np.ones(shape, dtype=bool)
        if owned is not None:
            mine[...] = False
            mine[owned] = True
        mine = mine.reshape(-1)
        open_faces = {FACES[int(face)] for face in tags.open_table[:, 0]
                      if 0 <= face < len(FACES)}  # edges: their faces are listed too
        dim = len(shape)
        for i, flat in tags.layout.wall_crossings(tags.tags):
            keep = mine[flat].copy()  # ghost nodes' links belong to their owner
            index = np.unravel_index(flat, shape)  # array axes: (z, y, x)
            c = [int(v) for v in lattice.c[i]]
            for a, n in enumerate(tags.global_shape):
                up = index[dim - 1 - a] + tags.lower[a] - c[a]
                if f"-{'xyz'[a]}" in open_faces:
                    keep &= up >= 0
                if f"+{'xyz'[a]}" in open_faces:
                    keep &= up < n
            body = tags.halo_bc_id.reshape(-1)[halo_upstream(index, c, tags.halo_bc_id.shape)]
            if i in curved.links:
                c_flat, c_next, c_w, c_term = curved.links[i]
                keep &= ~np.isin(flat, c_flat)
                c_body = body[np.searchsorted(flat, c_flat)]
                c_mine = mine[c_flat]
                self.reads_ghosts |= bool((c_mine & ~mine[c_next] & (c_w[1] != 0)).any())
                for b in np.unique(c_body[c_mine]):
                    sel = c_mine & (c_body == b)
                    self.curved.setdefault(int(b), []).append(
                        (i, xp.asarray(c_flat[sel]), xp.asarray(c_next[sel]),
                         xp.asarray(c_w[:, sel]),
                         None if c_term is None else xp.asarray(c_term[sel])))
            row = tags.bc_table[body]
            term = np.asarray(wall_momentum(lattice, i, [row[:, a] for a in range(lattice.d)],
                                            row[:, 3]), dtype=np.float64) * np.ones(len(flat))
            for b in np.unique(body[keep]):
                sel = keep & (body == b)
                self.links.setdefault(int(b), []).append(
                    (i, xp.asarray(flat[sel]), xp.asarray(term[sel].astype(dtype))))
        self.nodes = int(np.prod(shape))
        opposite = lattice.opposite
        self.straight = {b: (self._pairs([(opposite[i], index) for i, index, _ in rows]),
                             xp.concatenate([term for _, _, term in rows]),
                             self._directions([(i, len(index)) for i, index, _ in rows]))
                         for b, rows in self.links.items()}
        """body -> (where f*_ī(x) lies in the flat (Q N) state, Ladd's terms, c_i) of its
        links that bounce halfway, every direction in one array."""
        self._bounced: dict[int, tuple] = {}

    @property
    def bodies(self) -> list[int]:
        return sorted(set(self.links) | set(self.curved))

    def _pairs(self, pairs) -> object:
        """Flat positions p N + x in the (Q N) state of the populations p at the nodes x, for
        [(p, x array), ...], as one array."""
        return self.xp.concatenate([index + p * self.nodes for p, index in pairs])

    def _directions(self, counts) -> object:
        """c_i (float64) of every link, for [(i, number of links), ...]: (n, D)."""
        return self.xp.asarray(np.concatenate(
            [np.repeat(self.lattice.c[i][None].astype(np.float64), n, axis=0)
             for i, n in counts]))

    def curved_sum(self, f_post, take, body: int):
        """Σ c_i (f*_ī(x) + f_i(x)) (device, float64) over the interpolated links of ``body``:
        f_i by :func:`.interpolated_bounce`, every direction in one pass. ``take``: values of
        the flat (Q N) state at flat positions (:func:`_taker`)."""
        if body not in self._bounced:
            rows, opposite = self.curved[body], self.lattice.opposite
            self._bounced[body] = (
                self._pairs([(opposite[i], index) for i, index, *_ in rows]),
                self._pairs([(opposite[i], nxt) for i, _, nxt, *_ in rows]),
                self._pairs([(i, index) for i, index, *_ in rows]),
                self.xp.concatenate([w for *_, w, _ in rows], axis=1),
                self.xp.concatenate([self.xp.zeros(len(index), dtype=w.dtype) if term is None
                                     else term for _, index, _, w, term in rows]),
                self._directions([(i, len(index)) for i, index, *_ in rows]))
        bar, bar_next, own, w, term, c = self._bounced[body]
        sent = take(bar)
        return _moment(sent + interpolated_bounce(w, sent, take(bar_next), take(own), term), c)

    def __call__(self, f_post) -> dict[int, np.ndarray]:
        """{body id: force (D,) as float64 host array} for the populations f* (Q, *S), or an
        object whose ``take_flat(positions)`` gives f* at flat positions of the (Q N) state (a
        16-bit engine's :meth:`~.cuda.CudaLbm.population_rows`). Each body's links are summed
        on the device, in float64, and its force comes back in one transfer."""
        take = _taker(f_post)
        out = {}
        for body in self.bodies:
            total = self.xp.zeros(self.lattice.d)
            if body in self.straight:
                index, term, c = self.straight[body]
                total = total + _moment(2.0 * take(index) + term, c)
            if body in self.curved:
                total = total + self.curved_sum(f_post, take, body)
            out[body] = -host_copy(total)
        return out


def _taker(f_post):
    """f* at flat positions p N + x of the (Q N) state: gathered from a whole state (Q, *S),
    or the engine's ``take_flat`` (16-bit: only those codes decoded)."""
    if hasattr(f_post, "take_flat"):
        return f_post.take_flat
    flat = f_post.reshape(-1)
    return lambda positions: flat[positions]


def _moment(values, c):
    """Σ_links c_link values_link in float64: (D,), on the device of ``values``."""
    return (values.astype(np.float64)[:, None] * c).sum(axis=0)


def forces(engine, bodies=None) -> dict[int, np.ndarray]:
    """Momentum-exchange force on each body of an LBM engine (NumPy or CUDA), by boundary id.
    LW-ACM engines give their f* (``canonical()``) and their own :class:`MomentumExchange`
    (``momentum_exchange(owned)``: wall rows of their moving-wall term, the ghosts of curved
    links): the same sum (``modules/compute/lwacm/__init__.py``).

    ``bodies`` limits the ids reported (default: every id that owns a wall link, 0 included:
    the walls at rest). Built once per engine and cached on it. On a
    :class:`thelma_py.parallel.DistributedEngine` the call is collective: every rank gets the
    force on the whole body (its owned links summed, then added over the ranks)."""
    box = getattr(engine, "box", None)  # a DistributedEngine: the grown engine inside
    local = engine if box is None else engine.engine
    exchange = getattr(engine, "_momentum_exchange", None)
    if exchange is None:
        owned = None if box is None else box.inner
        if hasattr(local, "momentum_exchange"):  # LW-ACM: its scaled rows and curved ghosts
            exchange = local.momentum_exchange(owned)
        else:
            exchange = MomentumExchange(local.lattice, local.tags, local.dtype,
                                        local.backend.xp, owned=owned)
        if box is not None:  # every rank must agree on refreshing the ghost layers
            from thelma_py.parallel import allreduce

            exchange.reads_ghosts = bool(allreduce(box.cart, [exchange.reads_ghosts], "max")[0])
        engine._momentum_exchange = exchange
    if box is not None and exchange.reads_ghosts:
        engine.refresh_ghosts()  # x + c_i of interpolated links: the neighbour's current f*
    if hasattr(local, "population_rows"):  # 16-bit LBM: decoded at the links only
        f_post = local.population_rows()
    else:
        f_post = local.canonical() if hasattr(local, "canonical") else local.f
    result = exchange(f_post)
    if box is not None:
        result = _sum_over_ranks(box.cart, result, len(local.tags.bc_table), local.lattice.d)
    if bodies is not None:
        result = {int(b): result.get(int(b), np.zeros(engine.lattice.d)) for b in bodies}
    return result


def _sum_over_ranks(comm, local: dict[int, np.ndarray], ids: int, d: int
                    ) -> dict[int, np.ndarray]:
    """Per-body forces added over the ranks of ``comm``; a body is reported where any rank
    has a link of it. One Allreduce of an (ids, D + 1) table (the last column counts ranks)."""
    from thelma_py.parallel import allreduce

    table = np.zeros((ids, d + 1))
    for body, force in local.items():
        table[body, :d] = force
        table[body, d] = 1.0
    table = allreduce(comm, table, "sum")
    return {int(b): table[b, :d].copy() for b in np.flatnonzero(table[:, d])}

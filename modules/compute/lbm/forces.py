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
"""

from __future__ import annotations

import numpy as np

from thelma_py.geometry.domain import FACES, NodeTags
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import wall_momentum
from thelma_py.modules.compute.lbm.interpolated import CurvedLinks, interpolated_bounce


class MomentumExchange:
    """Wall links grouped by body (boundary id of the solid end) and direction."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype, xp=np):
        self.lattice, self.xp = lattice, xp
        self.links: dict[int, list[tuple[int, object, object]]] = {}
        self.curved: dict[int, list[tuple]] = {}
        """body -> [(i, flat x, flat x + c_i, weights, term or None)] of interpolated links."""
        curved = CurvedLinks(lattice, tags, dtype)
        shape = tags.tags.shape
        open_faces = {FACES[int(face)] for face in tags.open_table[:, 0]
                      if 0 <= face < len(FACES)}  # edges: their faces are listed too
        coords = np.indices(shape).reshape(len(shape), -1)[::-1]  # local x, y[, z]
        for i in range(1, lattice.q):
            where = tags.layout.crosses_wall(tags.tags, i).reshape(-1)
            if not where.any():
                continue
            flat = np.flatnonzero(where)
            keep = np.ones(len(flat), dtype=bool)
            for a, n in enumerate(tags.global_shape):
                up = coords[a][flat] + tags.lower[a] - int(lattice.c[i][a])
                if f"-{'xyz'[a]}" in open_faces:
                    keep &= up >= 0
                if f"+{'xyz'[a]}" in open_faces:
                    keep &= up < n
            window = tuple(slice(1 - c, 1 - c + n) for c, n in
                           zip(reversed(lattice.c[i].tolist()), shape, strict=True))
            body = tags.halo_bc_id[window].reshape(-1)[flat]
            if i in curved.links:
                c_flat, c_next, c_w, c_term = curved.links[i]
                keep &= ~np.isin(flat, c_flat)
                c_body = body[np.searchsorted(flat, c_flat)]
                for b in np.unique(c_body):
                    sel = c_body == b
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

    @property
    def bodies(self) -> list[int]:
        return sorted(set(self.links) | set(self.curved))

    def __call__(self, f_post) -> dict[int, np.ndarray]:
        """{body id: force (D,) as float64 host array} for the populations f* (Q, *S)."""
        q, d = self.lattice.q, self.lattice.d
        flat = f_post.reshape(q, -1)
        opposite = self.lattice.opposite
        out = {}
        for body in self.bodies:
            total = np.zeros(d)
            for i, index, term in self.links.get(body, ()):
                exchanged = float((2.0 * flat[opposite[i]][index] + term).sum())
                total -= self.lattice.c[i].astype(np.float64) * exchanged
            for i, index, nxt, w, term in self.curved.get(body, ()):
                j = opposite[i]
                back = interpolated_bounce(w, flat[j][index], flat[j][nxt], flat[i][index],
                                           0.0 if term is None else term)
                exchanged = float((flat[j][index] + back).sum())
                total -= self.lattice.c[i].astype(np.float64) * exchanged
            out[body] = total
        return out


def forces(engine, bodies=None) -> dict[int, np.ndarray]:
    """Momentum-exchange force on each body of an LBM engine (NumPy or CUDA), by boundary id.

    ``bodies`` limits the ids reported (default: every id that owns a wall link, 0 included:
    the walls at rest). Built once per engine and cached on it."""
    exchange = getattr(engine, "_momentum_exchange", None)
    if exchange is None:
        xp = engine.backend.xp
        exchange = MomentumExchange(engine.lattice, engine.tags, engine.dtype, xp)
        engine._momentum_exchange = exchange
    f_post = engine.canonical() if hasattr(engine, "canonical") else engine.f
    result = exchange(f_post)
    if bodies is not None:
        result = {int(b): result.get(int(b), np.zeros(engine.lattice.d)) for b in bodies}
    return result

"""Open-boundary nodes of one sub-box, applied to streamed populations (NumPy reference).

Groups the nodes by (kind, face), gathers their per-node values (``NodeTags.open_values``) and,
for the copy rules, the flat index of the node each missing population is copied from. Each
group applies its kind's record of :data:`.boundaries.RULES`, shared with the CUDA generator.
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.codegen.expr import identity_let
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm import boundaries
from thelma_py.nodes import NodeTags
from thelma_py.tags import OPEN_KINDS, NodeKind


def plane_index(face: int, coords: tuple[np.ndarray, ...], shape_xyz: tuple[int, ...]):
    """Tangential index of nodes in their face plane: y + ny z (±x), x + nx z (±y), x + nx y."""
    axis = face // 2
    rest = [a for a in range(len(shape_xyz)) if a != axis]
    index = coords[rest[0]].copy()
    if len(rest) > 1:
        index = index + shape_xyz[rest[0]] * coords[rest[1]]
    return index


def offset_nodes(coords, offset, shape, periodic) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the nodes at ``coords`` (x, y[, z] arrays) + ``offset``, wrapped on
    periodic axes, and whether each lies inside the box (outside: clipped, not to be read)."""
    inside = np.ones(len(coords[0]), dtype=bool)
    moved = []
    for a, (x, d, n) in enumerate(zip(coords, offset, reversed(shape), strict=True)):
        s = x + int(d)
        if periodic[a]:
            s = s % n
        else:
            inside &= (s >= 0) & (s < n)
        moved.append(np.clip(s, 0, n - 1))
    return np.ravel_multi_index(tuple(reversed(moved)), shape), inside


@attrs.define
class Group:
    rule: boundaries.BoundaryRule
    face: int
    flat: np.ndarray
    values: np.ndarray | None = None
    """(4, n) ux, uy, uz, ρ for local rules."""
    copies: list = attrs.field(factory=list)
    """Copy rules: (i, k, targets (positions in flat), source flat indices)."""

    @property
    def kind(self) -> str:
        return self.rule.name


class OpenNodes:
    """Every open-boundary node of ``tags``, grouped by (kind, face). ``force`` is the body
    force of the run (the local rules impose u − g/2 as the first moment; None: no force)."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype: np.dtype,
                 force: tuple[float, ...] | None = None):
        self.lattice = lattice
        self.force = force
        self.groups: list[Group] = []
        shape = tags.tags.shape
        shape_xyz = tuple(reversed(shape))
        kinds = tags.kind.reshape(-1)
        ids = tags.layout.bc_id(tags.tags).reshape(-1)
        solid = tags.solid.reshape(-1)
        for kind in OPEN_KINDS:
            where = kinds == int(kind)
            for bc in np.unique(ids[where]):
                face, base = (int(v) for v in tags.open_table[bc])
                flat = np.flatnonzero(where & (ids == bc))
                coords = np.unravel_index(flat, shape)[::-1]  # x, y[, z]
                group = Group(boundaries.rule(kind), face, flat)
                normal = boundaries.face_normal(lattice, face)
                if group.rule.neighbour:
                    for i, (k, offset) in group.rule.sources(lattice, normal).items():
                        src, ok = offset_nodes(coords, offset, shape, tags.periodic)
                        ok &= ~solid[src]
                        group.copies.append((i, k, np.flatnonzero(ok), src[ok]))
                else:
                    rows = base + plane_index(face, coords, shape_xyz)
                    group.values = np.ascontiguousarray(
                        tags.open_values[rows].T.astype(dtype))
                self.groups.append(group)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def apply(self, streamed: np.ndarray) -> None:
        """Rebuild the missing populations in ``streamed`` (Q, *S), in place. Every value is
        computed from the streamed array before any is written, as the GPU threads do."""
        lat = self.lattice
        q = lat.q
        flat = streamed.reshape(q, -1)
        writes = []
        for group in self.groups:
            if group.values is None:
                for i, k, targets, src in group.copies:
                    writes.append((i, group.flat[targets], flat[k, src]))
                continue
            f = [flat[i, group.flat] for i in range(q)]
            normal = boundaries.face_normal(lat, group.face)
            rebuilt = group.rule.local(lat, normal, f, identity_let, list(group.values),
                                       self.force)
            for i in range(q):
                if rebuilt[i] is not f[i]:
                    writes.append((i, group.flat, rebuilt[i]))
        for i, where, value in writes:
            flat[i, where] = value


def open_kind_names(tags: NodeTags) -> set[str]:
    return {name for name, _ in tags.open_kinds}


__all__ = ["NodeKind", "OpenNodes", "offset_nodes", "open_kind_names", "plane_index"]

"""Open-boundary links of the LW-ACM plug-ins (NumPy reference; the CUDA arms are generated
from the same rules, :mod:`.open_kernels`).

An open node (a kind of ``thelma_py.tags.OPEN_TABLE``) is updated like a fluid node; where the
upstream node x − c_i of one of its links lies beyond its own open face(s) (c_i · n < 0 for a
face of outward normal n) and nowhere else, the upstream record is the ghost
:data:`.rule.OPEN_GHOSTS` of its kind, built from the record and boundary row of the mirror
point x − c_t (:class:`OpenLinks`). Links that also cross another face (a wall face at an
edge, :func:`tangential`) or end in a solid node stay wall links. :class:`OpenLinks` finds the
open links, clears their bits in a copy of the tags (so
:class:`~thelma_py.modules.compute.lbm.layouts.WallLinks` of that copy holds the wall links
only) and computes the ghosts.
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.boundaries import face_normal
from thelma_py.modules.compute.lbm.open_nodes import plane_index
from thelma_py.modules.compute.lwacm import rule
from thelma_py.nodes import NodeTags
from thelma_py.tags import OPEN_KINDS


def face_normals(lattice: Lattice, face: int) -> list[np.ndarray]:
    """Outward normals of the faces of a face code (one face, or an edge / corner)."""
    total = face_normal(lattice, face)
    return [np.where(np.arange(lattice.d) == a, v, 0) for a, v in enumerate(total) if v]


def crossed(lattice: Lattice, face: int, i: int) -> list[int]:
    """Axes of the faces of ``face`` that link i crosses (x − c_i beyond them)."""
    return [int(np.flatnonzero(n)[0]) for n in face_normals(lattice, face)
            if int(lattice.c[i] @ n) < 0]


def tangential(lattice: Lattice, face: int, i: int) -> int | None:
    """Direction k of c_i without its components along the faces of ``face`` that it crosses (None:
    c_i is normal to them), so that x − c_k is the reflection of x − c_i across those faces, for a
    node on an edge too (a diagonal link of an edge node that crosses one of its faces reflects to
    the node's neighbour along the other, not to the node itself): the ghost is then a function of
    its own position (:mod:`.side_ghosts`). A link crossing the node's own face is an open link only
    where x − c_k is not solid: where it is (a wall face, another open face or a body beyond the
    tangential step) the ghost lies in that wall, and the link stays a wall link ("walls win at
    edges")."""
    axes = crossed(lattice, face, i)
    c = [0 if a in axes else int(v) for a, v in enumerate(lattice.c[i])]
    if not any(c):
        return None
    return [tuple(int(v) for v in ci) for ci in lattice.c].index(tuple(c))


def arms(tags: NodeTags) -> tuple[tuple[str, str], ...]:
    """(kind name, face label) of the open boundaries present, sorted (the CUDA arms)."""
    return tuple(sorted((kind, face) for kind, face in tags.open_kinds))


@attrs.define
class Link:
    kind: str
    flat: np.ndarray
    """The open nodes x with this link."""
    source: np.ndarray
    """Their mirror points x − c_t (flat): the ghost x − c_i reflected across the face."""
    values: np.ndarray | None
    """(4, n) boundary rows (u_x, u_y, u_z, ρ) at the mirror points (the valued kinds)."""
    value_rows: np.ndarray | None
    """Their rows in ``NodeTags.open_values`` (the valued kinds)."""
    inner: np.ndarray | None
    """Flat index of x − c_t − n, the mirror point's inner neighbour (:data:`.rule.INNER_KINDS`)."""
    mirror: tuple[int, ...]


def shifted(coords, offset, shape: tuple[int, ...], periodic) -> tuple[np.ndarray, ...]:
    """Coordinates (x, y[, z]) moved by ``offset``, wrapped on periodic axes."""
    out = []
    for x, d, n, p in zip(coords, offset, reversed(shape), periodic, strict=True):
        s = x + int(d)
        out.append(s % n if p else s)
    return tuple(out)


def stored(coords, shape: tuple[int, ...]) -> np.ndarray:
    """Whether coordinates (x, y[, z]) lie inside an array of ``shape``."""
    inside = np.ones(len(coords[0]), dtype=bool)
    for x, n in zip(coords, reversed(shape), strict=True):
        inside &= (x >= 0) & (x < n)
    return inside


class OpenLinks:
    """Per direction i, the open links of ``tags``; :attr:`tags` is a copy without their bits.

    The ghost of link i at node x is the boundary kind's rule applied to the mirror point
    x − c_t (c_t: c_i without its components along the faces it crosses), the reflection of
    x − c_i across them: the node itself for links normal to the face, its tangential
    neighbour for the diagonal ones (so a profile across the face is seen by every link)."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype: np.dtype):
        self.lattice = lattice
        self.links: dict[int, list[Link]] = {}
        words = tags.tags.copy()
        flat_words = words.reshape(-1)
        original = tags.tags.reshape(-1)
        shape = tags.tags.shape
        kinds = tags.kind.reshape(-1)
        ids = tags.layout.bc_id(tags.tags).reshape(-1)
        one = words.dtype.type(1)
        for kind in OPEN_KINDS:
            where = kinds == int(kind)
            for bc in np.unique(ids[where]):
                face, base = (int(v) for v in tags.open_table[bc])
                flat = np.flatnonzero(where & (ids == bc))
                coords = np.unravel_index(flat, shape)[::-1]
                normal = face_normal(lattice, face)
                for i in range(1, lattice.q):
                    mirror = crossed(lattice, face, i)
                    if not mirror:
                        continue
                    bit = words.dtype.type(tags.layout.link_bit(i))
                    has = ((original[flat] >> bit) & one).astype(bool)
                    k = tangential(lattice, face, i)
                    if k is not None:
                        side = words.dtype.type(tags.layout.link_bit(k))
                        has &= ~((original[flat] >> side) & one).astype(bool)
                    c_t = lattice.c[k] if k is not None else np.zeros(lattice.d, dtype=int)
                    # a mirror point beyond the array: only in a rank's ghost layer, whose
                    # nodes are not updated (their links stay wall links)
                    has &= stored(shifted(coords, -c_t, shape, tags.periodic), shape)
                    if not has.any():
                        continue
                    flat_words[flat[has]] &= ~(one << bit)
                    at = shifted([x[has] for x in coords], -c_t, shape, tags.periodic)
                    source = np.ravel_multi_index(tuple(reversed(at)), shape)
                    values = inner = rows = None
                    if kind.name in rule.VALUED_KINDS:
                        rows = base + plane_index(face, at, tuple(reversed(shape)))
                        values = np.ascontiguousarray(tags.open_values[rows].T.astype(dtype))
                    if kind.name in rule.INNER_KINDS:
                        inner = np.ravel_multi_index(tuple(reversed(shifted(
                            at, -normal, shape, tags.periodic))), shape)
                    self.links.setdefault(i, []).append(Link(
                        kind.name, flat[has], source, values, rows, inner, tuple(mirror)))
        self.tags = attrs.evolve(tags, tags=words)

    def __bool__(self) -> bool:
        return bool(self.links)

    def ghosts(self, i: int, rho: np.ndarray, u: list):
        """(flat indices, ρ_g, u_g) of every open link of direction i, from the flat node
        fields ``rho`` (N) and ``u`` (D arrays of N)."""
        for link in self.links.get(i, ()):
            value = [None] * 4 if link.values is None else list(link.values)
            inner = None if link.inner is None else rho[link.inner]
            rho_g, u_g = rule.open_ghost(link.kind, rho[link.source],
                                         [ua[link.source] for ua in u], value, inner,
                                         link.mirror)
            yield link.flat, rho_g, u_g

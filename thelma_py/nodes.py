"""Node tags of one sub-box: the data a geometry plug-in hands to a compute plug-in.

This is the contract between the two kinds of plug-in, so it lives in the core: geometry
plug-ins build a :class:`NodeTags` (``Geometry.evaluate``), compute plug-ins read it. The bit
layout of one tag word is :mod:`thelma_py.tags`.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np

from thelma_py.tags import OPEN_KINDS, SOLID_KINDS, TagLayout

FACES = ("-x", "+x", "-y", "+y", "-z", "+z")
EDGE_CODE = len(FACES)
"""Face codes (``NodeTags.open_table``): 0..5 index FACES; EDGE_CODE + mask (bit k for
FACES[k]) is an edge or corner where free-slip faces on different axes meet, named by its
faces ('-y+z')."""


def face_code(face: int | str) -> int:
    """The code of a face or of an edge / corner given by name ('-x', '-y+z') or code."""
    if not isinstance(face, str):
        return int(face)
    names = [face[k:k + 2] for k in range(0, len(face), 2)]
    if not names or any(n not in FACES for n in names) or len({n[1] for n in names}) \
            != len(names):
        raise ValueError(f"unknown face {face!r}: a face ({', '.join(FACES)}) or faces on "
                         "different axes written together ('-y+z')")
    if len(names) == 1:
        return FACES.index(names[0])
    return EDGE_CODE + sum(1 << FACES.index(n) for n in names)


def face_label(code: int | str) -> str:
    """The name of a face code (inverse of :func:`face_code`)."""
    code = face_code(code)
    if code < EDGE_CODE:
        return FACES[code]
    return "".join(n for k, n in enumerate(FACES) if (code - EDGE_CODE) >> k & 1)



@attrs.frozen
class NodeTags:
    """Tags of one sub-box, ready for a compute plug-in.

    ``tags`` has shape (Nz, Ny, Nx) (or (Ny, Nx) in 2D), C order, x fastest.
    ``halo_bc_id`` is the boundary id of every node of the sub-box grown by one node on each side
    (periodic axes wrapped, virtual wall layers beyond non-periodic faces included): the
    reference kernels read the wall velocity of a link's upstream node from it.
    ``bc_table`` has shape (n_ids, 4): ux, uy, uz, rho per boundary id.
    """

    layout: TagLayout
    tags: np.ndarray
    halo_bc_id: np.ndarray
    halo_solid: np.ndarray
    bc_table: np.ndarray
    periodic: tuple[bool, ...]
    lower: tuple[int, ...]
    global_shape: tuple[int, ...]
    face_bc_ids: dict[str, int]
    open_table: np.ndarray = attrs.field(factory=lambda: np.full((1, 2), -1, dtype=np.int32))
    """Shape (n_ids, 2), int32: per boundary id, the open face (index into FACES, −1 if none)
    and the first row of its plane in ``open_values``."""
    open_values: np.ndarray = attrs.field(factory=lambda: np.zeros((0, 4)))
    """Shape (n, 4): ux, uy, uz, ρ per node of each open face plane (tangential index
    ``y + ny z`` for ±x, ``x + nx z`` for ±y, ``x + nx y`` for ±z, local to the sub-box)."""
    curved_nodes: np.ndarray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    """Sorted flat (local) indices of the INTERPOLATED nodes."""
    curved_q: np.ndarray = attrs.field(factory=lambda: np.zeros((0, 1)))
    """Shape (len(curved_nodes), Q): per direction i, the fraction q in (0, 1] of the link
    from the node towards x − c_i at which it meets the wall of an interpolated body; NaN
    where the link is not cut by one (halfway bounce-back, q = ½, if it crosses a wall)."""
    interpolated_ids: tuple[int, ...] = ()
    """Boundary ids of the geometry's interpolated bodies, wherever they lie: the same on every
    rank of a distributed run (``curved_nodes`` holds this box's nodes only)."""

    @functools.cached_property
    def kind(self) -> np.ndarray:
        """Node kinds (uint8), decoded from the tag words once (the words do not change, and
        every output file asks for them: tens of milliseconds at 256³)."""
        return self.layout.kind(self.tags)

    @property
    def solid(self) -> np.ndarray:
        return np.isin(self.kind, [int(k) for k in SOLID_KINDS])

    @property
    def fluid(self) -> np.ndarray:
        """Nodes that stream and collide: plain fluid and open-boundary nodes."""
        return ~self.solid

    @property
    def has_open_faces(self) -> bool:
        """Open faces anywhere in the geometry (the same on every rank)."""
        return bool((self.open_table[:, 0] >= 0).any())

    @property
    def open_kinds(self) -> tuple[tuple[str, str], ...]:
        """(kind name, face) pairs present in these tags, sorted."""
        kinds = self.kind.reshape(-1)
        ids = self.layout.bc_id(self.tags).reshape(-1)
        pairs = set()
        for k in OPEN_KINDS:
            where = kinds == int(k)
            for bc in np.unique(ids[where]):
                pairs.add((k.name, face_label(int(self.open_table[bc, 0]))))
        return tuple(sorted(pairs))

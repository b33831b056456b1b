"""Host arrays the generated kernels read beside the tag words: tile flags and the edge table.

Kernels read a node's tag only inside 32-node tiles (:data:`.cuda.TILE`, one warp along x)
flagged by one byte per tile; elsewhere the tag is computed: "fluid", and with ``box_walls`` (the
LBM dense kernels) the links that cross those faces of the stored box that are walls
(:func:`face_tag_function`, :func:`face_tags`). A tile is flagged where a stored tag differs
from that. The edge table gives ``wall_id`` (:data:`.cuda.WALL_ID`) the boundary row of a wall
beyond the faces of the stored box.
"""

from __future__ import annotations

import numpy as np

from thelma_py.codegen.cuda import TILE
from thelma_py.lattice import Lattice
from thelma_py.tags import TagLayout

FACES = ("-x", "+x", "-y", "+y", "-z", "+z")
"""Bit k of ``box_walls``: face FACES[k] of the stored box is a wall."""


def edge_table(tags) -> np.ndarray:
    """Boundary ids of the 27 regions beyond the faces, in wall_id's (ox + 3 oy + 9 oz) order,
    then (first, last) stored layer inside the domain along x, y, z (all layers, except where
    a distributed rank's ghost layer lies beyond a non-periodic face). int32, 33 entries."""
    halo = tags.halo_bc_id
    if halo.ndim == 2:
        halo = halo[None]
    nz, ny, nx = halo.shape
    table = np.zeros(27 + 6, dtype=np.int32)
    stored = tuple(reversed(tags.tags.shape)) + (1,) * (3 - tags.tags.ndim)
    lower = tuple(tags.lower) + (0,) * (3 - len(tags.lower))
    total = tuple(tags.global_shape) + (1,) * (3 - len(tags.global_shape))
    periodic = tuple(tags.periodic) + (True,) * (3 - len(tags.periodic))
    for a in range(3):
        inside = (0, stored[a] - 1) if periodic[a] else (
            max(0, -lower[a]), min(stored[a], total[a] - lower[a]) - 1)
        table[27 + 2 * a: 29 + 2 * a] = inside
    for oz in range(3):
        for oy in range(3):
            for ox in range(3):
                x = (0, nx // 2, nx - 1)[ox]
                y = (0, ny // 2, ny - 1)[oy]
                z = (0, nz // 2, nz - 1)[oz] if nz > 1 else 0
                table[ox + 3 * oy + 9 * oz] = halo[z, y, x]
    return table


def any_per_tile(mask: np.ndarray) -> np.ndarray:
    """Per 32-node tile along x of a node mask ((Nz,) Ny, Nx): does any node of it hold?
    Shape (Nz or 1, Ny, ceil(Nx / 32)), the layout of the tile flags."""
    mask = mask if mask.ndim == 3 else mask[None]
    nz, ny, nx = mask.shape
    padded = np.pad(mask, ((0, 0), (0, 0), (0, (-nx) % TILE)), constant_values=False)
    return padded.reshape(nz, ny, -1, TILE).any(axis=-1)


def face_masks(lattice: Lattice) -> list[int]:
    """Link bits of a node on each face of :data:`FACES`: the links i whose upstream node
    x − c_i lies beyond that face."""
    layout = TagLayout(lattice)
    masks = []
    for axis in range(3):
        for beyond in (+1, -1):  # -face: c_i = +1 along the axis reaches back across it
            masks.append(sum(1 << layout.link_bit(i) for i in range(1, lattice.q)
                             if axis < lattice.d and int(lattice.c[i][axis]) == beyond))
    return masks


def face_tag_function(lattice: Lattice, walls: int) -> str:
    """The ``face_tag(x, y, z, nx, ny, nz)`` device function: the tag of a node in a clean
    tile, fluid with the links across the faces of the stored box named by ``walls`` (bits of
    :data:`FACES`, baked into the text; measured faster than one expression, NOTES run 38)."""
    suffix = "ull" if TagLayout(lattice).dtype.itemsize == 8 else "u"
    tests = [f"    if ({axis} == {'0' if k % 2 == 0 else f'n{axis} - 1'})"
             f" tag |= (tag_t){mask}{suffix};"
             for k, (axis, mask) in enumerate(zip("xxyyzz", face_masks(lattice), strict=True))
             if mask and walls >> k & 1]
    return "\n".join([
        "// tag of a node in a clean tile: fluid, with its links across the wall faces",
        "__device__ __forceinline__ tag_t face_tag(int x, int y, int z, int nx, int ny, int nz)",
        "{", "    tag_t tag = (tag_t)KIND_FLUID;", *tests, "    return tag;", "}"])


def face_tags(lattice: Lattice, shape: tuple, box_walls: int) -> np.ndarray:
    """What ``face_tag`` (:func:`face_tag_function`) gives at every node of a stored box of
    ``shape`` ((Nz,) Ny, Nx)."""
    layout = TagLayout(lattice)
    words = np.full(shape, layout.encode(1), dtype=layout.dtype)
    for k, mask in enumerate(face_masks(lattice)):
        axis = len(shape) - 1 - k // 2  # x is the last array axis
        if box_walls >> k & 1 and mask and axis >= 0:
            layer = [slice(None)] * len(shape)
            layer[axis] = 0 if k % 2 == 0 else shape[axis] - 1
            words[tuple(layer)] |= layout.dtype.type(mask)
    return words


def box_walls(tags) -> int:
    """Bits of :data:`FACES` whose layer's fluid nodes all have every link across the face:
    faces that are walls there (not a periodic axis, a rank's inner side or an open face)."""
    layout, words = tags.layout, tags.tags
    bits = 0
    for k, mask in enumerate(face_masks(tags.layout.lattice)):
        axis = words.ndim - 1 - k // 2
        if not mask or axis < 0:
            continue
        layer = np.take(words, 0 if k % 2 == 0 else words.shape[axis] - 1, axis=axis)
        fluid = layout.kind(layer) == 1
        crossing = (layer & layout.dtype.type(mask)) == mask
        if fluid.any() and crossing[fluid].all():
            bits |= 1 << k
    return bits


def tile_flags(tags, walls: int = 0) -> np.ndarray:
    """One byte per 32-node tile along x: 1 where a stored tag differs from the computed one,
    :func:`face_tags` with ``walls`` (0: fluid without wall links)."""
    computed = face_tags(tags.layout.lattice, tags.tags.shape, walls)
    return any_per_tile(tags.tags != computed).astype(np.uint8)

"""Open-boundary ghosts of the single-step kernel as records in its ring's halo.

Every open link of an LW-ACM node reads, as its upstream record, the ghost
:data:`.rule.OPEN_GHOSTS` of its kind built from the mirror point m, the reflection of the
ghost's position g = x − c_i across the faces the link crosses (:mod:`.open_links`). So where
all the links that end at one position g agree on the ghost (same kind and mirror axes, same
m, inner neighbour and boundary row), the ghost is a record of g alone: the single-step kernel
can write it into its shared ring where the halo cell g lies beyond the box, when it stages
the plane, and every node then reads it like any neighbour. The open nodes become plain
nodes of the bulk path (no tag read, no per-link branches), and the kernel carries no
open-boundary arms, so it keeps the registers of a kernel without them.

Where two links disagree on g (an edge between faces whose ghosts differ, a face shared by
two boundary rows), or g is a stored node (the layer of a rank's box beyond an open face),
:func:`halo_ghosts` returns None and the engine keeps the per-link arms of
:mod:`.open_kernels`. The NumPy reference is the per-link rule either way.

Layout on the device: ``ghost_index`` (int32), one entry per halo cell of the six faces of the
box padded by one cell (:func:`shell_index`; −1: no ghost, the record stays zero), and
``ghost_rows`` (int64, 4 per ghost): case (a (kind, mirror axes) pair of :attr:`HaloGhosts.cases`),
m, the inner neighbour of m (−1 if the kind has none) and the row of ``open_values`` (−1).
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lwacm.open_links import OpenLinks, stored
from thelma_py.nodes import NodeTags


@attrs.frozen
class HaloGhosts:
    cases: tuple[tuple[str, tuple[int, ...]], ...]
    """(kind name, mirror axes) of each ghost rule present, in the order of the generated
    switch."""
    index: np.ndarray
    """int32 per padded face cell: the ghost's row in :attr:`rows`, or −1."""
    rows: np.ndarray
    """int64 (n, 4): case, m, inner neighbour of m, boundary row."""
    tags: NodeTags
    """The tags with the open links' bits cleared (their ghosts come from the ring)."""


def padded_extents(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(nx, ny, nz) of an array shape ((nz,) ny, nx); nz = 1 in 2D."""
    dims = tuple(reversed(shape)) + (1,) * (3 - len(shape))
    return dims[0], dims[1], dims[2]


def shell_index(g: np.ndarray, extents: tuple[int, int, int]) -> np.ndarray:
    """Index of halo cells (g: (3, k) coordinates, at most one beyond the box along each axis,
    outside along at least one) in the table of padded faces: the first axis along which the
    cell is outside picks the face (−x, +x, −y, +y, −z, +z in that order), the other two
    coordinates (shifted by one) its cell. The CUDA twin is ``ghost_row`` in
    :mod:`.fused_kernels`."""
    nx, ny, nz = extents
    gx, gy, gz = (np.asarray(v, dtype=np.int64) for v in g)
    ax, ay, az = (ny + 2) * (nz + 2), (nx + 2) * (nz + 2), (nx + 2) * (ny + 2)
    out_x = (gx < 0) | (gx >= nx)
    out_y = (gy < 0) | (gy >= ny)
    return np.where(out_x, (gx >= nx) * ax + (gy + 1) + (ny + 2) * (gz + 1),
                    np.where(out_y, 2 * ax + (gy >= ny) * ay + (gx + 1) + (nx + 2) * (gz + 1),
                             2 * ax + 2 * ay + (gz >= nz) * az + (gx + 1) + (nx + 2) * (gy + 1)))


def table_size(extents: tuple[int, int, int]) -> int:
    nx, ny, nz = extents
    return 2 * ((ny + 2) * (nz + 2) + (nx + 2) * (nz + 2) + (nx + 2) * (ny + 2))


def halo_ghosts(lattice: Lattice, tags: NodeTags) -> HaloGhosts | None:
    """The ghosts of the open links of ``tags`` by position, or None where there are none or
    two links that end at one position disagree on its ghost."""
    links = OpenLinks(lattice, tags, np.dtype(np.float64))
    if not links:
        return None
    shape = tags.tags.shape
    extents = padded_extents(shape)
    periodic = tuple(tags.periodic) + (False,) * (3 - lattice.d)
    cases: list[tuple[str, tuple[int, ...]]] = []
    cells, described = [], []
    for i, group in sorted(links.links.items()):
        for link in group:
            coords = np.unravel_index(link.flat, shape)[::-1]  # x, y[, z]
            g = [coords[a] - int(lattice.c[i][a]) if a < lattice.d else np.zeros_like(
                link.flat) for a in range(3)]
            g = [np.where(p, v % n, v) for v, n, p in zip(g, extents, periodic, strict=True)]
            if stored(g[: lattice.d], shape).any():
                return None  # a ghost inside the array: a rank's layer beyond an open face
            case = (link.kind, tuple(link.mirror))
            if case not in cases:
                cases.append(case)
            n = len(link.flat)
            row = np.stack([np.full(n, cases.index(case)), link.source,
                            link.inner if link.inner is not None else np.full(n, -1),
                            link.value_rows if link.value_rows is not None else np.full(n, -1)
                            ]).astype(np.int64)
            cells.append(shell_index(np.array(g), extents))
            described.append(row)
    table = ghost_table(np.concatenate(cells), np.concatenate(described, axis=1).T,
                        table_size(extents))
    if table is None:
        return None
    return HaloGhosts(tuple(cases), *table, links.tags)


def ghost_table(cell: np.ndarray, rows: np.ndarray, size: int
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """(index, rows) of the ghosts of links ending at halo cells ``cell`` with descriptions
    ``rows`` (n, 4); None where two links that end at one cell describe different ghosts.

    >>> index, rows = ghost_table(np.array([3, 1, 3]), np.array([[0, 5, -1, 2], [1, 7, 6, -1],
    ...                                                           [0, 5, -1, 2]]), 5)
    >>> index.tolist(), rows.tolist()
    ([-1, 0, -1, 1, -1], [[1, 7, 6, -1], [0, 5, -1, 2]])
    >>> ghost_table(np.array([3, 3]), np.array([[0, 5, -1, 2], [0, 5, -1, 3]]), 5) is None
    True
    """
    unique_cells, first = np.unique(cell, return_index=True)
    if len(np.unique(np.column_stack([cell, rows]), axis=0)) != len(unique_cells):
        return None
    index = np.full(size, -1, dtype=np.int32)
    index[unique_cells] = np.arange(len(unique_cells), dtype=np.int32)
    return index, np.ascontiguousarray(rows[first])

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
    side_index: np.ndarray
    """int32 per column of the plane axes' faces: a row of :attr:`side_rows` or −1
    (:func:`side_columns`)."""
    side_rows: np.ndarray
    """int32 (n, 7) of :func:`side_columns`."""
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
    sides = side_columns(lattice.d, shape, tags.periodic[-1], *table)
    if sides is None:
        return None
    return HaloGhosts(tuple(cases), *table, *sides, links.tags)


def side_columns(dim: int, shape: tuple[int, ...], march_periodic: bool, index: np.ndarray,
                 rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The ghosts beyond the faces of the plane axes (x, and y in 3D) by column, so that a
    block finds its own once and rebuilds them from the ring plane by plane: ``side_index``
    (int32; per face −x, +x (by y + 1 in 3D), then −y, +y (by x + 1): a row or −1) and
    ``side_rows`` (int32 (n, 7): case, m − g along x and y, inner neighbour − g along x and
    y, the boundary row at plane 0 and its step per plane, −1 and 0 for none). A column's
    ghosts must agree on every plane the kernel rebuilds (all planes on a periodic march
    axis, else 1 ... n − 2; the end planes take the per-cell rows): the same case, m and its
    inner neighbour in the ghost's own plane at a fixed offset, the boundary row a linear
    function of the plane; None otherwise."""
    extents = padded_extents(shape)
    nm = extents[dim - 1]
    planes = np.arange(nm) if march_periodic else np.arange(1, nm - 1)
    columns: list[tuple[int, ...]] = []  # (gx, gy) per column; gy = 0 in 2D
    for gx in (-1, extents[0]):
        columns += [(gx, gy) for gy in (range(-1, extents[1] + 1) if dim == 3 else [0])]
    if dim == 3:
        for gy in (-1, extents[1]):
            columns += [(gx, gy) for gx in range(extents[0])]
    side_index = np.full(len(columns), -1, dtype=np.int32)
    side_rows = []
    for number, (gx, gy) in enumerate(columns):
        if not len(planes):
            break
        g = np.array([np.full(len(planes), gx), np.full(len(planes), gy), planes] if dim == 3
                     else [np.full(len(planes), gx), planes, np.zeros(len(planes), int)])
        found = index[shell_index(g, extents)]
        if (found < 0).all():
            continue
        if (found < 0).any():
            return None
        r = rows[found]
        m = np.array(np.unravel_index(r[:, 1], shape)[::-1])  # x, y[, z]
        offsets = [m[0] - gx] + ([m[1] - gy] if dim == 3 else [])
        in_plane = m[dim - 1] == planes
        inner = np.array(np.unravel_index(np.maximum(r[:, 2], 0), shape)[::-1])
        inner_offsets = [inner[0] - gx] + ([inner[1] - gy] if dim == 3 else [])
        inner_in_plane = (r[:, 2] < 0).all() or (inner[dim - 1] == planes).all()
        step = (r[1:, 3] - r[:-1, 3]) if len(planes) > 1 else np.zeros(1, dtype=np.int64)
        fixed = [r[:, 0], *offsets] + ([] if (r[:, 2] < 0).all() else inner_offsets)
        if not (in_plane.all() and inner_in_plane and all((v == v[0]).all() for v in fixed)
                and (step == step[0]).all() and ((r[:, 3] < 0).all() or (r[:, 3] >= 0).all())):
            return None
        has_inner, has_value = r[0, 2] >= 0, r[0, 3] >= 0
        vs = int(step[0]) if has_value else 0
        side_index[number] = len(side_rows)
        side_rows.append([int(r[0, 0]), int(offsets[0][0]),
                          int(offsets[1][0]) if dim == 3 else 0,
                          int(inner_offsets[0][0]) if has_inner else 0,
                          int(inner_offsets[1][0]) if has_inner and dim == 3 else 0,
                          int(r[0, 3] - vs * planes[0]) if has_value else -1, vs])
    return side_index, np.array(side_rows or [[0] * 7], dtype=np.int32).reshape(-1, 7)


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

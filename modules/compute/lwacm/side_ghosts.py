"""Free-slip ghosts beyond the side faces of the single-step kernel, staged as copies.

Every open link of an LW-ACM node reads, as its upstream record, the ghost
:data:`.rule.OPEN_GHOSTS` of its kind built from the mirror point m, the reflection of the
ghost's position g = x − c_i across the faces the link crosses (:mod:`.open_links`). For a
free-slip face of a plane axis (x, or y in 3D) that ghost is m's record with the velocity
components normal to the crossed faces negated, and m lies in g's own plane. So the kernel can
stage it like any neighbour: the copy of the halo cell g reads m's record instead of zeros, and
the thread that issued it negates those components once the copy has landed. The nodes of those
faces then take the plain path (no tag read, no per-link branches) and the kernel carries no
open-boundary arms, so it keeps the registers and the speed of a kernel without them.

The nodes of the planes at the ends of the march axis that have open links across its faces (an
inlet and an outlet along z in 3D) are updated by the per-link kernel (:mod:`.open_kernels`,
a launch of one plane at each end): their ghosts need boundary rows and inner neighbours.
Everywhere else the per-link rule must be a free-slip copy for every open link (same mirror
offset and axes along a column of halo cells); where it is not (an inlet on an x face, a rank box
that stores the layer beyond an open face), :func:`side_ghosts` returns None and the engine
keeps the per-link arms everywhere. The NumPy reference is the per-link rule either way.

``columns`` (int32 (n, 3)): per halo column beyond the faces −x, +x (by y + 1, y from −1 to
ny, in 3D), then −y, +y (by x, in 3D): the axes to negate (bit a: u_a; 0: no ghost, the cell
stays zero), and m − g along x and y.
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lwacm.open_links import OpenLinks, stored
from thelma_py.nodes import NodeTags


@attrs.frozen
class SideGhosts:
    columns: np.ndarray
    """int32 (n, 3): negated axes (bit mask), m − g along x and y, per halo column."""
    end_planes: tuple[int, ...]
    """Planes of the march axis whose nodes have open links across its faces: the per-link
    kernel updates them."""
    tags: NodeTags
    """The tags with the open links' bits cleared (their ghosts come from the ring)."""


def column_count(dim: int, nx: int, ny: int) -> int:
    """Halo columns beyond the plane axes' faces: 2 (ny + 2) + 2 nx in 3D, 2 in 2D."""
    return 2 * (ny + 2) + 2 * nx if dim == 3 else 2


def column_of(dim: int, gx, gy, nx: int, ny: int):
    """Column index of halo cells (gx, gy) of a plane (beyond a side face along x, or else along
    y; −1 where inside), the CUDA twin being ``side_column`` in :mod:`.fused_kernels`."""
    gx, gy = np.asarray(gx), np.asarray(gy)
    out_x = (gx < 0) | (gx >= nx)
    if dim == 2:
        return np.where(out_x, (gx >= nx).astype(int), -1)
    out_y = (gy < 0) | (gy >= ny)
    return np.where(out_x, (gx >= nx) * (ny + 2) + gy + 1,
                    np.where(out_y, 2 * (ny + 2) + (gy >= ny) * nx + gx, -1))


def side_ghosts(lattice: Lattice, tags: NodeTags) -> SideGhosts | None:
    """The free-slip side ghosts and end planes of ``tags``; None where there are no open
    links, or a link whose ghost the kernel cannot stage (see the module docstring)."""
    links = OpenLinks(lattice, tags, np.dtype(np.float64))
    if not links:
        return None
    dim = lattice.d
    shape = tags.tags.shape
    extents = tuple(reversed(shape))  # x, y[, z]
    nx, ny = extents[0], extents[1] if dim == 3 else 1
    march = dim - 1
    periodic = tuple(tags.periodic)
    ends: set[int] = set()
    cells: list[np.ndarray] = []  # rows: column, plane, mask, dx, dy
    for i, group in sorted(links.links.items()):
        c = np.asarray(lattice.c[i], dtype=int)
        for link in group:
            x = np.array(np.unravel_index(link.flat, shape)[::-1])  # (dim, n)
            g = x - c[:, None]
            g = np.array([np.where(p, v % n, v) for v, n, p in zip(g, extents, periodic,
                                                                   strict=True)])
            if stored(g, shape).any():
                return None  # a ghost inside the array: a rank's layer beyond an open face
            across_end = (g[march] < 0) | (g[march] >= extents[march])
            ends.update(int(v) for v in np.unique(x[march][across_end]))
            side = ~across_end
            if not side.any():
                continue
            if link.kind != "FREE_SLIP":
                return None
            m = np.array(np.unravel_index(link.source[side], shape)[::-1])
            gs = g[:, side]
            if (m[march] != gs[march]).any():
                return None
            mask = sum(1 << a for a in link.mirror)
            column = column_of(dim, gs[0], gs[1] if dim == 3 else 0, nx, ny)
            offsets = [m[0] - gs[0], (m[1] - gs[1]) if dim == 3 else np.zeros_like(column)]
            cells.append(np.stack([column, x[march][side], np.full(len(column), mask),
                                   *offsets]))
    columns = np.zeros((column_count(dim, nx, ny), 3), dtype=np.int32)
    if cells:
        rows = np.concatenate(cells, axis=1).T
        rows = rows[~np.isin(rows[:, 1], sorted(ends))]  # the per-link kernel's nodes
        described = np.unique(rows[:, [0, 2, 3, 4]], axis=0)
        if len(np.unique(described[:, 0])) != len(described):
            return None  # one column, two ghosts
        columns[described[:, 0]] = described[:, 1:]
    return SideGhosts(columns, tuple(sorted(ends)), links.tags)

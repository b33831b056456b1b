"""Host arrays the generated kernels read beside the tag words: tile flags and the edge table.

Kernels read a node's tag only inside 32-node tiles (:data:`.cuda.TILE`, one warp along x) that
hold a wall link or a non-fluid node, flagged by one byte per tile; elsewhere the tag is the
constant "fluid, no link". The edge table gives ``wall_id`` (:data:`.cuda.WALL_ID`) the boundary
row of a wall beyond the faces of the stored box.
"""

from __future__ import annotations

import numpy as np

from thelma_py.codegen.cuda import TILE


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


def tile_flags(tags) -> np.ndarray:
    """One byte per 32-node tile along x: 1 where a node is not fluid or has a wall link."""
    layout = tags.layout
    plain = (layout.kind(tags.tags) == 1) & (layout.links(tags.tags) == 0)
    return any_per_tile(~plain).astype(np.uint8)

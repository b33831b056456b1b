"""Evaluation of a geometry declaration into node tags (:class:`~thelma_py.nodes.NodeTags`).

:class:`Tagger` reads a snapshot of what a :class:`~thelma_py.geometry.domain.Geometry`
declared (shape, periodic axes, boundary rows, solid shapes, wall and open faces,
interpolated bodies) and tags any sub-box of the global lattice from global coordinates only,
so that tagging a sub-box gives exactly the same words as slicing the tags of the whole domain.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import attrs
import numpy as np

from thelma_py.geometry.records import BoundaryRow, OpenFace, face_axis
from thelma_py.geometry.shapes import Shape
from thelma_py.lattice import Lattice
from thelma_py.nodes import EDGE_CODE, FACES, NodeTags
from thelma_py.tags import MAX_BC_ID, NodeKind, TagLayout, halo_upstream


def node_coordinates(dim: int, lower: Sequence[int],
                     shape: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Global coordinates (x, y[, z]) of the nodes of a sub-box, as broadcastable float arrays
    over node arrays (axes reversed: (Nz, Ny, Nx))."""
    coords = []
    for axis, (lo, n) in enumerate(zip(lower, shape, strict=True)):
        x = np.arange(lo, lo + n, dtype=np.float64)
        view = [1] * dim
        view[dim - 1 - axis] = n
        coords.append(x.reshape(view))
    return tuple(coords)


@attrs.frozen
class Tagger:
    """A geometry declaration, frozen, and its evaluation to node tags."""

    shape: tuple[int, ...]
    periodic: tuple[bool, ...]
    rows: tuple[BoundaryRow, ...]
    solids: tuple[tuple[Shape, int, bool], ...]
    """(shape, boundary id, is wall) in declaration order: later ones win."""
    faces: dict[str, int]
    """Wall faces beyond the box and their boundary ids, in declaration order."""
    open: dict[str, OpenFace]
    interpolated: dict[int, Shape]
    """Bodies with interpolated bounce-back, by boundary id."""

    @property
    def dim(self) -> int:
        return len(self.shape)

    def coords(self, lower: Sequence[int], shape: Sequence[int]) -> tuple[np.ndarray, ...]:
        return node_coordinates(self.dim, lower, shape)

    def solid_and_bc(self, lower, shape) -> tuple[np.ndarray, np.ndarray]:
        """Solid mask and boundary id over a box that may reach one node beyond the domain."""
        coords = list(self.coords(lower, shape))
        outside = []
        for axis, n in enumerate(self.shape):
            if self.periodic[axis]:
                coords[axis] = np.mod(coords[axis], n)
            outside.append((coords[axis] < 0) | (coords[axis] >= n))
        full = tuple(reversed(shape))
        solid = np.zeros(full, dtype=bool)
        bc_id = np.zeros(full, dtype=np.uint8)
        for shape_, bc, is_wall in self.solids:
            inside = np.broadcast_to(shape_.contains(tuple(coords)), full)
            solid = np.where(inside, is_wall, solid)
            bc_id = np.where(inside, bc if is_wall else 0, bc_id).astype(np.uint8)
        beyond = np.zeros(full, dtype=bool)
        for axis in range(self.dim):
            beyond |= np.broadcast_to(outside[axis], full)
        bc_id = np.where(beyond, 0, bc_id).astype(np.uint8)
        for face, bc in self.faces.items():  # later faces win at edges and corners
            axis, side = face_axis(face, self.dim)
            x = coords[axis]
            mask = np.broadcast_to((x < 0) if side < 0 else (x >= self.shape[axis]), full)
            bc_id = np.where(mask, bc, bc_id).astype(np.uint8)
        return solid | beyond, bc_id

    def evaluate(self, lattice: Lattice, lower: Sequence[int] | None = None,
                 shape: Sequence[int] | None = None, ghost: bool = False) -> NodeTags:
        """Tags of the sub-box starting at node ``lower`` with ``shape`` nodes (default: all).

        With ``ghost``, the box may reach one node beyond the domain (a distributed run's ghost
        layer): such nodes wrap on periodic axes and are solid beyond the others.
        """
        if lattice.d != self.dim:
            raise ValueError(f"{lattice.name} is {lattice.d}D but the geometry is {self.dim}D")
        lower = tuple(int(v) for v in (lower if lower is not None else (0,) * self.dim))
        shape = tuple(int(v) for v in (shape if shape is not None else self.shape))
        margin = 1 if ghost else 0
        for lo, n, total in zip(lower, shape, self.shape, strict=True):
            if lo < -margin or n < 1 or lo + n > total + margin:
                raise ValueError(f"sub-box lower={lower} shape={shape} is not inside {self.shape}")
        halo_solid, halo_bc = self.solid_and_bc([lo - 1 for lo in lower], [n + 2 for n in shape])
        inner = (slice(1, -1),) * self.dim
        solid = halo_solid[inner]
        layout = TagLayout(lattice)
        links = self.wall_links(lattice, layout, halo_solid, shape)
        links[solid] = 0
        kind = np.where(solid, np.uint8(NodeKind.WALL), np.uint8(NodeKind.FLUID))
        node_bc = halo_bc[inner].copy()
        open_table = np.full((len(self.rows), 2), -1, dtype=np.int32)
        values = []
        coords = self.coords(lower, shape)
        slip_mask = np.zeros(solid.shape if self.open else (), dtype=np.uint8)  # 6 face bits
        for face, spec in self.open.items():  # later faces own the nodes they share
            axis, side = face_axis(face, self.dim)
            layer = 0 if side < 0 else self.shape[axis] - 1
            on_face = np.broadcast_to(coords[axis] == layer, solid.shape) & ~solid
            if spec.kind is NodeKind.FREE_SLIP:
                slip_mask |= on_face.astype(np.uint8) << np.uint8(FACES.index(face))
            kind[on_face] = np.uint8(spec.kind)
            node_bc[on_face] = np.uint8(spec.bc_id)
            plane = list(coords)
            plane[axis] = np.full((1,) * self.dim, float(layer))
            open_table[spec.bc_id] = (FACES.index(face), sum(len(v) for v in values))
            values.append(spec.values(tuple(plane), self.dim))
        edges = self.slip_edges()  # free-slip nodes on several free-slip faces
        open_table = np.concatenate([open_table, np.array(
            [(EDGE_CODE + mask, 0) for mask in edges], dtype=np.int32).reshape(-1, 2)])
        for mask, bc in edges.items():
            where = (kind == int(NodeKind.FREE_SLIP)) & (slip_mask == mask)
            node_bc = np.where(where, bc, node_bc).astype(np.uint8)
        curved, curved_q = self.curved(lattice, kind == int(NodeKind.FLUID), halo_solid,
                                        halo_bc, lower, links)
        kind.reshape(-1)[curved] = int(NodeKind.INTERPOLATED)
        if not (~halo_solid[inner]).any() and lower == (0,) * self.dim and shape == self.shape:
            raise ValueError("the geometry has no fluid node: every node is inside a wall; "
                             "check the wall shapes and the domain size")
        table = np.array([[*row.velocity, row.rho] for row in self.rows]
                         + [[0.0, 0.0, 0.0, 1.0]] * len(edges), dtype=np.float64)
        return NodeTags(
            layout=layout,
            tags=layout.encode(kind, node_bc, links),
            halo_bc_id=halo_bc,
            halo_solid=halo_solid,
            bc_table=table,
            periodic=self.periodic,
            lower=lower,
            global_shape=self.shape,
            face_bc_ids=dict(self.faces),
            open_table=open_table,
            open_values=np.concatenate(values) if values else np.zeros((0, 4)),
            curved_nodes=curved,
            curved_q=curved_q,
            interpolated_ids=tuple(sorted(self.interpolated)),
        )

    def slip_edges(self) -> dict[int, int]:
        """{face mask: boundary id} of every edge and corner where free-slip faces on different
        axes meet: ids after the declared rows, the same for every sub-box."""
        faces = [FACES.index(f) for f, spec in self.open.items()
                 if spec.kind is NodeKind.FREE_SLIP]
        masks = sorted({sum(1 << k for k in group) for r in (2, 3)
                        for group in itertools.combinations(faces, r)
                        if len({k // 2 for k in group}) == r})
        if len(self.rows) + len(masks) > MAX_BC_ID + 1:
            raise ValueError(f"at most {MAX_BC_ID + 1} boundary ids fit in a node tag (the "
                             f"free-slip edges and corners need {len(masks)})")
        return {mask: len(self.rows) + k for k, mask in enumerate(masks)}

    @staticmethod
    def wall_links(lattice: Lattice, layout: TagLayout, halo_solid: np.ndarray,
                   shape: Sequence[int]) -> np.ndarray:
        """Link masks (bit i − 1: the upstream node x − c_i is solid) of the sub-box's nodes, in
        the tag word's type. Only the nodes next to a solid one can have a link: they are found
        with boolean arrays (1 byte a node and direction), and only theirs are assembled in
        words (a 10^9-node domain is built on a host)."""
        windows = [tuple(slice(1 - c, 1 - c + n) for c, n in
                         zip(reversed(lattice.c[i].tolist()), reversed(shape), strict=True))
                   for i in range(1, lattice.q)]
        near = np.zeros(tuple(reversed(shape)), dtype=bool)
        for window in windows:
            near |= halo_solid[window]
        nodes = np.flatnonzero(near)
        index = np.unravel_index(nodes, near.shape)
        words = np.zeros(len(nodes), dtype=layout.dtype)
        solid = halo_solid.reshape(-1)
        for i in range(1, lattice.q):
            up = halo_upstream(index, lattice.c[i], halo_solid.shape)
            words |= solid[up].astype(layout.dtype) << layout.dtype.type(i - 1)
        links = np.zeros(near.shape, dtype=layout.dtype)
        links.reshape(-1)[nodes] = words
        return links

    def curved(self, lattice: Lattice, fluid: np.ndarray, halo_solid: np.ndarray,
                halo_bc: np.ndarray, lower, links: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sorted flat indices, q table) of the fluid nodes with links cut by interpolated
        bodies (see :attr:`NodeTags.curved_q`), looked for among the fluid nodes with a link
        (``links``: :meth:`wall_links`)."""
        if not self.interpolated:
            return np.zeros(0, dtype=np.int64), np.zeros((0, lattice.q))
        dim = self.dim
        nodes = np.flatnonzero(fluid.reshape(-1) & (links.reshape(-1) != 0))
        index = np.unravel_index(nodes, fluid.shape)  # array axes: (z, y, x)
        coords = np.stack([lower[a] + index[dim - 1 - a] for a in range(dim)],
                          axis=1).astype(np.float64)  # global x, y[, z]
        ids = np.array(sorted(self.interpolated))
        solid, bc = halo_solid.reshape(-1), halo_bc.reshape(-1)
        cut_q: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for i in range(1, lattice.q):
            c = [int(v) for v in lattice.c[i]]
            up = halo_upstream(index, c, halo_solid.shape)
            up_bc = bc[up]
            cut = solid[up] & np.isin(up_bc, ids)
            if not cut.any():
                continue
            flat, up_bc = nodes[cut], up_bc[cut]
            q = np.full(len(flat), np.nan)
            points = coords[cut]
            for a, n in enumerate(self.shape):  # a link that wraps: move the node instead
                if self.periodic[a]:
                    up = points[:, a] - c[a]
                    points[:, a] += np.where(up < 0, n, 0) - np.where(up >= n, n, 0)
            for body in np.unique(up_bc):
                sel = up_bc == body
                q[sel] = self.interpolated[int(body)].link_distance(points[sel],
                                                                     -np.array(c, float))
            # a link whose solid end the ray does not reach (another shape covers it): halfway
            cut_q[i] = (flat, np.where(np.isfinite(q) & (q > 0), q, 0.5))
        nodes = np.unique(np.concatenate([flat for flat, _ in cut_q.values()])) if cut_q \
            else np.zeros(0, dtype=np.int64)
        table = np.full((len(nodes), lattice.q), np.nan)
        for i, (flat, q) in cut_q.items():
            table[np.searchsorted(nodes, flat), i] = q
        return nodes.astype(np.int64), table

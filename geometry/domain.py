"""The domain description: size, periodic axes, shapes tagged as walls, boundary table.

A :class:`Geometry` is declarative. :meth:`Geometry.evaluate` turns it into node tags for any
sub-box of the global lattice, from global coordinates only, so that tagging a sub-box gives
exactly the same words as slicing the tags of the whole domain.

Domain edges on non-periodic axes are walls *outside* the stored lattice: the virtual node layer
just beyond each face is solid, and the halfway bounce-back wall sits half a spacing outside the
first stored node. A face can be given a velocity (a moving lid) with :meth:`Geometry.edge`.
Where a virtual node lies beyond two or more faces (an edge or corner of the box), it takes the
boundary row of the face declared last, so a lid declared after the side walls owns the corners.

Open faces (:meth:`Geometry.inlet`, :meth:`Geometry.outlet`, :meth:`Geometry.outflow`,
:meth:`Geometry.free_slip`) turn the first stored layer of a non-periodic face into
open-boundary nodes (the kinds of :data:`thelma_py.tags.OPEN_TABLE`). Rules where kinds meet:

- solid wins: a node inside a wall shape stays WALL even on an open face;
- walls win at edges: the virtual layer beyond an open face stays solid in the link mask (the
  link bits mark the populations the boundary rule rebuilds), and where it also lies beyond a
  wall face it carries that wall's row (a moving lid moves there too);
- a node on two open faces belongs to the face declared last; populations arriving from beyond
  the other face are bounced back as from a wall at rest;
- except where free-slip faces meet each other: a node on several of them gets an edge /
  corner row (face code 6 + mask of its faces) and reflects each population across every
  face it crosses.

Per-node boundary values (a velocity profile, a density) live in ``NodeTags.open_values``, one
row (ux, uy, uz, ρ) per node of each open face's plane, found through ``NodeTags.open_table``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.geometry.shapes import Box, Shape
from thelma_py.lattice import Lattice
from thelma_py.nodes import EDGE_CODE, FACES, NodeTags
from thelma_py.tags import MAX_BC_ID, OPEN_TABLE, NodeKind, TagLayout


def _face_axis(face: str, dim: int) -> tuple[int, int]:
    if face not in FACES[: 2 * dim]:
        raise ValueError(f"unknown face {face!r}; valid faces for {dim}D: {FACES[: 2 * dim]}")
    return "xyz".index(face[1]), (-1 if face[0] == "-" else 1)


@attrs.frozen
class BoundaryRow:
    """Prescribed values of one boundary id: wall velocity (lattice units) and density."""

    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rho: float = 1.0


OPEN_KIND_NAMES = {(entry.method, entry.label): entry.kind for entry in OPEN_TABLE
                   if entry.label}
"""(inlet | outlet, kind= label) -> node kind, from the core's table of open kinds."""


def _check_value(value, name: str, dim: int | None) -> None:
    if callable(value):
        return
    if dim is None:
        if not (isinstance(value, int | float) and np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number or a function of (x, y[, z]), "
                             f"got {value!r}")
        return
    if len(value) not in (dim, 3) or not all(np.isfinite(float(v)) for v in value):
        raise ValueError(f"{name} needs {dim} finite components or a function of (x, y[, z]), "
                         f"got {value!r}")


@attrs.frozen
class OpenFace:
    """One open face: its node kind, boundary id and prescribed values (numbers or functions
    of global coordinates (x, y[, z]) returning broadcastable arrays)."""

    kind: NodeKind
    bc_id: int
    velocity: Sequence[float] | Callable = (0.0, 0.0, 0.0)
    rho: float | Callable = 1.0

    def values(self, coords: tuple[np.ndarray, ...], dim: int) -> np.ndarray:
        """(n, 4) rows ux, uy, uz, ρ at the nodes of a face plane given by ``coords``."""
        shape = np.broadcast_shapes(*(c.shape for c in coords))
        velocity = self.velocity(*coords) if callable(self.velocity) else self.velocity
        rho = self.rho(*coords) if callable(self.rho) else self.rho
        if len(velocity) not in (dim, 3):
            raise ValueError(f"the velocity function of boundary {self.bc_id} returned "
                             f"{len(velocity)} components for a {dim}D domain")
        out = np.zeros((*shape, 4))
        for a, v in enumerate(velocity):
            out[..., a] = np.broadcast_to(np.asarray(v, dtype=np.float64), shape)
        out[..., 3] = np.broadcast_to(np.asarray(rho, dtype=np.float64), shape)
        if not np.isfinite(out).all():
            raise ValueError(f"boundary {self.bc_id}: the prescribed values are not finite")
        return out.reshape(-1, 4)


@attrs.define
class Geometry:
    """A lattice of ``shape`` nodes (nx, ny[, nz]) with walls and periodic axes.

    >>> geo = Geometry((8, 6), periodic=(True, False))
    >>> lid = geo.edge("+y", velocity=(0.1, 0.0))
    >>> geo.evaluate(D2Q9).tags.shape
    (6, 8)
    """

    shape: tuple[int, ...] = attrs.field(converter=lambda s: tuple(int(n) for n in s))
    periodic: tuple[bool, ...] = attrs.field(default=None)
    _rows: list[BoundaryRow] = attrs.field(factory=lambda: [BoundaryRow()], init=False)
    _solids: list[tuple[Shape, int, bool]] = attrs.field(factory=list, init=False)
    _faces: dict[str, int] = attrs.field(factory=dict, init=False)
    _open: dict[str, OpenFace] = attrs.field(factory=dict, init=False)
    _interpolated: dict[int, Shape] = attrs.field(factory=dict, init=False)

    @shape.validator
    def _check_shape(self, _, value):
        if len(value) not in (2, 3) or min(value) < 1:
            raise ValueError(f"shape must be 2 or 3 positive node counts (nx, ny[, nz]), "
                             f"got {value}")

    def __attrs_post_init__(self):
        if self.periodic is None:
            self.periodic = (False,) * self.dim
        self.periodic = tuple(bool(p) for p in self.periodic)
        if len(self.periodic) != self.dim:
            raise ValueError(f"periodic needs {self.dim} flags for a {self.dim}D shape, "
                             f"got {self.periodic}")

    @property
    def dim(self) -> int:
        return len(self.shape)

    @property
    def array_shape(self) -> tuple[int, ...]:
        """Shape of node arrays: (Nz, Ny, Nx) or (Ny, Nx)."""
        return tuple(reversed(self.shape))

    @property
    def node_count(self) -> int:
        return int(np.prod(self.shape))

    def boundary(self, velocity: Sequence[float] = (0.0, 0.0, 0.0), rho: float = 1.0) -> int:
        """Add a row to the boundary table and return its id."""
        if len(velocity) != self.dim and len(velocity) != 3:
            raise ValueError(f"velocity needs {self.dim} components, got {velocity}")
        v = tuple(float(x) for x in velocity) + (0.0,) * (3 - len(velocity))
        if len(self._rows) > MAX_BC_ID:
            raise ValueError(f"at most {MAX_BC_ID + 1} boundary ids fit in a node tag")
        self._rows.append(BoundaryRow(velocity=v, rho=float(rho)))
        return len(self._rows) - 1

    def wall(self, shape: Shape, velocity: Sequence[float] | None = None) -> int:
        """Mark the nodes inside ``shape`` as solid wall (moving if ``velocity`` is given).

        Returns the boundary id used (0 for a wall at rest).
        """
        bc_id = 0 if velocity is None else self.boundary(velocity)
        self._solids.append((shape, bc_id, True))
        return bc_id

    def body(self, shape: Shape, velocity: Sequence[float] | None = None,
             interpolated: bool = False) -> int:
        """A solid body with a boundary id of its own (at rest unless ``velocity``), so that
        forces can be reported for it alone. Returns the id.

        With ``interpolated``, the fluid nodes next to it use interpolated bounce-back with the
        exact distance to its surface (``shape.link_distance``) instead of the halfway
        staircase: second order for curved walls (compute 'lbm', pull streaming)."""
        bc_id = self.boundary(velocity if velocity is not None else (0.0,) * self.dim)
        self._solids.append((shape, bc_id, True))
        if interpolated:
            self._interpolated[bc_id] = shape
        return bc_id

    def _slip_edges(self) -> dict[int, int]:
        """{face mask: boundary id} of every edge and corner where free-slip faces on different
        axes meet: ids after the declared rows, the same for every sub-box."""
        faces = [FACES.index(f) for f, spec in self._open.items()
                 if spec.kind is NodeKind.FREE_SLIP]
        masks = sorted({sum(1 << k for k in group) for r in (2, 3)
                        for group in itertools.combinations(faces, r)
                        if len({k // 2 for k in group}) == r})
        if len(self._rows) + len(masks) > MAX_BC_ID + 1:
            raise ValueError(f"at most {MAX_BC_ID + 1} boundary ids fit in a node tag (the "
                             f"free-slip edges and corners need {len(masks)})")
        return {mask: len(self._rows) + k for k, mask in enumerate(masks)}

    def _curved(self, lattice: Lattice, fluid: np.ndarray, halo_solid: np.ndarray,
                halo_bc: np.ndarray, lower, shape) -> tuple[np.ndarray, np.ndarray]:
        """(sorted flat indices, q table) of the fluid nodes with links cut by interpolated
        bodies (see :attr:`NodeTags.curved_q`)."""
        if not self._interpolated:
            return np.zeros(0, dtype=np.int64), np.zeros((0, lattice.q))
        coords = [np.broadcast_to(c, fluid.shape).reshape(-1)
                  for c in self._coords(lower, shape)]
        ids = np.array(sorted(self._interpolated))
        cut_q: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for i in range(1, lattice.q):
            c = [int(v) for v in lattice.c[i]]
            window = tuple(slice(1 - ci, 1 - ci + n) for ci, n in
                           zip(reversed(c), reversed(shape), strict=True))
            up_bc = halo_bc[window].reshape(-1)
            cut = fluid.reshape(-1) & halo_solid[window].reshape(-1) & np.isin(up_bc, ids)
            if not cut.any():
                continue
            flat = np.flatnonzero(cut)
            q = np.full(len(flat), np.nan)
            points = np.stack([x[flat] for x in coords], axis=1)
            for a, n in enumerate(self.shape):  # a link that wraps: move the node instead
                if self.periodic[a]:
                    up = points[:, a] - c[a]
                    points[:, a] += np.where(up < 0, n, 0) - np.where(up >= n, n, 0)
            for body in np.unique(up_bc[flat]):
                sel = up_bc[flat] == body
                q[sel] = self._interpolated[int(body)].link_distance(points[sel],
                                                                     -np.array(c, float))
            # a link whose solid end the ray does not reach (another shape covers it): halfway
            cut_q[i] = (flat, np.where(np.isfinite(q) & (q > 0), q, 0.5))
        nodes = np.unique(np.concatenate([flat for flat, _ in cut_q.values()])) if cut_q \
            else np.zeros(0, dtype=np.int64)
        table = np.full((len(nodes), lattice.q), np.nan)
        for i, (flat, q) in cut_q.items():
            table[np.searchsorted(nodes, flat), i] = q
        return nodes.astype(np.int64), table

    def fluid(self, shape: Shape) -> None:
        """Turn the nodes inside ``shape`` back into fluid (a difference with earlier walls)."""
        self._solids.append((shape, 0, False))

    def edge(self, face: str, velocity: Sequence[float] | None = None) -> int:
        """Give the virtual wall beyond a non-periodic face a velocity (a moving lid)."""
        axis, _ = _face_axis(face, self.dim)
        if self.periodic[axis]:
            raise ValueError(f"face {face} is on a periodic axis: it has no wall to move")
        bc_id = 0 if velocity is None else self.boundary(velocity)
        self._faces.pop(face, None)
        self._open.pop(face, None)
        self._faces[face] = bc_id
        return bc_id

    def _add_open(self, face: str, kind: NodeKind, velocity=(0.0, 0.0, 0.0), rho=1.0) -> int:
        axis, _ = _face_axis(face, self.dim)
        if self.periodic[axis]:
            raise ValueError(f"face {face} is on a periodic axis: it cannot be an open boundary")
        if self.shape[axis] < 3:
            raise ValueError(f"face {face}: an open boundary needs at least 3 nodes along "
                             f"{'xyz'[axis]}, the domain has {self.shape[axis]}")
        bc_id = self.boundary()
        self._faces.pop(face, None)  # no longer a wall face
        self._open.pop(face, None)
        self._open[face] = OpenFace(kind, bc_id, velocity, rho)
        return bc_id

    def inlet(self, face: str, velocity: Sequence[float] | Callable,
              kind: str = "zou-he") -> int:
        """Velocity inlet on ``face``: a constant velocity or a function ``u(x, y[, z])`` of
        global node coordinates returning the components (a parabolic profile). ``kind`` is
        'zou-he' (non-equilibrium bounce-back) or 'equilibrium'. Returns the boundary id."""
        _check_value(velocity, "velocity", self.dim)
        return self._add_open(face, _open_kind("inlet", kind), velocity=velocity)

    def outlet(self, face: str, rho: float | Callable = 1.0, kind: str = "zou-he") -> int:
        """Pressure outlet on ``face``: density ρ (p = ρ/3), a number or a function of global
        coordinates; the tangential velocity is zero. ``kind`` as for :meth:`inlet`."""
        _check_value(rho, "rho", None)
        return self._add_open(face, _open_kind("outlet", kind), rho=rho)

    def outflow(self, face: str) -> int:
        """Zero-gradient outflow on ``face`` (missing populations copied from the inner
        neighbour after streaming)."""
        return self._add_open(face, NodeKind.OUTFLOW)

    def free_slip(self, face: str) -> int:
        """Free-slip (specular reflection) wall half a spacing beyond ``face``."""
        if isinstance(face, Shape):
            raise NotImplementedError("free_slip takes a face ('-x', ...); free-slip on shapes "
                                      "(curved walls) is not implemented")
        return self._add_open(face, NodeKind.FREE_SLIP)

    @property
    def open_faces(self) -> dict[str, OpenFace]:
        return dict(self._open)

    def face(self, face: str, thickness: int = 1) -> Shape:
        """The layer of stored nodes ``thickness`` deep on one face, as a shape."""
        axis, side = _face_axis(face, self.dim)
        lower = [-1.0] * self.dim
        upper = [float(n) for n in self.shape]
        n = self.shape[axis]
        lower[axis], upper[axis] = (0, thickness - 1) if side < 0 else (n - thickness, n - 1)
        return Box(lower, upper)

    def coordinates(self, lower: Sequence[int] | None = None,
                    shape: Sequence[int] | None = None) -> tuple[np.ndarray, ...]:
        """Global node coordinates (x, y[, z]) of a sub-box, as broadcastable float arrays."""
        lower = lower if lower is not None else (0,) * self.dim
        return self._coords(lower, shape if shape is not None else self.shape)

    def _coords(self, lower: Sequence[int], shape: Sequence[int]) -> tuple[np.ndarray, ...]:
        coords = []
        for axis, (lo, n) in enumerate(zip(lower, shape, strict=True)):
            x = np.arange(lo, lo + n, dtype=np.float64)
            view = [1] * self.dim
            view[self.dim - 1 - axis] = n
            coords.append(x.reshape(view))
        return tuple(coords)

    def _solid_and_bc(self, lower, shape) -> tuple[np.ndarray, np.ndarray]:
        """Solid mask and boundary id over a box that may reach one node beyond the domain."""
        coords = list(self._coords(lower, shape))
        outside = []
        for axis, n in enumerate(self.shape):
            if self.periodic[axis]:
                coords[axis] = np.mod(coords[axis], n)
            outside.append((coords[axis] < 0) | (coords[axis] >= n))
        full = tuple(reversed(shape))
        solid = np.zeros(full, dtype=bool)
        bc_id = np.zeros(full, dtype=np.uint8)
        for shape_, bc, is_wall in self._solids:
            inside = np.broadcast_to(shape_.contains(tuple(coords)), full)
            solid = np.where(inside, is_wall, solid)
            bc_id = np.where(inside, bc if is_wall else 0, bc_id).astype(np.uint8)
        beyond = np.zeros(full, dtype=bool)
        for axis in range(self.dim):
            beyond |= np.broadcast_to(outside[axis], full)
        bc_id = np.where(beyond, 0, bc_id).astype(np.uint8)
        for face, bc in self._faces.items():  # later faces win at edges and corners
            axis, side = _face_axis(face, self.dim)
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
        halo_solid, halo_bc = self._solid_and_bc([lo - 1 for lo in lower], [n + 2 for n in shape])
        inner = (slice(1, -1),) * self.dim
        solid = halo_solid[inner]
        layout = TagLayout(lattice)
        # arrays of a node's size, not 8 bytes per node (a 10^9-node domain is built on a host)
        word = layout.dtype.type
        links = np.zeros(solid.shape, dtype=layout.dtype)
        for i in range(1, lattice.q if halo_solid.any() else 1):
            # upstream node x - c_i, read from the halo array (array axes are reversed)
            window = tuple(slice(1 - c, 1 - c + n) for c, n in
                           zip(reversed(lattice.c[i].tolist()), reversed(shape), strict=True))
            links |= halo_solid[window].astype(layout.dtype) << word(i - 1)
        links[solid] = 0
        kind = np.where(solid, np.uint8(NodeKind.WALL), np.uint8(NodeKind.FLUID))
        node_bc = halo_bc[inner].copy()
        open_table = np.full((len(self._rows), 2), -1, dtype=np.int32)
        values = []
        coords = self._coords(lower, shape)
        slip_mask = np.zeros(solid.shape if self._open else (), dtype=np.uint8)  # 6 face bits
        for face, spec in self._open.items():  # later faces own the nodes they share
            axis, side = _face_axis(face, self.dim)
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
        edges = self._slip_edges()  # free-slip nodes on several free-slip faces
        open_table = np.concatenate([open_table, np.array(
            [(EDGE_CODE + mask, 0) for mask in edges], dtype=np.int32).reshape(-1, 2)])
        for mask, bc in edges.items():
            where = (kind == int(NodeKind.FREE_SLIP)) & (slip_mask == mask)
            node_bc = np.where(where, bc, node_bc).astype(np.uint8)
        curved, curved_q = self._curved(lattice, kind == int(NodeKind.FLUID), halo_solid,
                                        halo_bc, lower, shape)
        kind.reshape(-1)[curved] = int(NodeKind.INTERPOLATED)
        if not (~halo_solid[inner]).any() and lower == (0,) * self.dim and shape == self.shape:
            raise ValueError("the geometry has no fluid node: every node is inside a wall; "
                             "check the wall shapes and the domain size")
        table = np.array([[*row.velocity, row.rho] for row in self._rows]
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
            face_bc_ids=dict(self._faces),
            open_table=open_table,
            open_values=np.concatenate(values) if values else np.zeros((0, 4)),
            curved_nodes=curved,
            curved_q=curved_q,
        )


def _open_kind(role: str, kind: str) -> NodeKind:
    try:
        return OPEN_KIND_NAMES[(role, kind)]
    except KeyError:
        valid = ", ".join(repr(label) for method, label in OPEN_KIND_NAMES if method == role)
        raise ValueError(f"unknown {role} kind {kind!r}; valid: {valid}") from None


def cavity(shape: Sequence[int], lid_velocity: Sequence[float], lid_face: str = "+y") -> Geometry:
    """Closed box with one moving face (walls beyond the stored nodes on every side)."""
    geo = Geometry(shape)
    geo.edge(lid_face, velocity=lid_velocity)
    return geo


def channel(shape: Sequence[int], flow_axis: int = 0, wall_axis: int = 1) -> Geometry:
    """Walls beyond the two faces normal to ``wall_axis``; every other axis periodic."""
    periodic = [True] * len(shape)
    periodic[wall_axis] = False
    if flow_axis == wall_axis:
        raise ValueError("flow_axis and wall_axis must differ")
    return Geometry(shape, periodic=periodic)


def periodic_box(shape: Sequence[int]) -> Geometry:
    """Fully periodic domain, no walls."""
    return Geometry(shape, periodic=(True,) * len(shape))

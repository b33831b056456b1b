"""The domain description: size, periodic axes, shapes tagged as walls, boundary table.

A :class:`Geometry` is declarative. :meth:`Geometry.evaluate` turns it into node tags for any
sub-box of the global lattice, from global coordinates only, so that tagging a sub-box gives
exactly the same words as slicing the tags of the whole domain.

Domain edges on non-periodic axes are walls *outside* the stored lattice: the virtual node layer
just beyond each face is solid, and the halfway bounce-back wall sits half a spacing outside the
first stored node. A face can be given a velocity (a moving lid) with :meth:`Geometry.edge`.
Where a virtual node lies beyond two or more faces (an edge or corner of the box), it takes the
boundary row of the face declared last, so a lid declared after the side walls owns the corners.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from thelma_py.geometry.shapes import Box, Shape
from thelma_py.geometry.tags import MAX_BC_ID, NodeKind, TagLayout
from thelma_py.lattice import Lattice

FACES = ("-x", "+x", "-y", "+y", "-z", "+z")


def _face_axis(face: str, dim: int) -> tuple[int, int]:
    if face not in FACES[: 2 * dim]:
        raise ValueError(f"unknown face {face!r}; valid faces for {dim}D: {FACES[: 2 * dim]}")
    return "xyz".index(face[1]), (-1 if face[0] == "-" else 1)


@attrs.frozen
class BoundaryRow:
    """Prescribed values of one boundary id: wall velocity (lattice units) and density."""

    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rho: float = 1.0


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

    @property
    def kind(self) -> np.ndarray:
        return self.layout.kind(self.tags)

    @property
    def fluid(self) -> np.ndarray:
        return self.kind == NodeKind.FLUID

    @property
    def solid(self) -> np.ndarray:
        return ~self.fluid


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
        self._faces[face] = bc_id
        return bc_id

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
        links = np.zeros(solid.shape, dtype=np.uint64)
        for i in range(1, lattice.q if halo_solid.any() else 1):
            # upstream node x - c_i, read from the halo array (array axes are reversed)
            window = tuple(slice(1 - c, 1 - c + n) for c, n in
                           zip(reversed(lattice.c[i].tolist()), reversed(shape), strict=True))
            links |= halo_solid[window].astype(np.uint64) << np.uint64(i - 1)
        links = np.where(solid, np.uint64(0), links)
        kind = np.where(solid, int(NodeKind.WALL), int(NodeKind.FLUID))
        if not (~halo_solid[inner]).any() and lower == (0,) * self.dim and shape == self.shape:
            raise ValueError("the geometry has no fluid node: every node is inside a wall; "
                             "check the wall shapes and the domain size")
        table = np.array([[*row.velocity, row.rho] for row in self._rows], dtype=np.float64)
        return NodeTags(
            layout=layout,
            tags=layout.encode(kind, halo_bc[inner], links),
            halo_bc_id=halo_bc,
            halo_solid=halo_solid,
            bc_table=table,
            periodic=self.periodic,
            lower=lower,
            global_shape=self.shape,
            face_bc_ids=dict(self._faces),
        )


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

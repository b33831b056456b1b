"""The domain description: size, periodic axes, shapes tagged as walls, boundary table.

A :class:`Geometry` is declarative. :meth:`Geometry.evaluate` turns it into node tags for any
sub-box of the global lattice, from global coordinates only, so that tagging a sub-box gives
exactly the same words as slicing the tags of the whole domain (the evaluation lives in
:mod:`.tagging`, the declared records in :mod:`.records`).

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

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.geometry.records import BoundaryRow, OpenFace, face_axis
from thelma_py.geometry.shapes import Box, Shape
from thelma_py.geometry.tagging import Tagger, node_coordinates
from thelma_py.lattice import Lattice
from thelma_py.nodes import NodeTags
from thelma_py.tags import MAX_BC_ID, OPEN_TABLE, NodeKind

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

    def fluid(self, shape: Shape) -> None:
        """Turn the nodes inside ``shape`` back into fluid (a difference with earlier walls)."""
        self._solids.append((shape, 0, False))

    def edge(self, face: str, velocity: Sequence[float] | None = None) -> int:
        """Give the virtual wall beyond a non-periodic face a velocity (a moving lid)."""
        axis, _ = face_axis(face, self.dim)
        if self.periodic[axis]:
            raise ValueError(f"face {face} is on a periodic axis: it has no wall to move")
        bc_id = 0 if velocity is None else self.boundary(velocity)
        self._faces.pop(face, None)
        self._open.pop(face, None)
        self._faces[face] = bc_id
        return bc_id

    def _add_open(self, face: str, kind: NodeKind, velocity=(0.0, 0.0, 0.0), rho=1.0) -> int:
        axis, _ = face_axis(face, self.dim)
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
        'zou-he' (non-equilibrium bounce-back), 'equilibrium', or 'characteristic' (an
        equilibrium inlet that lets sound waves leave instead of reflecting them; LBM only).
        Returns the boundary id."""
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
        axis, side = face_axis(face, self.dim)
        lower = [-1.0] * self.dim
        upper = [float(n) for n in self.shape]
        n = self.shape[axis]
        lower[axis], upper[axis] = (0, thickness - 1) if side < 0 else (n - thickness, n - 1)
        return Box(lower, upper)

    def coordinates(self, lower: Sequence[int] | None = None,
                    shape: Sequence[int] | None = None) -> tuple[np.ndarray, ...]:
        """Global node coordinates (x, y[, z]) of a sub-box, as broadcastable float arrays."""
        lower = lower if lower is not None else (0,) * self.dim
        return node_coordinates(self.dim, lower, shape if shape is not None else self.shape)

    def tagger(self) -> Tagger:
        """A frozen snapshot of this declaration that evaluates to node tags."""
        return Tagger(self.shape, self.periodic, tuple(self._rows), tuple(self._solids),
                      dict(self._faces), dict(self._open), dict(self._interpolated))

    def evaluate(self, lattice: Lattice, lower: Sequence[int] | None = None,
                 shape: Sequence[int] | None = None, ghost: bool = False) -> NodeTags:
        """Tags of the sub-box starting at node ``lower`` with ``shape`` nodes (default: all).

        With ``ghost``, the box may reach one node beyond the domain (a distributed run's ghost
        layer): such nodes wrap on periodic axes and are solid beyond the others.
        """
        return self.tagger().evaluate(lattice, lower, shape, ghost)

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

"""Shapes: boolean functions of global node coordinates, combined with | (union), - (difference)
and & (intersection).

A shape never sees an array of the whole domain: it is evaluated on the coordinates of whatever
sub-box is asked for, so each rank of a distributed run tags only its own part. Coordinates are
node indices (node i sits at x = i), as floats, in x, y[, z] order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

BISECTIONS = 40
"""Bisection steps of :meth:`Shape.link_distance` (2^-40 of a link)."""

Coords = tuple[np.ndarray, ...]
"""Broadcastable coordinate arrays (x, y[, z]), each of shape (Nz, Ny, Nx) order-compatible."""


class Shape:
    """Base class: subclasses implement :meth:`contains`."""

    def contains(self, coords: Coords) -> np.ndarray:
        raise NotImplementedError

    def link_distance(self, points: np.ndarray, direction: np.ndarray) -> np.ndarray:
        """Where the segment p + t d (t in [0, 1]) first enters the shape, for points p
        outside and p + d inside: t per point, NaN where p + d is not inside.

        ``points`` has shape (n, D), ``direction`` shape (D,) (a lattice link −c_i, node
        units). This default bisects :meth:`contains` to 2^-40 of the link (any shape, STL
        meshes included); shapes that know their surface return the exact intersection.
        """
        points = np.asarray(points, dtype=np.float64)
        direction = np.asarray(direction, dtype=np.float64)

        def inside(t):
            return self.contains(tuple(points[:, a] + t * direction[a]
                                       for a in range(points.shape[1])))

        lo, hi = np.zeros(len(points)), np.ones(len(points))
        valid = inside(hi)
        for _ in range(BISECTIONS):
            mid = 0.5 * (lo + hi)
            into = inside(mid)
            hi, lo = np.where(into, mid, hi), np.where(into, lo, mid)
        return np.where(valid, hi, np.nan)

    def __or__(self, other: Shape) -> Shape:
        return Combined(self, other, np.logical_or, "|")

    def __and__(self, other: Shape) -> Shape:
        return Combined(self, other, np.logical_and, "&")

    def __sub__(self, other: Shape) -> Shape:
        return Combined(self, other, lambda a, b: a & ~b, "-")


@attrs.frozen
class Combined(Shape):
    left: Shape
    right: Shape
    op: Callable = attrs.field(repr=False)
    symbol: str

    def contains(self, coords: Coords) -> np.ndarray:
        return self.op(self.left.contains(coords), self.right.contains(coords))


def _vector(values: Sequence[float], name: str) -> tuple[float, ...]:
    out = tuple(float(v) for v in values)
    if len(out) not in (2, 3):
        raise ValueError(f"{name} needs 2 or 3 components, got {values!r}")
    return out


@attrs.frozen
class Box(Shape):
    """Nodes with lower <= x <= upper on every axis (inclusive node indices)."""

    lower: tuple[float, ...] = attrs.field(converter=lambda v: _vector(v, "lower"))
    upper: tuple[float, ...] = attrs.field(converter=lambda v: _vector(v, "upper"))

    def contains(self, coords: Coords) -> np.ndarray:
        inside = np.ones(np.broadcast_shapes(*(c.shape for c in coords)), dtype=bool)
        for x, lo, hi in zip(coords, self.lower, self.upper, strict=False):
            inside &= (x >= lo) & (x <= hi)
        return inside


@attrs.frozen
class Sphere(Shape):
    """Nodes within ``radius`` of ``center`` (a disc in 2D)."""

    center: tuple[float, ...] = attrs.field(converter=lambda v: _vector(v, "center"))
    radius: float = attrs.field(validator=attrs.validators.gt(0))

    def contains(self, coords: Coords) -> np.ndarray:
        r2 = sum((x - c) ** 2 for x, c in zip(coords, self.center, strict=False))
        return r2 <= self.radius**2

    def link_distance(self, points: np.ndarray, direction: np.ndarray) -> np.ndarray:
        """Exact ray-sphere (ray-circle in 2D) intersection: the smaller root."""
        points = np.asarray(points, dtype=np.float64)
        d = np.asarray(direction, dtype=np.float64)
        center = np.asarray(self.center[: points.shape[1]])
        return _entry(points - center, d, self.radius)


@attrs.frozen
class Cylinder(Shape):
    """Infinite circular cylinder along ``axis`` (0, 1, 2) through ``center`` (other two axes)."""

    center: tuple[float, float] = attrs.field(converter=tuple)
    radius: float = attrs.field(validator=attrs.validators.gt(0))
    axis: int = attrs.field(default=2, validator=attrs.validators.in_((0, 1, 2)))

    def contains(self, coords: Coords) -> np.ndarray:
        others = [x for a, x in enumerate(coords) if a != self.axis][:2]
        r2 = sum((x - c) ** 2 for x, c in zip(others, self.center, strict=True))
        full = np.broadcast_shapes(*(c.shape for c in coords))
        return np.broadcast_to(r2 <= self.radius**2, full)

    def link_distance(self, points: np.ndarray, direction: np.ndarray) -> np.ndarray:
        """Exact ray-cylinder intersection (the axis component of the ray drops out)."""
        points = np.asarray(points, dtype=np.float64)
        others = [a for a in range(points.shape[1]) if a != self.axis][:2]
        relative = points[:, others] - np.asarray(self.center, dtype=np.float64)
        return _entry(relative, np.asarray(direction, dtype=np.float64)[others], self.radius)


def _entry(relative: np.ndarray, d: np.ndarray, radius: float) -> np.ndarray:
    """Smallest t in [0, 1] with |r + t d| = radius (r: points relative to the centre, outside
    or on the surface); NaN where the segment does not reach the surface."""
    a = float(d @ d)
    if a == 0.0:
        return np.full(len(relative), np.nan)
    b = 2.0 * relative @ d
    c = (relative * relative).sum(axis=1) - radius**2
    disc = b * b - 4.0 * a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    # -(b + root) / 2a written without cancellation: 2c / (-b + root) where b < 0
    # a ray from outside that heads away from the centre (b >= 0) never enters
    t = np.clip(2.0 * c / np.where(b < 0, -b + root, 1.0), 0.0, None)
    return np.where((disc >= 0) & (b < 0) & (t <= 1.0 + 1e-12), np.minimum(t, 1.0), np.nan)


@attrs.frozen
class Mask(Shape):
    """An arbitrary boolean array over the whole domain, shape (Nz, Ny, Nx) or (Ny, Nx).

    Sub-boxes index into it, so it is the one shape that holds a global array; build it per rank
    from a function with :class:`Function` when the domain is large.
    """

    array: np.ndarray = attrs.field(converter=lambda a: np.asarray(a, dtype=bool), eq=False)

    def contains(self, coords: Coords) -> np.ndarray:
        index = tuple(np.asarray(np.rint(x), dtype=np.int64) for x in reversed(coords))
        shape = self.array.shape
        inside = np.ones(np.broadcast_shapes(*(c.shape for c in coords)), dtype=bool)
        for i, n in zip(index, shape, strict=True):
            inside &= (i >= 0) & (i < n)
        clipped = tuple(np.clip(i, 0, n - 1) for i, n in zip(index, shape, strict=True))
        return inside & self.array[clipped]


@attrs.frozen
class Function(Shape):
    """A shape from a vectorised function ``f(x, y[, z]) -> bool array``."""

    function: Callable[..., np.ndarray]

    def contains(self, coords: Coords) -> np.ndarray:
        result = np.asarray(self.function(*coords), dtype=bool)
        return np.broadcast_to(result, np.broadcast_shapes(*(c.shape for c in coords)))


@attrs.frozen
class Everything(Shape):
    def contains(self, coords: Coords) -> np.ndarray:
        return np.ones(np.broadcast_shapes(*(c.shape for c in coords)), dtype=bool)

"""Porous media: random overlapping solid spheres in a periodic box (the Boolean model).

With n spheres of volume V placed uniformly in a box of volume L^D, the expected fluid fraction
is exp(−n V / L^D); :func:`random_spheres` picks n for a requested fraction and reports the
fraction the seeded draw gives (``Geometry`` tags decide, node by node).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from thelma_py.geometry.domain import Geometry
from thelma_py.geometry.shapes import Coords, Shape


@attrs.frozen(eq=False)
class SphereUnion(Shape):
    """Union of equal spheres (discs in 2D) with periodic images in a box of ``period`` nodes.

    Evaluates each sphere on its own bounding block, so thousands of spheres cost about as
    much as their volume, not thousands of passes over the domain.
    """

    centres: np.ndarray = attrs.field(converter=lambda c: np.asarray(c, dtype=np.float64))
    """(n, D) centres in node coordinates (x, y[, z])."""
    radius: float
    period: tuple[float, ...]

    def contains(self, coords: Coords) -> np.ndarray:
        dim = len(self.period)
        axes = [np.asarray(c, dtype=np.float64) for c in coords]
        shape = np.broadcast_shapes(*(a.shape for a in axes))
        # each coordinate array varies along one array axis (x: last) or is a full array
        lines = []
        for a, values in enumerate(axes):
            axis = dim - 1 - a
            if values.size != shape[axis] and values.size != 1:
                return self._contains_points(axes, shape)
            lines.append(values.reshape(-1))
        out = np.zeros(shape, dtype=bool)
        r2 = self.radius**2
        for centre in self.centres:
            picks, offsets = [], []
            for a, line in enumerate(lines):
                d = _min_image(line - centre[a], self.period[a])
                pick = np.flatnonzero(np.abs(d) <= self.radius)
                if not len(pick):
                    break
                picks.append(pick)
                offsets.append(d[pick])
            else:
                dist = sum(np.square(o).reshape([-1 if b == dim - 1 - a else 1
                                                 for b in range(dim)])
                           for a, o in enumerate(offsets))
                block = np.ix_(*[picks[a] if lines[a].size > 1 else [0]
                                 for a in reversed(range(dim))])
                out[block] |= np.broadcast_to(dist <= r2, out[block].shape)
        return out

    def _contains_points(self, axes, shape) -> np.ndarray:
        points = np.stack([np.broadcast_to(a, shape).reshape(-1) for a in axes], axis=1)
        out = np.zeros(len(points), dtype=bool)
        for centre in self.centres:
            d = _min_image(points - centre, np.asarray(self.period))
            out |= (d * d).sum(axis=1) <= self.radius**2
        return out.reshape(shape)


def _min_image(d, period):
    return d - period * np.round(d / period)


def random_spheres(shape, fluid_fraction: float, radius: float | None = None,
                   seed: int = 0) -> Geometry:
    """A periodic box of ``shape`` nodes filled with random overlapping solid spheres so that
    about ``fluid_fraction`` of the nodes stay fluid. ``radius`` defaults to min(shape) / 16
    (at least 2 nodes)."""
    if not 0.0 < fluid_fraction < 1.0:
        raise ValueError(f"fluid_fraction must lie in (0, 1), got {fluid_fraction!r}")
    shape = tuple(int(n) for n in shape)
    dim = len(shape)
    radius = float(radius if radius is not None else max(2.0, min(shape) / 16))
    volume = math.pi * radius**2 if dim == 2 else 4.0 / 3.0 * math.pi * radius**3
    count = max(1, round(-math.log(fluid_fraction) * math.prod(shape) / volume))
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 1.0, (count, dim)) * np.asarray(shape, dtype=np.float64)
    geo = Geometry(shape, periodic=(True,) * dim)
    geo.wall(SphereUnion(centres, radius, tuple(float(n) for n in shape)))
    return geo

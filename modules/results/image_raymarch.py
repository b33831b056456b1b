"""A 3D view: rays from a pinhole camera marched through a scalar volume to the first sample at
or above an iso level, or the first solid sample, then shaded (NumPy or CuPy arrays, one code).

Sampling is nearest-node at a fixed step (half a voxel by default); rays that hit or leave the
volume are dropped from the march (early termination), so the work follows the rays still
going. Coordinates are lattice nodes: node (i, j, k) sits at (x, y, z) = (i, j, k); a volume
thinned by ``stride`` has voxel (a, b, c) at node (a, b, c) * stride.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from thelma_py.backend import array_module
from thelma_py.modules.results.image_render import BACKGROUND

SOLID_GREY = 176
AMBIENT = 0.35
"""Share of the colour kept where the surface faces away from the light (a headlight)."""


@attrs.frozen
class Camera:
    """Pinhole camera: ``position`` looking at ``target`` with ``up`` roughly upwards and a
    vertical field of view ``fov`` (degrees)."""

    position: tuple[float, float, float]
    target: tuple[float, float, float]
    fov: float = 40.0
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)

    @classmethod
    def orbit(cls, shape_xyz: tuple[int, int, int], azimuth: float, elevation: float,
              distance: float = 1.6, fov: float = 40.0) -> Camera:
        """Looking at the domain centre from ``azimuth`` (degrees from +x towards +y) and
        ``elevation`` (degrees above the x-y plane), ``distance`` domain diagonals away."""
        centre = np.array([(n - 1) / 2 for n in shape_xyz])
        diagonal = float(np.linalg.norm(shape_xyz))
        a, e = math.radians(azimuth), math.radians(elevation)
        offset = np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])
        up = (0.0, 0.0, 1.0) if abs(math.cos(e)) > 1e-6 else (-math.cos(a), -math.sin(a), 0.0)
        return cls(tuple(centre + distance * diagonal * offset), tuple(centre), fov, up)

    def rays(self, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """Origin (3,) and unit directions (height * width, 3), row 0 on top (float64)."""
        eye, target = np.asarray(self.position, float), np.asarray(self.target, float)
        forward = target - eye
        if np.linalg.norm(forward) == 0:
            raise ValueError("camera position and target coincide")
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, np.asarray(self.up, float))
        if np.linalg.norm(right) < 1e-9:  # looking along up: any perpendicular will do
            right = np.cross(forward, [1.0, 0.0, 0.0])
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        half = math.tan(math.radians(self.fov) / 2)
        sx = (2 * (np.arange(width) + 0.5) / width - 1) * half * width / height
        sy = (1 - 2 * (np.arange(height) + 0.5) / height) * half
        d = forward + sx[None, :, None] * right + sy[:, None, None] * up
        d = d.reshape(-1, 3)
        return eye, d / np.linalg.norm(d, axis=1, keepdims=True)


def _box_interval(eye, directions, upper):
    """Entry and exit distances of every ray through the box [-0.5, upper - 0.5]^3."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = 1.0 / directions
        a = (-0.5 - eye) * inverse
        b = (np.asarray(upper) - 0.5 - eye) * inverse
    near = np.nan_to_num(np.minimum(a, b), nan=-np.inf).max(axis=1)
    far = np.nan_to_num(np.maximum(a, b), nan=np.inf).min(axis=1)
    return np.maximum(near, 0.0), far


def march(value, solid, iso: float, eye, directions, step: float = 0.5):
    """First hit along every ray: (what, voxel) with what 0 = nothing, 1 = ``value`` >= ``iso``,
    2 = a ``solid`` voxel, and the flat voxel index hit (−1 for none).

    ``value``: volume (nz, ny, nx) on any device; ``solid``: bool of the same shape, or None;
    ``eye`` (3,) and ``directions`` (P, 3) in voxel units (host). Rays advance in lockstep by
    ``step`` voxels from where they enter the volume.
    """
    xp = array_module(value)
    nz, ny, nx = value.shape
    near, far = _box_interval(np.asarray(eye, float), directions, (nx, ny, nz))
    flat_value = value.reshape(-1)
    flat_solid = solid.reshape(-1) if solid is not None else None
    count = directions.shape[0]
    what = xp.zeros(count, dtype=xp.uint8)
    voxel = xp.full(count, -1, dtype=xp.int64)
    alive = xp.asarray(np.flatnonzero(near < far))
    if alive.size == 0:
        return what, voxel
    d = xp.asarray(directions)
    eye_d = xp.asarray(np.asarray(eye, float))
    near_d, far_d = xp.asarray(near), xp.asarray(far)
    limits = xp.asarray([nx - 1, ny - 1, nz - 1])
    steps = int(math.ceil(float((far - near)[near < far].max()) / step)) + 1
    for k in range(steps):
        t = near_d[alive] + (k + 0.5) * step
        inside = t < far_d[alive]
        position = eye_d + t[:, None] * d[alive]
        index = xp.clip(xp.floor(position + 0.5).astype(xp.int64), 0, limits)
        flat = (index[:, 2] * ny + index[:, 1]) * nx + index[:, 0]
        hit_value = inside & (flat_value[flat] >= iso)
        hit_solid = inside & flat_solid[flat] if flat_solid is not None else hit_value & False
        hit = hit_value | hit_solid
        what[alive[hit]] = xp.where(hit_solid[hit], 2, 1).astype(xp.uint8)
        voxel[alive[hit]] = flat[hit]
        alive = alive[inside & ~hit]
        if alive.size == 0:
            break
    return what, voxel


def _normals(volume, voxel):
    """Unit gradient of ``volume`` at the flat voxel indices (central differences, one-sided at
    the faces); zero where the gradient vanishes."""
    xp = array_module(volume)
    nz, ny, nx = volume.shape
    z, rest = voxel // (ny * nx), voxel % (ny * nx)
    y, x = rest // nx, rest % nx
    flat = volume.reshape(-1).astype(xp.float32)
    parts = []
    for coordinate, n, stride in ((x, nx, 1), (y, ny, nx), (z, nz, nx * ny)):
        plus = xp.minimum(coordinate + 1, n - 1)
        minus = xp.maximum(coordinate - 1, 0)
        span = xp.maximum(plus - minus, 1).astype(xp.float32)
        parts.append((flat[voxel + (plus - coordinate) * stride]
                      - flat[voxel + (minus - coordinate) * stride]) / span)
    g = xp.stack(parts, axis=1)
    length = xp.sqrt((g * g).sum(axis=1, keepdims=True))
    return xp.where(length > 0, g / xp.where(length > 0, length, 1), 0)


def shade(what, voxel, value, solid, colour_rows, table: np.ndarray, directions, width: int,
          height: int):
    """RGB uint8 (height, width, 3) of the hits of :func:`march`: iso hits coloured by
    ``colour_rows`` (a uint8 colour-table row per voxel) through ``table``, solid hits grey,
    both shaded by a headlight; background elsewhere."""
    xp = array_module(value)
    image = xp.empty((what.size, 3), dtype=xp.uint8)
    image[:] = xp.asarray(BACKGROUND, dtype=xp.uint8)
    d = xp.asarray(directions, dtype=xp.float32)
    for code in (1, 2):
        rays = xp.flatnonzero(what == code)
        if rays.size == 0:
            continue
        hit = voxel[rays]
        source = value if code == 1 else solid.astype(xp.float32)
        facing = xp.abs((_normals(source, hit) * d[rays]).sum(axis=1))
        facing = xp.where(facing > 0, facing, 1.0)  # no gradient: lit fully
        light = (AMBIENT + (1 - AMBIENT) * facing)[:, None]
        if code == 1:
            base = xp.asarray(table)[colour_rows.reshape(-1)[hit]].astype(xp.float32)
        else:
            base = xp.full((rays.size, 3), SOLID_GREY, dtype=xp.float32)
        image[rays] = xp.clip(xp.floor(base * light + 0.5), 0, 255).astype(xp.uint8)
    return image.reshape(height, width, 3)

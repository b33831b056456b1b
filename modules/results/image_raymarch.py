"""A 3D view: rays from a pinhole camera marched through a scalar volume to the first sample at
or above an iso level, or the first solid sample, then shaded (NumPy or CuPy arrays, one code).

Samples at a fixed step (half a voxel by default): the value is interpolated trilinearly, the
solid flag and the recorded voxel are the nearest node's; a ray stops at its first hit. On a
GPU one CUDA thread marches one ray (:data:`MARCH_SOURCE`); its NumPy twin marches all rays in
lockstep with the same float32 arithmetic. Coordinates are lattice nodes:
node (i, j, k) sits at (x, y, z) = (i, j, k); a volume thinned by ``stride`` has voxel
(a, b, c) at node (a, b, c) * stride.
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


MARCH_SOURCE = r"""
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <math.h>
#define MUL(a, b) ((a) * (b))
#define ADD(a, b) ((a) + (b))
#define IMAGE_INF INFINITY
#else
#define MUL(a, b) __fmul_rn(a, b)
#define ADD(a, b) __fadd_rn(a, b)
#define IMAGE_INF __int_as_float(0x7f800000)  // NVRTC has no math.h and its macros
#endif
#define CLAMP(i, n) ((i) < 0 ? 0 : ((i) > (n) - 1 ? (n) - 1 : (i)))
// One thread per ray: march from near to far in steps, stop at the first sample that is solid
// (nearest voxel) or whose trilinear value is at least iso; record the nearest voxel.
// Products and sums are rounded one by one (no fused multiply-add), as in the NumPy twin
// image_raymarch._march_numpy.
#define BRICK 8
// Empty-space skipping: the largest value of the nodes 8b..8b+8 of brick b along each axis
// (+inf where one of them is solid). A sample whose lower trilinear corner (x0, y0, z0) lies
// in brick b reads nodes of that range only (x0 + 1 <= 8b + 8; the nearest voxel is x0 or
// x0 + 1), so it cannot hit when the brick's value is below iso.
extern "C" __global__ void image_bricks(const float* value, const unsigned char* solid, int nx,
    int ny, int nz, int bricks_x, int bricks_y, int bricks_z, float* bricks)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= bricks_x * bricks_y * bricks_z) return;
    int x1 = (b % bricks_x) * BRICK, y1 = ((b / bricks_x) % bricks_y) * BRICK;
    int z1 = (b / (bricks_x * bricks_y)) * BRICK;
    float top = -IMAGE_INF;
    for (int z = z1; z <= z1 + BRICK && z < nz; ++z)
        for (int y = y1; y <= y1 + BRICK && y < ny; ++y)
            for (int x = x1; x <= x1 + BRICK && x < nx; ++x) {
                int f = (z * ny + y) * nx + x;
                top = solid[f] ? IMAGE_INF : fmaxf(top, value[f]);
            }
    bricks[b] = top;
}

// Where the ray leaves the region of lower corners [8b, 8b + 8) of a brick along one axis.
__device__ float brick_exit(float e, float d, int b)
{
    if (d == 0.0f) return IMAGE_INF;
    return ((d > 0.0f ? (float)(BRICK * b + BRICK) : (float)(BRICK * b)) - e) / d;
}

extern "C" __global__ void image_march(const float* value, const unsigned char* solid,
    const float* iso_at, float ex, float ey, float ez, const float* dirs, const float* near,
    const float* far, int nx, int ny, int nz, float step, int rays, unsigned char* what,
    int* voxel, const float* bricks, int bricks_x, int bricks_y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rays) return;
    const float iso = *iso_at;  // on the device: an automatic level is not read back
    what[r] = 0;
    voxel[r] = -1;
    float dx = dirs[3 * r], dy = dirs[3 * r + 1], dz = dirs[3 * r + 2];
    float t0 = near[r], t1 = far[r];
    for (int k = 0;; ++k) {
        float t = ADD(t0, MUL((float)k + 0.5f, step));
        if (!(t < t1)) return;
        float px = ADD(ex, MUL(t, dx)), py = ADD(ey, MUL(t, dy)), pz = ADD(ez, MUL(t, dz));
        int ix = CLAMP((int)floorf(ADD(px, 0.5f)), nx);
        int iy = CLAMP((int)floorf(ADD(py, 0.5f)), ny);
        int iz = CLAMP((int)floorf(ADD(pz, 0.5f)), nz);
        int f = (iz * ny + iy) * nx + ix;
        bool s = solid[f] != 0;
        // trilinear value between the 8 nodes around p (clamped into the volume)
        px = fminf(fmaxf(px, 0.0f), (float)(nx - 1));
        py = fminf(fmaxf(py, 0.0f), (float)(ny - 1));
        pz = fminf(fmaxf(pz, 0.0f), (float)(nz - 1));
        int x0 = (int)floorf(px), y0 = (int)floorf(py), z0 = (int)floorf(pz);
        int cx = x0 / BRICK, cy = y0 / BRICK, cz = z0 / BRICK;
        if (!s && bricks[(cz * bricks_y + cy) * bricks_x + cx] < iso) {
            // no sample before the ray leaves this brick can hit: jump to the last one at
            // least 0.01 voxel before the exit (margin for the rounding of positions)
            float out = fminf(fminf(brick_exit(ex, dx, cx), brick_exit(ey, dy, cy)),
                              brick_exit(ez, dz, cz));
            float last = floorf((out - 0.01f - t0) / step - 0.5f);
            if (last > (float)(k + 1)) k = (int)fminf(last, 2.0e9f) - 1;
            continue;
        }
        int sx = x0 < nx - 1 ? 1 : 0, sy = y0 < ny - 1 ? nx : 0;
        int sz = z0 < nz - 1 ? nx * ny : 0;
        float fx = ADD(px, -(float)x0), fy = ADD(py, -(float)y0), fz = ADD(pz, -(float)z0);
        float gx = ADD(1.0f, -fx), gy = ADD(1.0f, -fy), gz = ADD(1.0f, -fz);
        const float* c = value + (z0 * ny + y0) * nx + x0;
        float c00 = ADD(MUL(c[0], gx), MUL(c[sx], fx));
        float c10 = ADD(MUL(c[sy], gx), MUL(c[sy + sx], fx));
        float c01 = ADD(MUL(c[sz], gx), MUL(c[sz + sx], fx));
        float c11 = ADD(MUL(c[sz + sy], gx), MUL(c[sz + sy + sx], fx));
        float v = ADD(MUL(ADD(MUL(c00, gy), MUL(c10, fy)), gz),
                      MUL(ADD(MUL(c01, gy), MUL(c11, fy)), fz));
        if (s || v >= iso) {
            what[r] = s ? 2 : 1;
            voxel[r] = f;
            return;
        }
    }
}
"""
BLOCK = 128
BRICK = 8
"""Nodes per side of the bricks of the empty-space skipping (``#define BRICK`` above)."""


def march(value, solid, iso: float, eye, directions, step: float = 0.5):
    """First hit along every ray: (what, voxel) with what 0 = nothing, 1 = ``value`` >= ``iso``,
    2 = a ``solid`` voxel, and the flat voxel index hit (int32, −1 for none).

    ``value``: float32 volume (nz, ny, nx) on any device; ``solid``: bool of the same shape,
    or None; ``eye`` (3,) and ``directions`` (P, 3) in voxel units (host). Rays advance by
    ``step`` voxels from where they enter the volume. NumPy arrays: :func:`_march_numpy`;
    CuPy arrays: the kernel :data:`MARCH_SOURCE` (the same arithmetic in float32).
    """
    xp = array_module(value)
    eye32 = np.asarray(eye, np.float32)
    d32 = np.asarray(directions, np.float32)  # no copy when the caller keeps float32 rays
    if solid is None:
        solid = xp.zeros(value.shape, dtype=bool)
    if xp is np:
        return _march_numpy(np.asarray(value, np.float32), solid, np.float32(iso), eye32, d32,
                            np.float32(step))
    return march_kernel(xp, value, solid, iso, eye32, d32, step)


_PREPARED: dict = {}
"""The last rays prepared for a march (their entry/exit distances, on the device): the
plug-in renders the same rays at every step."""


def _prepared(xp, shape, eye32, d32):
    """(directions, near, far) on the device of ``xp`` for these rays, cached for the last."""
    key = (xp.__name__, tuple(shape), eye32.tobytes(), d32.shape, d32[::9973].tobytes())
    if _PREPARED.get("key") != key:
        near, far = _intervals(shape, eye32, d32)
        _PREPARED.clear()
        _PREPARED.update(key=key, value=(xp.asarray(d32), xp.asarray(near), xp.asarray(far)))
    return _PREPARED["value"]


def _intervals(shape, eye, directions):
    """float32 entry and exit distances of the rays (in float64 on the host, then rounded)."""
    nz, ny, nx = shape
    near, far = _box_interval(np.asarray(eye, float), np.asarray(directions, float), (nx, ny, nz))
    near = near.astype(np.float32)
    far = np.where(near < far, far, near).astype(np.float32)  # a miss: no step is taken
    return near, far


def march_kernel(cp, value, solid, iso, eye32, d32, step):
    """The CUDA march (``cp``: cupy, or the host stand-in of the tests)."""
    from thelma_py.codegen.compile import compile_module

    d, near, far = _prepared(cp, value.shape, eye32, d32)
    nz, ny, nx = value.shape
    rays = d32.shape[0]
    what = cp.zeros(rays, dtype=np.uint8)
    voxel = cp.zeros(rays, dtype=np.int32)
    module = compile_module(MARCH_SOURCE)
    value = cp.ascontiguousarray(value)
    solid = cp.ascontiguousarray(solid).view(np.uint8)
    bx, by, bz = ((n - 1) // BRICK + 1 for n in (nx, ny, nz))
    bricks = cp.empty(bx * by * bz, dtype=np.float32)
    module.get_function("image_bricks")(
        ((bricks.size + BLOCK - 1) // BLOCK,), (BLOCK,),
        (value, solid, np.int32(nx), np.int32(ny), np.int32(nz), np.int32(bx), np.int32(by),
         np.int32(bz), bricks))
    module.get_function("image_march")(
        ((rays + BLOCK - 1) // BLOCK,), (BLOCK,),
        (value, solid, cp.asarray(iso, dtype=np.float32).reshape(1),
         *(np.float32(v) for v in eye32), d, near, far, np.int32(nx), np.int32(ny),
         np.int32(nz), np.float32(step), np.int32(rays), what, voxel, bricks, np.int32(bx),
         np.int32(by)))
    return what, voxel


def _trilinear(flat_value, position, sizes):
    """float32 trilinear values at the points (P, 3) clamped into the volume, in the
    kernel's order of operations."""
    upper = np.array([n - 1 for n in sizes], dtype=np.float32)
    p = np.minimum(np.maximum(position, np.float32(0)), upper)
    low = np.floor(p).astype(np.int64)
    nx, ny, _ = sizes
    step = [np.where(low[:, a] < sizes[a] - 1, s, 0) for a, s in enumerate((1, nx, nx * ny))]
    f = p - low.astype(np.float32)
    g = np.float32(1) - f
    base = (low[:, 2] * ny + low[:, 1]) * nx + low[:, 0]
    sx, sy, sz = step

    def edge(offset):
        return flat_value[base + offset] * g[:, 0] + flat_value[base + offset + sx] * f[:, 0]

    c00, c10, c01, c11 = edge(0), edge(sy), edge(sz), edge(sz + sy)
    return (c00 * g[:, 1] + c10 * f[:, 1]) * g[:, 2] + (c01 * g[:, 1] + c11 * f[:, 1]) * f[:, 2]


def _march_numpy(value, solid, iso, eye32, d32, step):
    """The NumPy twin of :data:`MARCH_SOURCE`: all rays in lockstep, rays that hit or leave
    dropped from the march, every product and sum rounded to float32 as in the kernel."""
    _, near, far = _prepared(np, value.shape, eye32, d32)
    nz, ny, nx = value.shape
    flat_value, flat_solid = value.reshape(-1), np.asarray(solid).reshape(-1)
    what = np.zeros(d32.shape[0], dtype=np.uint8)
    voxel = np.full(d32.shape[0], -1, dtype=np.int32)
    alive = np.flatnonzero(near < far)
    limits = np.array([nx - 1, ny - 1, nz - 1])
    half = np.float32(0.5)
    k = 0
    while alive.size:
        t = near[alive] + np.float32(k + 0.5) * step
        going = t < far[alive]
        alive, t = alive[going], t[going]
        position = eye32 + t[:, None] * d32[alive]
        index = np.clip(np.floor(position + half).astype(np.int64), 0, limits)
        flat = (index[:, 2] * ny + index[:, 1]) * nx + index[:, 0]
        hit_solid = flat_solid[flat]
        hit = hit_solid | (_trilinear(flat_value, position, (nx, ny, nz)) >= iso)
        what[alive[hit]] = np.where(hit_solid[hit], 2, 1)
        voxel[alive[hit]] = flat[hit]
        alive = alive[~hit]
        k += 1
    return what, voxel


def _normals(volume, voxel):
    """Unit gradient of ``volume`` at the flat voxel indices (central differences, one-sided at
    the faces); zero where the gradient vanishes."""
    xp = array_module(volume)
    nz, ny, nx = volume.shape
    z, rest = voxel // (ny * nx), voxel % (ny * nx)
    y, x = rest // nx, rest % nx
    flat = volume.reshape(-1).astype(xp.float32, copy=False)
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


def shade(what, voxel, value, solid, colour, lo, hi, table: np.ndarray, directions,
          width: int, height: int):
    """RGB uint8 (height, width, 3) of the hits of :func:`march`: iso hits coloured by the
    volume ``colour`` on the range ``lo``..``hi`` through ``table``, solid hits grey, both
    shaded by a headlight; background elsewhere. Every ray is shaded and the kind of hit
    picks the colour afterwards: no array of data-dependent size, so nothing waits for the
    device. ``solid`` may be given as float32 (0/1) to save a conversion per view."""
    from thelma_py.modules.results.image_render import colour_indices, device_table

    xp = array_module(value)
    at = xp.maximum(voxel, 0)
    d = xp.asarray(directions, dtype=xp.float32)

    def light(source):
        facing = xp.abs((_normals(source, at) * d).sum(axis=1))
        facing = xp.where(facing > 0, facing, 1.0)  # no gradient: lit fully
        return (AMBIENT + (1 - AMBIENT) * facing)[:, None]

    rows = colour_indices(colour.reshape(-1)[at], lo, hi)
    iso = device_table(xp, table)[rows].astype(xp.float32) * light(value)
    grey = SOLID_GREY * light(solid)
    shaded = xp.clip(xp.floor(xp.where((what == 2)[:, None], grey, iso) + 0.5), 0, 255)
    background = xp.asarray(BACKGROUND, dtype=xp.uint8)
    image = xp.where((what == 0)[:, None], background, shaded.astype(xp.uint8))
    return image.reshape(height, width, 3)

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


_SHADE_DEFINES = f"""
#define SHADE_AMBIENT {float(np.float32(AMBIENT))!r}f
#define SHADE_DIFFUSE {float(np.float32(1 - AMBIENT))!r}f
#define SHADE_GREY {float(SOLID_GREY)!r}f
#define SHADE_BACKGROUND_R {BACKGROUND[0]}
#define SHADE_BACKGROUND_G {BACKGROUND[1]}
#define SHADE_BACKGROUND_B {BACKGROUND[2]}
"""
MARCH_SOURCE = _SHADE_DEFINES + r"""
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <math.h>
#include <string.h>
#define MUL(a, b) ((a) * (b))
#define ADD(a, b) ((a) + (b))
#define IMAGE_INF INFINITY
static inline unsigned int __float_as_uint(float v)
{
    unsigned int b;
    memcpy(&b, &v, sizeof b);
    return b;
}
static inline unsigned int atomicMax(unsigned int* at, unsigned int v)  // threads run in turn
{
    const unsigned int old = *at;
    *at = v > old ? v : old;
    return old;
}
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
// Ordered key of a float: a < b exactly when key(a) < key(b) (no NaN), so an atomic max of
// keys is a max of floats.
__device__ unsigned int order_key(float v)
{
    const unsigned int b = __float_as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Empty-space skipping: the key of the largest value of the nodes 8b..8b+8 of brick b along
// each axis (+inf where one of them is solid); bricks start at key(-inf). A sample whose lower
// trilinear corner (x0, y0, z0) lies in brick b reads nodes of that range only (x0 + 1 <=
// 8b + 8; the nearest voxel is x0 or x0 + 1), so it cannot hit when the brick's value is below
// iso. One thread per brick column and node row (cx, y, z): the largest of x = 8cx..8cx+8,
// then an atomic max into every brick whose node range holds (y, z) (two along an axis where
// the node is a brick corner 8k, k > 0).
extern "C" __global__ void image_bricks(const float* value, const unsigned char* solid, int nx,
    int ny, int nz, int bricks_x, int bricks_y, int bricks_z, unsigned int* bricks)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)bricks_x * ny * nz) return;
    const int cx = (int)(i % bricks_x), y = (int)((i / bricks_x) % ny);
    const int z = (int)(i / ((long long)bricks_x * ny));
    const long long row = ((long long)z * ny + y) * nx;
    float top = -IMAGE_INF;
    for (int x = cx * BRICK; x <= cx * BRICK + BRICK && x < nx; ++x)
        top = solid[row + x] ? IMAGE_INF : fmaxf(top, value[row + x]);
    const unsigned int key = order_key(top);
    const int y0 = y / BRICK - (y % BRICK == 0 && y > 0 ? 1 : 0);
    const int z0 = z / BRICK - (z % BRICK == 0 && z > 0 ? 1 : 0);
    for (int cz = z0; cz <= z / BRICK; ++cz)
        for (int cy = y0; cy <= y / BRICK; ++cy)
            atomicMax(bricks + ((long long)cz * bricks_y + cy) * bricks_x + cx, key);
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
    int* voxel, const unsigned int* bricks, int bricks_x, int bricks_y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rays) return;
    const float iso = *iso_at;  // on the device: an automatic level is not read back
    const unsigned int iso_key = order_key(iso);
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
        if (!s && bricks[(cz * bricks_y + cy) * bricks_x + cx] < iso_key) {
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

// Partial extrema of a volume of n samples, thread t of `threads` (all of the launch) taking
// samples t, t + threads, ...:
// mode 0: the largest value of the samples that are not solid (lo untouched); mode 1: the
// smallest and largest finite colour of the samples that are not solid and whose value is at
// least *iso_at. A thread that meets none leaves lo = +inf, hi = -inf.
extern "C" __global__ void image_extrema(const float* value, const unsigned char* solid,
    const float* colour, const float* iso_at, int n, int threads, int mode, float* lo,
    float* hi)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float low = IMAGE_INF, high = -IMAGE_INF;
    const float iso = mode == 1 ? *iso_at : 0.0f;
    for (long long i = t; i < n; i += threads) {
        if (solid[i]) continue;
        if (mode == 0) {
            high = fmaxf(high, value[i]);
        } else if (value[i] >= iso) {
            const float c = colour[i];
            if (c == c && fabsf(c) <= 3.4028234663852886e38f) {
                low = fminf(low, c);
                high = fmaxf(high, c);
            }
        }
    }
    lo[t] = low;
    hi[t] = high;
}

// Facing light of a surface hit at flat voxel f (image_raymarch._normals and shade's light:
// the unit central-difference gradient of the volume, one-sided at the faces; a vanishing
// gradient lights fully): AMBIENT + (1 - AMBIENT) |n . d|. The solid volume is read as 0/1.
__device__ float hit_light(const float* value, const unsigned char* solid, int of_solid,
    long long f, int nx, int ny, int nz, float dx, float dy, float dz)
{
    const long long plane = (long long)nx * ny;
    const int at[3] = {(int)(f % nx), (int)((f / nx) % ny), (int)(f / plane)};
    const int size[3] = {nx, ny, nz};
    const long long stride[3] = {1, nx, plane};
    float g[3];
    for (int a = 0; a < 3; ++a) {
        const int plus = at[a] + 1 < size[a] ? at[a] + 1 : size[a] - 1;
        const int minus = at[a] > 0 ? at[a] - 1 : 0;
        const long long up = f + (plus - at[a]) * stride[a];
        const long long down = f + (minus - at[a]) * stride[a];
        const float span = (float)(plus - minus > 1 ? plus - minus : 1);
        const float high = of_solid ? (float)solid[up] : value[up];
        const float low = of_solid ? (float)solid[down] : value[down];
        g[a] = ADD(high, -low) / span;
    }
    const float length = sqrtf(ADD(ADD(MUL(g[0], g[0]), MUL(g[1], g[1])), MUL(g[2], g[2])));
    float facing = 0.0f;
    if (length > 0.0f)
        facing = fabsf(ADD(ADD(MUL(g[0] / length, dx), MUL(g[1] / length, dy)),
                           MUL(g[2] / length, dz)));
    if (!(facing > 0.0f)) facing = 1.0f;
    return ADD(SHADE_AMBIENT, MUL(SHADE_DIFFUSE, facing));
}

// One thread per ray: its RGB pixel (image_raymarch._shade_numpy, the same float32
// arithmetic; the colour row in double): iso hits coloured by `colour` on range[0]..range[1]
// through the 256-row table, solid hits grey, both lit by hit_light; background elsewhere.
extern "C" __global__ void image_shade(const unsigned char* what, const int* voxel,
    const float* value, const unsigned char* solid, const float* colour, const double* range,
    const unsigned char* table, const float* dirs, int nx, int ny, int nz, int rays,
    unsigned char* out)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rays) return;
    const int kind = what[r];
    unsigned char* pixel = out + 3 * (long long)r;
    if (kind == 0) {
        pixel[0] = SHADE_BACKGROUND_R;
        pixel[1] = SHADE_BACKGROUND_G;
        pixel[2] = SHADE_BACKGROUND_B;
        return;
    }
    const long long f = voxel[r] > 0 ? voxel[r] : 0;
    const float light = hit_light(value, solid, kind == 2, f, nx, ny, nz, dirs[3 * r],
                                  dirs[3 * r + 1], dirs[3 * r + 2]);
    float rgb[3];
    if (kind == 2) {
        rgb[0] = rgb[1] = rgb[2] = MUL(SHADE_GREY, light);
    } else {
        const double lo = range[0], hi = range[1];
        double scaled = ((double)colour[f] - lo) * (255.0 / (hi - lo));
        if (!(scaled == scaled && fabs(scaled) <= 1.7976931348623157e308)) scaled = 0.0;
        double row = floor(scaled + 0.5);
        row = row < 0.0 ? 0.0 : (row > 255.0 ? 255.0 : row);
        for (int c = 0; c < 3; ++c)
            rgb[c] = MUL((float)table[3 * (int)row + c], light);
    }
    for (int c = 0; c < 3; ++c) {
        float v = floorf(ADD(rgb[c], 0.5f));
        v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
        pixel[c] = (unsigned char)v;
    }
}
"""
BLOCK = 128
BRICK = 8
"""Nodes per side of the bricks of the empty-space skipping (``#define BRICK`` above)."""
NEGATIVE_INFINITY_KEY = 0x007FFFFF
"""``order_key(-inf)``: where the bricks' atomic maxima start."""
EXTREMA_THREADS = 32768
"""Threads of :func:`volume_extrema` (each reduces every 32768th sample; the partial results
are reduced by CuPy)."""


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
    bricks = cp.full(bx * by * bz, NEGATIVE_INFINITY_KEY, dtype=np.uint32)
    columns = bx * ny * nz
    module.get_function("image_bricks")(
        ((columns + BLOCK - 1) // BLOCK,), (BLOCK,),
        (value, solid, np.int32(nx), np.int32(ny), np.int32(nz), np.int32(bx), np.int32(by),
         np.int32(bz), bricks))
    module.get_function("image_march")(
        ((rays + BLOCK - 1) // BLOCK,), (BLOCK,),
        (value, solid, _iso_array(cp, iso),
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
    shaded by a headlight; background elsewhere. NumPy arrays: :func:`_shade_numpy`; CuPy
    arrays: the kernel ``image_shade`` (one thread per ray, the same arithmetic; ``solid``
    bool there, ``lo`` and ``hi`` floats or 0-d device arrays)."""
    xp = array_module(value)
    if xp is np:
        return _shade_numpy(what, voxel, value, solid, colour, lo, hi, table, directions,
                            width, height)
    return shade_kernel(xp, what, voxel, value, solid, colour, lo, hi, table, directions,
                        width, height)


def shade_kernel(cp, what, voxel, value, solid, colour, lo, hi, table: np.ndarray, directions,
                 width: int, height: int):
    """The CUDA shading (``cp``: cupy, or the host stand-in of the tests)."""
    from thelma_py.codegen.compile import compile_module
    from thelma_py.modules.results.image_render import device_table

    nz, ny, nx = value.shape
    rays = what.shape[0]
    bounds = cp.stack([cp.asarray(v, dtype=np.float64).reshape(()) for v in (lo, hi)])
    out = cp.empty((rays, 3), dtype=np.uint8)
    module = compile_module(MARCH_SOURCE)
    module.get_function("image_shade")(
        ((rays + BLOCK - 1) // BLOCK,), (BLOCK,),
        (what, voxel, cp.ascontiguousarray(value), cp.ascontiguousarray(solid).view(np.uint8),
         cp.ascontiguousarray(colour), bounds, device_table(cp, table),
         cp.asarray(directions, dtype=np.float32), np.int32(nx), np.int32(ny), np.int32(nz),
         np.int32(rays), out))
    return out.reshape(height, width, 3)


def volume_extrema(cp, value, solid, colour=None, iso=None):
    """On the device, without waiting: the largest ``value`` where not ``solid`` (-inf if all
    is solid); with ``colour`` and ``iso``, (smallest, largest) finite ``colour`` where not
    ``solid`` and ``value`` >= ``iso`` (+inf, -inf if none). 0-d float32 arrays, from the
    kernel ``image_extrema`` and a CuPy reduction of its 32768 partial results."""
    from thelma_py.codegen.compile import compile_module

    threads = min(EXTREMA_THREADS, max(BLOCK, value.size))
    threads = -(-threads // BLOCK) * BLOCK
    lo = cp.empty(threads, dtype=np.float32)
    hi = cp.empty(threads, dtype=np.float32)
    mode = 0 if colour is None else 1
    compile_module(MARCH_SOURCE).get_function("image_extrema")(
        (threads // BLOCK,), (BLOCK,),
        (cp.ascontiguousarray(value), cp.ascontiguousarray(solid).view(np.uint8),
         cp.ascontiguousarray(value if colour is None else colour),
         _iso_array(cp, 0.0 if iso is None else iso), np.int32(value.size), np.int32(threads),
         np.int32(mode), lo, hi))
    return hi.max() if mode == 0 else (lo.min(), hi.max())


def _iso_array(cp, iso):
    """The iso level as a float32 device array of one element (a float, or a device array)."""
    return cp.asarray(iso, dtype=np.float32).reshape(1)


def _shade_numpy(what, voxel, value, solid, colour, lo, hi, table: np.ndarray, directions,
                 width: int, height: int):
    """:func:`shade` with array operations (any array module): every ray is shaded and the
    kind of hit picks the colour afterwards. ``solid`` may be float32 (0/1)."""
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

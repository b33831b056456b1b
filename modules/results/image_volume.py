"""The scalar of a 3D view on every ``stride``-th node, in one CUDA kernel.

:func:`.image_fields.volume` computes the same volume with array operations (NumPy, or CuPy
through the fetch of a distributed run); on one GPU those operations make a dozen passes over
full-size temporaries (the gradient alone is nine), which at 256³ cost more than the steps
between two views. This kernel reads ρ and u where the solver keeps them (any element strides:
the single-step LW-ACM's interleaved records as well as the LBM's separate arrays) and writes
one float per sample (two for a 3D view: its iso field and its colour field): one pass, no
temporaries.

Its arithmetic follows :mod:`.image_fields` and :mod:`.derived` (central differences over the
sampled node's neighbours, wrapped when periodic, one-sided at the ends; Q = ½(‖Ω‖² − ‖S‖²)),
in double precision, rounded to float32 at the end; tests/test_image.py compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from thelma_py.modules.results.image_fields import FIELDS

FIELD_CODES = {name: code for code, name in enumerate(FIELDS)}
BLOCK = 256

_SOURCE = r"""
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <math.h>
#endif
typedef REAL real_t;
#define FIELD_SPEED 0
#define FIELD_VORTICITY 4
#define FIELD_Q 5
#define FIELD_P 6
#define FIELD_RHO 7

// u_a at node (x, y, z): strides s = {rho x, y, z; u component, x, y, z} in elements.
__device__ double velocity(const real_t* u, const long long* s, int a, int x, int y, int z)
{
    return (double)u[a * s[3] + x * s[4] + y * s[5] + z * s[6]];
}

// Neighbour indices and spacing of node i on an axis of n nodes (image_fields._neighbours).
__device__ void around(int i, int n, int periodic, int* plus, int* minus, double* span)
{
    if (periodic) {
        *plus = i + 1 == n ? 0 : i + 1;
        *minus = i == 0 ? n - 1 : i - 1;
        *span = 2.0;
    } else {
        *plus = i + 1 < n ? i + 1 : n - 1;
        *minus = i > 0 ? i - 1 : 0;
        *span = *plus - *minus > 1 ? (double)(*plus - *minus) : 1.0;
    }
}

// The field with code `field` at node (x, y, z) (periodic, sizes: p as below).
__device__ double field_value(const real_t* rho, const real_t* u, const long long* s,
                              const int* p, int field, int x, int y, int z)
{
    if (field == FIELD_VORTICITY || field == FIELD_Q) {
        double g[3][3];  // g[a][b] = du_a / dx_b
        const int at[3] = {x, y, z};
        for (int b = 0; b < 3; ++b) {
            int plus, minus;
            double span;
            around(at[b], p[b], p[4 + b], &plus, &minus, &span);
            int hi[3] = {x, y, z}, lo[3] = {x, y, z};
            hi[b] = plus;
            lo[b] = minus;
            for (int a = 0; a < 3; ++a)
                g[a][b] = (velocity(u, s, a, hi[0], hi[1], hi[2])
                           - velocity(u, s, a, lo[0], lo[1], lo[2])) / span;
        }
        if (field == FIELD_Q) {
            double rotation = 0.0, strain = 0.0;
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) {
                    const double w = 0.5 * (g[a][b] - g[b][a]), e = 0.5 * (g[a][b] + g[b][a]);
                    rotation += w * w;
                    strain += e * e;
                }
            return 0.5 * (rotation - strain);
        }
        const double wx = g[2][1] - g[1][2], wy = g[0][2] - g[2][0], wz = g[1][0] - g[0][1];
        return sqrt(wx * wx + wy * wy + wz * wz);
    }
    if (field == FIELD_P || field == FIELD_RHO) {
        const double r = (double)rho[x * s[0] + y * s[1] + z * s[2]];
        return field == FIELD_RHO ? r : (r - 1.0) / 3.0;
    }
    if (field == FIELD_SPEED) {
        const double ux = velocity(u, s, 0, x, y, z), uy = velocity(u, s, 1, x, y, z);
        const double uz = velocity(u, s, 2, x, y, z);
        return sqrt(ux * ux + uy * uy + uz * uz);
    }
    return velocity(u, s, field - 1, x, y, z);  // ux, uy, uz: codes 1, 2, 3
}

// One thread per sample (x fastest): p = {nx, ny, nz, stride, periodic x, y, z, field,
// samples x, y, z, second field or -1}; out (and out2 for the second field) are
// (samples z, y, x) float32: the iso field and the colour field of a view in one pass.
extern "C" __global__ void image_volume(const real_t* rho, const real_t* u,
                                        const long long* s, const int* p, float* out,
                                        float* out2)
{
    const int mx = p[8], my = p[9], mz = p[10];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)mx * my * mz) return;
    const int x = (int)(i % mx) * p[3], y = (int)((i / mx) % my) * p[3];
    const int z = (int)(i / ((long long)mx * my)) * p[3];
    out[i] = (float)field_value(rho, u, s, p, p[7], x, y, z);
    if (p[11] >= 0)
        out2[i] = (float)field_value(rho, u, s, p, p[11], x, y, z);
}
"""


_LAYOUTS: dict = {}
"""Device copies of the kernel's stride and size arrays, by layout."""


def volume_source(real: str) -> str:
    """The kernel's source for ``real`` = "float" or "double" (the solver's precision)."""
    if real not in ("float", "double"):
        raise ValueError(f"real must be 'float' or 'double', got {real!r}")
    return _SOURCE.replace("typedef REAL real_t;", f"typedef {real} real_t;")


def _element_strides(array) -> list[int]:
    return [stride // array.itemsize for stride in array.strides]


def volume_kernel(cp, name: str, rho, u, periodic: Sequence[bool], stride: int,
                  second: str | None = None):
    """The field ``name`` on every ``stride``-th node of a 3D domain whose ρ (z, y, x) and u
    (3, z, y, x) are device arrays of one dtype, any strides: float32 (z, y, x) samples; with
    ``second``, the pair of volumes (``name``, ``second``) from the same pass.
    ``cp`` is cupy (or the host stand-in of the tests)."""
    from thelma_py.codegen.compile import compile_module

    for field in (name, second):
        if field is not None and field not in FIELD_CODES:
            raise ValueError(f"unknown image field {field!r}; known: {', '.join(FIELDS)}")
    if rho.dtype != u.dtype or u.shape[0] != 3 or rho.ndim != 3:
        raise ValueError(f"need rho (z, y, x) and u (3, z, y, x) of one dtype, got {rho.shape} "
                         f"{rho.dtype} and {u.shape} {u.dtype}")
    nz, ny, nx = rho.shape
    counts = [-(-n // stride) for n in (nx, ny, nz)]
    rz, ry, rx = _element_strides(rho)
    uc, uz, uy, ux = _element_strides(u)
    layout = ((rx, ry, rz, uc, ux, uy, uz),
              (nx, ny, nz, stride, *(int(bool(p)) for p in periodic), FIELD_CODES[name],
               *counts, -1 if second is None else FIELD_CODES[second]))
    key = (id(cp), layout)
    if key not in _LAYOUTS:  # copied to the device once, not at every view
        if len(_LAYOUTS) > 16:
            _LAYOUTS.clear()
        _LAYOUTS[key] = (cp.asarray(np.array(layout[0], dtype=np.int64)),
                         cp.asarray(np.array(layout[1], dtype=np.int32)))
    strides, params = _LAYOUTS[key]
    shape = (counts[2], counts[1], counts[0])
    out = cp.empty(shape, dtype=np.float32)
    out2 = out if second is None else cp.empty(shape, dtype=np.float32)
    real = "double" if np.dtype(rho.dtype) == np.float64 else "float"
    kernel = compile_module(volume_source(real)).get_function("image_volume")
    total = counts[0] * counts[1] * counts[2]
    kernel(((total + BLOCK - 1) // BLOCK,), (BLOCK,), (rho, u, strides, params, out, out2))
    return out if second is None else (out, out2)

"""Why 16-bit pull runs at 80 % of copy where a plain kernel reached 91 % (NOTES run 25).

Times, in one process on one GPU, the generated D3Q19 BGK fp16s pull kernel of a periodic box
(launched as the engine launches it) against variants of its text and against a plain probe
kernel written here from the lattice descriptor (one node per thread, IEEE half of f − w,
fp32 arithmetic, nothing else), at several cube sizes; and the copy bandwidth of the same run.

    python benchmarks/half_probe.py --sizes 256,288 --json out.json

Variants of the generated text (``--variants``):
    generated   as emitted
    intrinsics  ``__half2float`` / ``__float2half_rn`` instead of the inline ``cvt`` asm
    notile      no tile-flag load (the periodic box has no flagged tile)
    plain       the probe kernel: 3D grid of 128-thread rows, as the engine launches
    plain1d     the probe kernel over a flat index (256-thread blocks), x, y, z by division
"""

from __future__ import annotations

import argparse
import json
import re
import time

import numpy as np

VARIANTS = ("generated", "intrinsics", "notile", "plain", "plain1d")


def plain_source(lattice, flat: bool) -> str:
    """A BGK pull kernel of ``lattice`` storing IEEE half of f − w, written without the
    framework: the probe of DEVICE-NOTES, regenerated here so that it runs beside ours."""
    c, w = lattice.c, lattice.w
    q = lattice.q
    lines = ["#include <cuda_fp16.h>",
             'extern "C" __global__ void probe(const __half* __restrict__ src, '
             "__half* __restrict__ dst, int nx, int ny, int nz, float omega) {"]
    if flat:
        lines += ["  const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                  "  const long long N = (long long)nx * ny * nz;",
                  "  if (n >= N) return;",
                  "  const int x = n % nx, y = (n / nx) % ny, z = n / ((long long)nx * ny);"]
    else:
        lines += ["  const int x = blockIdx.x * blockDim.x + threadIdx.x;",
                  "  const int y = blockIdx.y, z = blockIdx.z;",
                  "  if (x >= nx) return;",
                  "  const size_t N = (size_t)nx * ny * nz;",
                  "  const size_t n = x + (size_t)nx * (y + (size_t)ny * z);"]
    lines += ["  const int xs[3] = {x == 0 ? nx - 1 : x - 1, x, x == nx - 1 ? 0 : x + 1};",
              "  const int ys[3] = {y == 0 ? ny - 1 : y - 1, y, y == ny - 1 ? 0 : y + 1};",
              "  const int zs[3] = {z == 0 ? nz - 1 : z - 1, z, z == nz - 1 ? 0 : z + 1};"]
    for i in range(q):
        cx, cy, cz = (int(v) for v in c[i])
        src = f"xs[{1 - cx}] + (size_t)nx * (ys[{1 - cy}] + (size_t)ny * zs[{1 - cz}])"
        lines.append(f"  const float f{i} = __half2float(src[{i} * N + {src}]) + {float(w[i])!r}f;")
    lines.append("  const float rho = " + " + ".join(f"f{i}" for i in range(q)) + ";")
    for a, name in enumerate("xyz"):
        terms = [("+" if c[i][a] > 0 else "-") + f"f{i}" for i in range(q) if c[i][a] != 0]
        lines.append(f"  const float u{name} = ({' '.join(terms)}) / rho;")
    lines.append("  const float uu = 1.5f * (ux * ux + uy * uy + uz * uz);")
    for i in range(q):
        cu = " + ".join(f"({int(v)}.0f) * u{n}" for v, n in zip(c[i], "xyz", strict=True))
        lines.append(f"  {{ const float cu = 3.0f * ({cu});")
        lines.append(f"    const float feq = {float(w[i])!r}f * rho"
                     " * (1.0f + cu + 0.5f * cu * cu - uu);")
        lines.append(f"    dst[{i} * N + n] = __float2half_rn(f{i} - omega * (f{i} - feq)"
                     f" - {float(w[i])!r}f); }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def edit(source: str, variant: str) -> str:
    """The generated text changed as ``variant`` says."""
    if variant == "intrinsics":
        source = "#include <cuda_fp16.h>\n" + source
        source = re.sub(r'asm\("cvt\.rn\.f16\.f32 %0, %1;" : "=h"\(h\) : "f"\(x\)\);',
                        "h = __half_as_ushort(__float2half_rn(x));", source)
        source = re.sub(r'asm\("cvt\.f32\.f16 %0, %1;" : "=f"\(v\) : "h"\(h\)\);',
                        "v = __half2float(__ushort_as_half(h));", source)
    elif variant == "notile":
        source, n = re.subn(r"const unsigned char tile = tile_flags\[[^;]*;",
                            "const unsigned char tile = 0;", source)
        assert n >= 1, "tile-flag load not found"
    return source


def copy_bandwidth(cp) -> float:
    """Device-to-device copy of 1 GiB: bytes read + written per second (best of 5)."""
    a = cp.ones(2**28, dtype=np.float32)
    b = cp.empty_like(a)
    best = float("inf")
    for _ in range(6):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        b[...] = a
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return 2 * a.nbytes / best / 1e9


def timed(cp, launch, steps: int = 40, repeats: int = 5) -> float:
    """Best seconds per step of ``launch`` over ``repeats`` runs of ``steps``."""
    for _ in range(5):
        launch()
    best = float("inf")
    for _ in range(repeats):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(steps):
            launch()
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e-3 / steps)
    return best


def run(size: int, variant: str) -> dict:
    import cupy as cp

    import thelma_py as tp
    from thelma_py.codegen.compile import compile_module
    from thelma_py.lattice import D3Q19

    shape = (size, size, size)
    nodes = size**3
    if variant.startswith("plain"):
        flat = variant == "plain1d"
        kernel = cp.RawModule(code=plain_source(D3Q19, flat),
                              options=("--std=c++17",)).get_function("probe")
        src = cp.zeros((D3Q19.q, *shape), dtype=cp.float16)
        dst = cp.zeros_like(src)
        omega = np.float32(1.0 / 0.53)
        dims = np.int32(size)
        if flat:
            grid, block = ((nodes + 255) // 256, 1, 1), (256, 1, 1)
        else:
            grid, block = ((size + 127) // 128, size, size), (128, 1, 1)
        pair = [src, dst]

        def launch():
            kernel(grid, block, (pair[0], pair[1], dims, dims, dims, omega))
            pair.reverse()
    else:
        solver = tp.compose("D3Q19", tp.geometry.periodic_box(shape),
                            tp.plugin("compute", "lbm", nu=0.01, collision="bgk",
                                      store="fp16s"),
                            device="cuda", precision="float32", check_every=0)
        eng = solver.engine
        kernel = compile_module(edit(eng.source, variant)).get_function("lbm_step")
        grid = ((eng.nx + eng.block - 1) // eng.block, eng.ny, eng.nz)
        block = (eng.block, 1, 1)

        def launch():
            args = eng.args.pack(eng, src=eng.buffers[eng.current],
                                 dst=eng.buffers[1 - eng.current], **eng._outputs, y0=0, z0=0)
            kernel(grid, block, args)
            eng.current = 1 - eng.current
    seconds = timed(cp, launch)
    return {"size": size, "variant": variant, "mlups": nodes / seconds / 1e6,
            "gb_per_s": nodes * 76 / seconds / 1e9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="256,288")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json")
    args = parser.parse_args()
    import cupy as cp

    from thelma_py.tools.bench_cases import environment

    copy = copy_bandwidth(cp)
    print(f"copy bandwidth {copy:.0f} GB/s", flush=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        for variant in args.variants.split(","):
            start = time.perf_counter()
            row = run(size, variant)
            row["of_copy"] = row["gb_per_s"] / copy
            rows.append(row)
            print(f"{size:4d}^3 {variant:11s} {row['mlups']:9,.0f} MLUPS "
                  f"{row['gb_per_s']:6.0f} GB/s {100 * row['of_copy']:5.1f} % of copy "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**environment(cp), "copy_gb_per_s": copy, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()

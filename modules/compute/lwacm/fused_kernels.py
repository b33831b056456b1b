"""CUDA source of the single-step LW-ACM kernel: a block marches through the domain plane by
plane, generated from the lattice descriptor, the tag layout and :func:`.rule.single_step`.

Layout: one thread per node of a plane tile, PX x PY threads (32 x 8 in 3D, 128 x 1 in 2D).
The block owns a column of that tile, ``chunk`` planes long along the last axis (z in 3D, y in
2D), and walks it one plane at a time. Shared memory holds a ring of four planes of the tile
plus a one-node halo, (PX + 2) x (PY + 2) records of (ρ, u_x, u_y, u_z) (16-byte loads in fp32):
the planes below, at and above the current one, and the one being filled. Each step of the
march

1. issues the global loads of plane z + 2 into registers (latency hidden by 2.),
2. updates the nodes of plane z from shared memory and stores them,
3. writes the loaded plane into the free slot, then one ``__syncthreads``.

So every record is read from global memory about (PX + 2)(PY + 2)/(PX PY) · (chunk + 2)/chunk
times (≈ 1.41 in 3D at chunk 32) instead of 2.4 times with the cubic tiles this replaces, and the
index arithmetic of staging is done once per block, not once per record.

Each warp is one 32-node tile flag (as for LBM): a clean tile takes the *bulk* path, which reads
the 18 neighbours without looking at tags; a flagged tile reads the tag and the wall links and
takes :func:`.rule.wall_ghost` values where a link crosses a wall. The two paths are the same
traced rule with and without the wall fix-ups.
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.codegen import cuda
from thelma_py.codegen.expr import Emitter, Expr, dot
from thelma_py.codegen.kernel_args import GIVEN, Arg, KernelArgs
from thelma_py.codegen.tag_tables import any_per_tile
from thelma_py.codegen.tag_tables import tile_flags as lbm_tile_flags
from thelma_py.modules.compute.lbm.layouts import WallLinks
from thelma_py.modules.compute.lwacm import curved_kernels, open_kernels, rule
from thelma_py.modules.compute.lwacm.reference import fused_block
from thelma_py.store16 import FORMATS, cuda_dither, cuda_functions, cuda_stochastic, seed_arguments
from thelma_py.tags import LINK_SHIFT, OPEN_KINDS, NodeKind

AXES = "xyz"
RECORD_VALUES = 4
"""Values of a record (ρ, u_x, u_y, u_z; u_z = 0 in 2D): what a node's random bits of
stochastic rounding, and so the launch's seed words, are drawn for."""
ARGS = KernelArgs("lwacm single step", [
    [Arg("src", "const node_t*", GIVEN), Arg("dst", "node_t*", GIVEN)],
    [Arg("tags", "const tag_t*", "tag_words"), Arg("tile_flags", "const unsigned char*")],
    [Arg("bc", "const real_t*"), Arg("edge_bc", "const int*"), Arg("periodic", "int")],
    [Arg("kappa", "real_t"), Arg("nx", "int"), Arg("ny", "int"), Arg("nz", "int"),
     Arg("chunk", "int")],
    [Arg("row_first", "int", GIVEN), Arg("row_last", "int", GIVEN),
     Arg("march_first", "int", GIVEN), Arg("march_last", "int", GIVEN)],
])
"""Arguments of ``lwacm_fused_step`` (``node_t``: records of four reals): the record buffers
and the row and plane ranges are given at each launch, the rest is held by the engine
(:class:`.cuda.CudaLwacmFused`)."""
OPEN_ARGS = KernelArgs("lwacm single step with open boundaries", [
    *ARGS.lines, [Arg("open_table", "const int*"), Arg("open_values", "const real_t*")]])
"""The same with the open-boundary tables (:mod:`.open_kernels`)."""

ARGS16 = KernelArgs("lwacm single step, 16-bit records", [
    [Arg("src", "const rec_t*", GIVEN), Arg("dst", "rec_t*", GIVEN)], *ARGS.lines[1:]])
"""Arguments of ``lwacm_fused_step`` with 16-bit records (``rec_t``: four uint16 codes)."""

ARGS16_SR = KernelArgs("lwacm single step, 16-bit records rounded stochastically", [
    *ARGS16.lines, [Arg(name, "unsigned", GIVEN) for name in seed_arguments(RECORD_VALUES)],
    [Arg("ox", "int"), Arg("oy", "int"), Arg("oz", "int")]])
"""With stochastic rounding: the launch's seed words (:func:`thelma_py.store16.seed_words` of
the four values a record) and the global coordinates of local node 0 (a rank's offset), from
which each node's random bits are hashed."""


SIDE_ARGS = [Arg("side_columns", "const int*")]
"""The free-slip side ghosts staged as flipped copies (:mod:`.side_ghosts`)."""


def args(store: str, rounding: str = "nearest", open_boundaries: bool = False,
         curved: bool = False, sides: bool = False) -> KernelArgs:
    """The kernel arguments for the record storage ``store`` and its rounding, with the
    open-boundary tables (per link, or the ``sides`` staged as copies) and the curved-wall
    tables (fp32 records) if asked."""
    if store == "fp32":
        chosen = OPEN_ARGS if open_boundaries else ARGS
        if sides:
            chosen = KernelArgs(ARGS.label + " and side ghosts", [*ARGS.lines, SIDE_ARGS])
        if not curved:
            return chosen
        return KernelArgs(chosen.label + " and curved walls",
                          [*chosen.lines, curved_kernels.ARGS])
    chosen = ARGS16 if rounding == "nearest" else ARGS16_SR
    if not open_boundaries:
        return chosen
    return KernelArgs(chosen.label + " and open boundaries", [*chosen.lines, OPEN_ARGS.lines[-1]])


def end_args(curved: bool = False) -> KernelArgs:
    """The arguments of the per-link kernel that updates the end planes beside side ghosts:
    :func:`args` with open boundaries, its tags and tile flags those with the open links'
    bits (engine attributes ``link_tag_words``, ``link_tile_flags``)."""
    sources = {"tags": "link_tag_words", "tile_flags": "link_tile_flags"}
    chosen = args("fp32", open_boundaries=True, curved=curved)
    return KernelArgs(chosen.label + " (end planes)", [
        [attrs.evolve(a, source=sources[a.name]) if a.name in sources else a for a in line]
        for line in chosen.lines])


def helpers16(store: str, rounding: str = "nearest") -> str:
    """16-bit records (``store`` fp16s | fp16c, :mod:`thelma_py.store16`): 8 bytes of codes of
    (ρ − 1, u_x, u_y, u_z), decoded into the fp32 ``node_t`` of the shared ring when a plane is
    staged (once per staged record, not once per read) and encoded when a node is stored."""
    return cuda_functions(FORMATS[store]) + """
struct __align__(8) rec_t { unsigned short rho, ux, uy, uz; };
// 1/x of the update (ρ' to u'): MUFU.RCP and a multiply (__fdividef: 2 ulp) in place of the
// correctly rounded division and its slow path; the codes keep 11 bits. Exact on the host.
__device__ __forceinline__ real_t reciprocal16(real_t x)
{
#if defined(__CUDA_ARCH__)
    return __fdividef((real_t)1, x);
#else
    return (real_t)1 / x;
#endif
}
__device__ __forceinline__ node_t record_decode(rec_t r)
{
    node_t v;
    v.rho = (real_t)1 + pop_decode(r.rho);
    v.ux = pop_decode(r.ux); v.uy = pop_decode(r.uy); v.uz = pop_decode(r.uz);
    return v;
}
__device__ __forceinline__ rec_t record_encode(node_t v)
{
    rec_t r;
    r.rho = pop_encode(v.rho - (real_t)1);
    r.ux = pop_encode(v.ux); r.uy = pop_encode(v.uy); r.uz = pop_encode(v.uz);
    return r;
}
""" + ("" if rounding == "nearest" else cuda_stochastic(FORMATS[store])
                  + _record_encode_sr())


def _record_encode_sr() -> str:
    """C of ``record_encode_sr(v, x, y, z, sr_seed0, sr_seed1)``: ``record_encode`` rounded
    stochastically with the random bits of :func:`thelma_py.store16.dither_bits` for the node at
    global (x, y, z) and the launch's seed words (:func:`thelma_py.store16.cuda_dither`)."""
    lines, bits = cuda_dither(RECORD_VALUES, "x", "y", "z")
    words = ", ".join(f"unsigned {name}" for name in seed_arguments(RECORD_VALUES))
    values = {"rho": "v.rho - (real_t)1", "ux": "v.ux", "uy": "v.uy", "uz": "v.uz"}
    stores = [f"    r.{field} = pop_encode_sr({value}, {bit});"
              for (field, value), bit in zip(values.items(), bits, strict=True)]
    return "\n".join([
        "__device__ __forceinline__ rec_t record_encode_sr(node_t v, int x, int y, int z, "
        f"{words})", "{", *(f"    {line}" for line in lines), "    rec_t r;", *stores,
        "    return r;", "}", ""])


def reciprocal(store: str):
    """How the update takes 1/ρ' (:func:`.rule.single_step`): correctly rounded for fp32
    records, :func:`helpers16`'s ``reciprocal16`` for 16-bit ones."""
    if store == "fp32":
        return None
    return lambda value: Expr(f"reciprocal16({value})", atom=True)


HELPERS = """
// A halo coordinate wrapped into [0, n): true when that node is stored (across a periodic face
// too); false beyond a non-periodic face (a wall: never read) or beyond the halo of a ragged tile.
__device__ __forceinline__ bool halo_index(int& g, int n, int periodic)
{
    if (g >= 0 && g < n) return true;
    if (!periodic || g < -1 || g > n) return false;
    g = g < 0 ? n - 1 : 0;
    return true;
}

// Global to shared memory without registers (cp.async, sm_80+): 16 bytes, or zeros where
// size is 0 (from is then still a valid address). Older GPUs and the host stand-in of the
// tests copy through registers (the ring then fills synchronously, still correct: the
// barrier after each plane orders it).
#if !defined(THELMA_HOST_THREADS) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define THELMA_CP_ASYNC 1
#endif
__device__ __forceinline__ void copy16(void* to, const void* from, unsigned size)
{
#if defined(THELMA_CP_ASYNC)
    const unsigned shared = (unsigned)__cvta_generic_to_shared(to);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n"
                 :: "r"(shared), "l"(from), "r"(size));
#else
    for (int w = 0; w < 4; ++w)
        ((unsigned*)to)[w] = size ? ((const unsigned*)from)[w] : 0u;
#endif
}

__device__ __forceinline__ void copies_issued()
{
#if defined(THELMA_CP_ASYNC)
    asm volatile("cp.async.commit_group;\\n" ::);
#endif
}

// wait until all but the newest group of copies have landed
__device__ __forceinline__ void copies_landed_but_newest()
{
#if defined(THELMA_CP_ASYNC)
    asm volatile("cp.async.wait_group 1;\\n" ::);
#endif
}
"""

LES_HELPERS = """
// LES kernels keep the plain kernel's occupancy (4 blocks of 32 x 8 per SM in fp32, 6 of
// 32 x 4 in fp64): register caps that ptxas meets with a few spills outside the node update.
// Several nodes a thread (TR) take 96 registers (5 blocks of 32 x 4 per SM: 2.6 % faster
// than 6 at 80 on D3Q19, 1.0 % on D3Q27; 4 at 128 are slower, NOTES run 57).
#if defined(TR)
#define LES_REGISTERS 96
#elif RECORD_PARTS == 1
#define LES_REGISTERS 64
#else
#define LES_REGISTERS 80
#endif
#define LES_MIN_BLOCKS (65536 / (LES_REGISTERS * NT))

// A shared record read again (the LES kernel's second pass): a volatile load, so neither the
// compiler nor ptxas merges it with the first read and keeps that record in registers between.
__device__ __forceinline__ node_t reload(const node_t* p)
{
#if defined(THELMA_HOST_THREADS) || !defined(__CUDA_ARCH__)
    return *p;
#else
    node_t v;
    const unsigned at = (unsigned)__cvta_generic_to_shared(p);
#if RECORD_PARTS == 1
    asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.rho), "=f"(v.ux), "=f"(v.uy), "=f"(v.uz) : "r"(at));
#else
    asm volatile("ld.volatile.shared.v2.f64 {%0, %1}, [%2];"
                 : "=d"(v.rho), "=d"(v.ux) : "r"(at));
    asm volatile("ld.volatile.shared.v2.f64 {%0, %1}, [%2];"
                 : "=d"(v.uy), "=d"(v.uz) : "r"(at + 16));
#endif
    return v;
#endif
}
"""
"""Only in LES kernels (:func:`kernel` with ``les``): the plain kernel reads each record once
and leaves its registers to nvcc."""

RING = 5
"""Planes of the shared ring: below, at and above the current plane, and two being loaded."""

WALL_TILE = 1
"""Tile flag bit: a node of the tile is solid or has a wall link."""
MOVING_TILE = 2
"""Tile flag bit: a wall link of the tile ends on a moving wall (the wall-velocity lookups)."""


def tile_flags(lattice, tags, open_plain: bool = False) -> np.ndarray:
    """The LBM tile flags (:data:`WALL_TILE`) with :data:`MOVING_TILE` added where a link
    of the tile crosses into a moving wall: the other flagged tiles take the ghost of a wall at
    rest (u_g = −u) by selects alone. ``open_plain``: open nodes without wall links count as
    fluid (their ghosts are staged into the ring, :mod:`.side_ghosts`)."""
    if open_plain:
        layout = tags.layout
        plain = np.isin(layout.kind(tags.tags), [NodeKind.FLUID, *OPEN_KINDS]) & (
            layout.links(tags.tags) == 0)
        flags = any_per_tile(~plain).astype(np.uint8) * WALL_TILE
    else:
        flags = lbm_tile_flags(tags)
    walls = WallLinks(lattice, tags, np.dtype(np.float64))
    if all(velocity is None for velocity in walls.velocity.values()):
        return flags
    moving = np.zeros(tags.tags.size, dtype=bool)
    for i, velocity in walls.velocity.items():
        if velocity is not None:
            moving[np.asarray(walls.index[i])[np.any(np.asarray(velocity) != 0, axis=0)]] = True
    return flags | any_per_tile(moving.reshape(tags.tags.shape)).astype(np.uint8) * MOVING_TILE


def defines(lattice, real: str, rows: int, thread_rows: int = 1) -> str:
    """Block shape, ring geometry and the record type (``thread_rows`` > 1: each thread
    updates that many nodes along y, so the tile has PY = rows · TR rows of nodes)."""
    px, py = fused_block(lattice, rows)
    hy = 1 if lattice.d == 3 else 0
    align = 16 if real == "float" else 32
    shape = [f"#define PX {px}", f"#define PY {py}"]
    if thread_rows > 1:
        shape = [f"#define PX {px}", f"#define TY {py}  // threads along y",
                 f"#define TR {thread_rows}  // nodes a thread updates, along y",
                 "#define PY (TY * TR)"]
    return "\n".join([
        *shape, f"#define HY {hy}",
        "#define SX (PX + 2)", "#define SY (PY + 2 * HY)", "#define PLANE (SX * SY)",
        f"#define RING {RING}", f"#define NT (PX * {'TY' if thread_rows > 1 else 'PY'})",
        "// The host stand-in of the tests runs threads one after another: there a thread stages",
        "// whole planes itself (THELMA_HOST_THREADS), on the GPU the block shares the work.",
        "#ifdef THELMA_HOST_THREADS",
        "#define STAGE_THREADS 1",
        "#define STAGE_TID 0",
        "#else",
        "#define STAGE_THREADS NT",
        "#define STAGE_TID tid",
        "#endif",
        "#define STAGE_ROUNDS ((PLANE + STAGE_THREADS - 1) / STAGE_THREADS)",
        "// one node's fields: a float4-like record (16-byte loads in fp32)",
        f"struct __align__({align}) node_t {{ real_t rho, ux, uy, uz; }};",
        f"#define RECORD_PARTS {1 if real == 'float' else 2}  // 16-byte copies per record",
    ])


PATHS = ("bulk", "rest", "moving")
"""The three instantiations of the update: no tag read, walls at rest, moving walls."""


def _update(lattice, force, path: str, les=None, arms=(), store: str = "fp32",
            rounding: str = "nearest", shifted: bool = False, cubic: bool = False) -> str:
    """One node's update from the ring (``lo``, ``mid``, ``hi`` planes, thread offset ``c``),
    ending with the store of its record. ``path``: "bulk" (no wall links in the tile), "rest"
    (ghosts of walls at rest, u_g = −u: selects), "moving" (each wall link looks up its
    wall's velocity; :func:`.rule.moving_wall_ghost`) or "curved" (an INTERPOLATED node, whose
    wall links take the ghosts of :mod:`.curved_kernels` from the weight row ``cw`` found
    before); with ``arms`` (an open node) the links crossing its open face take the
    ghosts of :mod:`.open_kernels`. ``shifted``: records hold ρ − 1; ``cubic``: the third-order
    equilibrium (:func:`.rule.single_step`)."""
    axes = AXES[: lattice.d]
    march = lattice.d - 1
    em = Emitter()
    em.raw("const node_t a0 = mid[c];")
    em.raw("const real_t r0 = a0.rho, " + ", ".join(f"v{ax}0 = a0.u{ax}" for ax in axes) + ";")
    rho0 = Expr("r0", atom=True)
    u0 = [Expr(f"v{ax}0", atom=True) for ax in axes]
    slots = {1: "lo", 0: "mid", -1: "hi"}  # upstream x − c_i lies one plane below when c_m = 1
    reads = dict.fromkeys(range(lattice.q), 0)  # an LES pass reads a record again: new names

    def upstream(i: int):
        if i == 0:
            return rho0, u0
        c = cuda.c3(lattice, i)
        plane = slots[c[march]]
        offset = f"{c[0]} + SX * ({c[1]})" if lattice.d == 3 else f"{c[0]}"
        k = f"{i}_{reads[i]}" if reads[i] else f"{i}"
        record = f"{plane}[c - ({offset})]"
        em.raw(f"const node_t a{k} = " + (f"reload(&{record});" if reads[i] else f"{record};"))
        reads[i] += 1
        em.raw(("[[maybe_unused]] " if les is not None else "") + f"real_t r{k} = a{k}.rho, "
               + ", ".join(f"v{ax}{k} = a{k}.u{ax}" for ax in axes) + ";")
        if path == "curved":
            em.raw(curved_kernels.fused_link(lattice, i, k, rho0, u0))
            return (Expr(f"r{k}", atom=True), [Expr(f"v{ax}{k}", atom=True) for ax in axes],
                    Expr(f"o{k}", atom=True))
        quad = []  # moving walls: the velocity of the link's quadratic terms (q*)
        if path != "bulk":
            velocity, setup = None, ""
            if path == "moving":
                setup = cuda.wall_id_call(lattice, i) + " "
                velocity = [Expr(f"bc[4 * id{i} + {a}]", atom=True) for a in range(lattice.d)]
                rho_g, u_g, u_q = rule.moving_wall_ghost(rho0, u0, velocity)
                quad = [f"q{ax}{k}" for ax in axes]
                em.raw("real_t " + ", ".join(f"{q} = v{ax}{k}" for q, ax in zip(quad, axes,
                                                                                 strict=True))
                       + ";")
            else:
                rho_g, u_g = rule.wall_ghost(rho0, u0, velocity)
                u_q = []
            # the quadratic terms: the node's u where the wall moves, else the ghost's (−u)
            moving = " || ".join(f"{v} != (real_t)0" for v in velocity or ())
            assign = " ".join([f"r{k} = {rho_g};"]
                              + [f"v{ax}{k} = {ug};" for ax, ug in zip(axes, u_g, strict=True)]
                              + [f"{q} = ({moving}) ? {uq} : v{ax}{k};"
                                 for q, uq, ax in (zip(quad, u_q, axes, strict=True) if quad
                                                   else ())])
            code = open_kernels.link_code(
                lattice, arms, i, open_kernels.ring_reader(lattice),
                lambda r, v: " ".join([f"r{k} = {r};"] + [
                    f"v{ax}{k} = {ug};" for ax, ug in zip(axes, v, strict=True)] + [
                    f"{q} = {ug};" for q, ug in (zip(quad, v, strict=True) if quad else ())]),
                f"{setup}{assign}") if arms else None
            em.raw(code or f"if ((tag >> {LINK_SHIFT + i - 1}) & 1) {{ {setup}{assign} }}")
        rho_k, u_k = Expr(f"r{k}", atom=True), [Expr(f"v{ax}{k}", atom=True) for ax in axes]
        if not quad:
            return rho_k, u_k
        return rho_k, [Expr(q, atom=True) for q in quad], dot(lattice.c[i], u_k)

    rho, u = rule.single_step(lattice, upstream, Expr("kappa", atom=True), em.let, force, les,
                              shifted, cubic, reciprocal(store))
    em.raw("node_t out;")
    em.raw(f"out.rho = {rho};")
    for a, ax in enumerate(AXES):
        em.raw(f"out.u{ax} = {u[a] if a < lattice.d else '(real_t)0'};")
    em.raw("dst[n] = out;" if store == "fp32" else "dst[n] = record_encode(out);"
           if rounding == "nearest" else
           "dst[n] = record_encode_sr(out, x + ox, y + oy, z + oz, "
           f"{', '.join(seed_arguments(RECORD_VALUES))});")
    return em.code(16)


def _flagged(lattice, force, les, arms, path: str, store: str = "fp32",
             rounding: str = "nearest", curved: bool = False, sides: bool = False,
             shifted: bool = False, cubic: bool = False) -> str:
    """The update of a node in a flagged tile: fluid nodes only, or, with ``arms``, fluid and
    open nodes through one instantiation (the open links are branches inside it, so a warp
    holding a face's boundary nodes does not run two updates); with ``curved``, INTERPOLATED
    nodes first, through their own instantiation; with ``sides``, open nodes as fluid ones
    (their ghosts are in the ring, :mod:`.side_ghosts`)."""
    if curved:
        pad = " " * 20
        search = "\n".join(pad + line for line in curved_kernels.search(lattice, "n"))
        rest = _flagged(lattice, force, les, arms, path, store, rounding,
                        sides=sides).lstrip()
        return ("                if ((tag & TAG_KIND_MASK) == KIND_INTERPOLATED) {\n" + search
                + "\n" + _update(lattice, force, "curved", les, (), store, rounding)
                + "\n                } else " + rest)
    if not arms:
        kinds = "!= KIND_WALL" if sides else "== KIND_FLUID"
        return (f"                if ((tag & TAG_KIND_MASK) {kinds}) {{\n"
                + _update(lattice, force, path, les, (), store, rounding, shifted, cubic)
                + "\n                }")
    head = "\n".join(" " * 20 + line for line in open_kernels.HEADER)
    return ("                if ((tag & TAG_KIND_MASK) != KIND_WALL) {\n" + head + "\n"
            + _update(lattice, force, path, les, arms, store, rounding) + "\n                }")


def kernel(lattice, moving_walls: bool, force, rows: int, min_blocks: int = 0,
           les=None, arms=(), store: str = "fp32", rounding: str = "nearest",
           staging: str = "registers", curved: bool = False, sides: bool = False,
           shifted: bool = False, cubic: bool = False, thread_rows: int = 1) -> str:
    """The ``lwacm_fused_step`` entry point (``min_blocks``: the second argument of
    ``__launch_bounds__``, 0 for none, or with ``les`` for ``LES_MIN_BLOCKS``; ``arms``: the
    (kind, face) open boundaries present; ``store``: the record storage; ``staging`` of
    16-bit records (:data:`STAGINGS`): through registers, see :func:`_staging16`, or copied
    raw by ``cp.async`` and decoded at read, see :func:`_staging16_async`; ``sides``: free-slip
    ghosts beyond the side faces staged as copies of their mirror records, negated where they
    land, :func:`_side_ghosts`; ``shifted``: records of ρ − 1, fp32 only, no open or curved
    links; ``cubic``: the third-order equilibrium, no open or curved links; ``thread_rows``:
    nodes per thread along y, 3D, :func:`_thread_rows`)."""
    three = lattice.d == 3
    # plane coordinates and the march coordinate, named as in the LBM kernels (x, y, z)
    march, plane_stride = ("z", "(size_t)nx * ny") if three else ("y", "(size_t)nx")
    plane_y = "y0 + (k / SX) - HY" if three else "0"
    fixed = "const int y = y0 + (int)threadIdx.y;" if three else "[[maybe_unused]] const int z = 0;"
    y_ok = "halo_index(gy, ny, periodic & 2)" if three else "true"
    m_periodic = "periodic & 4" if three else "periodic & 2"
    m_extent = "nz" if three else "ny"
    px, py = fused_block(lattice, rows)
    moving = (f"""            }} else if (flag & {MOVING_TILE}) {{
                const tag_t tag = tags[n];
{_flagged(lattice, force, les, arms, "moving", store, rounding, curved, sides, shifted,
          cubic)}
""" if moving_walls else "")
    bounds = cuda.launch_bounds(px * py, min_blocks)
    if les is not None and not min_blocks:
        bounds = f"__launch_bounds__({px * py}, LES_MIN_BLOCKS)"
    text = ("" if les is None else LES_HELPERS) + f"""
{args(store, rounding, bool(arms), curved, sides).signature("lwacm_fused_step", bounds)}
{{
    __shared__ node_t ring[RING * PLANE];
    const int tid = threadIdx.x + PX * threadIdx.y;
    const int x0 = blockIdx.x * PX;
    {"const int y0 = row_first + blockIdx.y * PY;" if three else "(void)row_first;"}
    const int march_begin = march_first + blockIdx.{"z" if three else "y"} * chunk;
    const int march_end = min(march_begin + chunk, march_last);
    // where this thread stages from: in-plane offsets of its halo-tile cells, once per block
    // (32 bits: the engine refuses planes of 2^32 nodes or more)
    unsigned from[STAGE_ROUNDS];
    bool stored[STAGE_ROUNDS];
    for (int r = 0; r < STAGE_ROUNDS; ++r) {{
        const int k = STAGE_TID + r * STAGE_THREADS;
        int gx = x0 + (k % SX) - 1, gy = {plane_y};
        stored[r] = k < PLANE && halo_index(gx, nx, periodic & 1) && {y_ok};
        from[r] = stored[r] ? (unsigned)gx + (unsigned)nx * (unsigned)gy : 0u;
    }}
    const size_t plane_stride = {plane_stride};
    // copies of plane gm (wrapped across a periodic face) into the ring slot at slot_, zeros
    // where no node is stored (copies of size 0, from node 0 of a plane of the domain), then
    // one commit (also when there is nothing to copy: the groups count planes). Only the last
    // round can fall beyond the plane (k < PLANE holds for the others).
    unsigned copy_size[STAGE_ROUNDS];  // bytes of a copy (of each 16-byte part) or 0
    for (int r = 0; r < STAGE_ROUNDS; ++r) copy_size[r] = stored[r] ? 16u : 0u;
    #define STAGE_PLANE(gm_, slot_) {{ \\
        int gm = (gm_); \\
        const bool plane_ok = halo_index(gm, {m_extent}, {m_periodic}); \\
        const node_t* plane_src = src + plane_stride * (plane_ok ? gm : 0); \\
        const unsigned keep = plane_ok ? ~0u : 0u; \\
        for (int r = 0; r < STAGE_ROUNDS; ++r) {{ \\
            const int k = STAGE_TID + r * STAGE_THREADS; \\
            if (r < STAGE_ROUNDS - 1 || k < PLANE) {{ \\
                const node_t* at = plane_src + from[r]; \\
                for (int part = 0; part < RECORD_PARTS; ++part) \\
                    copy16((char*)&(slot_)[k] + 16 * part, (const char*)at + 16 * part, \\
                           copy_size[r] & keep); \\
            }} }} \\
        copies_issued(); }}
    for (int p = 0; p < 4; ++p) {{
        if (march_begin - 1 + p <= march_end) STAGE_PLANE(march_begin - 1 + p, ring + p * PLANE)
        else copies_issued();
    }}
    copies_landed_but_newest();
    __syncthreads();
    const int x = x0 + (int)threadIdx.x;
    const int c = (threadIdx.x + 1) + SX * ({"threadIdx.y + HY" if three else "0"});
    const int tiles_x = (nx + TILE - 1) / TILE;
    {fixed}
    const bool active = x < nx{" && y < row_last" if three else ""};  // (2D: y < ny in the march)
    // the node, its tile flag and the ring slots advance by one plane per step (no index
    // arithmetic in the march): planes {march} - 1, {march}, {march} + 1 are read, {march} + 2
    // has landed, {march} + 3 is being staged
    size_t n = x + (size_t)nx * ({"y + (size_t)ny * march_begin" if three else "march_begin"});
    const unsigned char* flag_at = tile_flags + (x / TILE)
        + (size_t)tiles_x * ({"y + (size_t)ny * march_begin" if three else "march_begin"});
    const size_t flag_stride = (size_t)tiles_x{" * ny" if three else ""};
    int slot_lo = 0, slot_mid = PLANE, slot_hi = 2 * PLANE;  // ring offsets of the slots
    int slot_landed = 3 * PLANE, slot_ahead = 4 * PLANE;
    int left = march_end - march_begin;  // planes left (a count: march_end is not kept)
    for (int {march} = march_begin; left > 0;
         ++{march}, --left, n += plane_stride, flag_at += flag_stride) {{
        if (left >= 3) STAGE_PLANE({march} + 3, ring + slot_ahead)
        else copies_issued();
        const node_t* __restrict__ lo = ring + slot_lo;
        const node_t* __restrict__ mid = ring + slot_mid;
        const node_t* __restrict__ hi = ring + slot_hi;
        if (active) {{
            const unsigned char flag = *flag_at;
            if (!flag) {{
{_update(lattice, force, "bulk", les, (), store, rounding, shifted, cubic)}
{moving}            }} else {{
                const tag_t tag = tags[n];
{_flagged(lattice, force, les, arms, "rest", store, rounding, curved, sides, shifted,
          cubic)}
            }}
        }}
        copies_landed_but_newest();  // plane {march} + 2, read by the next step
        __syncthreads();
        const int freed = slot_lo;  // plane {march} - 1: the next step stages into it
        slot_lo = slot_mid;
        slot_mid = slot_hi;
        slot_hi = slot_landed;
        slot_landed = slot_ahead;
        slot_ahead = freed;
    }}
    #undef STAGE_PLANE
}}
"""
    if sides:
        text = _side_ghosts(text, three, march)
    if thread_rows > 1:
        text = _thread_rows(text, lattice, force, store, shifted, cubic, thread_rows, les)
    if store == "fp32":
        return text
    if staging == "async":
        text = _staging16_async(text)
    else:
        text = _staging16(text, plane_stride, m_extent, m_periodic, march)
    return text


def _thread_rows(text: str, lattice, force, store: str, shifted: bool, cubic: bool,
                 rows: int, les=None) -> str:
    """The kernel text with ``rows`` nodes per thread along y (3D; no open, curved or
    side-ghost links, nearest rounding): where all of a thread's rows are in clean
    tiles (warp-uniform: a warp is one row of tiles) they are updated together by
    :func:`.rule.single_step_rows`, which reads each record of the ring once for all of them
    (28 records for 2 nodes, 46 for 4, against 19 a node); otherwise each row in turn takes
    the one-node paths. Fewer ring reads and 16-bit decodes per node, and staging and march
    arithmetic shared by more nodes: the single step is issue-bound (NOTES run 43). With
    ``les`` the records of the first pass are read again in the sums (``reload``), as in the
    one-node kernel."""
    em = Emitter()
    planes = {-1: "lo", 0: "mid", 1: "hi"}
    count = [0]
    seen = set()

    def load(offset):
        k = count[0]
        count[0] += 1
        record = f"{planes[offset[2]]}[c_col + ({offset[0]} + SX * ({offset[1]}))]"
        em.raw(f"const node_t b{k} = " + (f"reload(&{record});" if offset in seen else
                                          f"{record};"))
        seen.add(offset)
        return Expr(f"b{k}.rho", atom=True), [Expr(f"b{k}.u{ax}", atom=True) for ax in AXES]

    nodes = rule.single_step_rows(lattice, rows, load, Expr("kappa", atom=True), em.let,
                                  force, shifted, cubic, reciprocal(store), les)
    for k, (rho, u) in enumerate(nodes):
        em.raw(f"const node_t out{k} = {{{rho}, {', '.join(str(v) for v in u)}}};")
        em.raw(f"dst[n_col + {k} * (size_t)nx] = "
               + (f"out{k};" if store == "fp32" else f"record_encode(out{k});"))
    clean = " | ".join(f"flag_at[{k} * (size_t)tiles_x]" for k in range(rows))
    for old, new in (
            ("const int c = (threadIdx.x + 1) + SX * (threadIdx.y + HY);",
             "const int c_col = (threadIdx.x + 1) + SX * (TR * threadIdx.y + HY);"),
            ("const int y = y0 + (int)threadIdx.y;",
             "const int y_col = y0 + TR * (int)threadIdx.y;"),
            ("const bool active = x < nx && y < row_last;  // (2D: y < ny in the march)",
             "const bool active = x < nx;  // and, row by row, y_col + k < row_last"),
            ("size_t n = x + (size_t)nx * (y + (size_t)ny * march_begin);",
             "size_t n_col = x + (size_t)nx * (y_col + (size_t)ny * march_begin);"),
            ("+ (size_t)tiles_x * (y + (size_t)ny * march_begin);",
             "+ (size_t)tiles_x * (y_col + (size_t)ny * march_begin);"),
            ("++z, --left, n += plane_stride, flag_at += flag_stride) {",
             "++z, --left, n_col += plane_stride, flag_at += flag_stride) {"),
            ("        if (active) {\n            const unsigned char flag = *flag_at;\n",
             f"""        if (active && y_col + TR <= row_last && !({clean})) {{
{em.code(12)}
        }} else if (active) {{
          #pragma unroll 1
          for (int k = 0; k < TR && y_col + k < row_last; ++k) {{
            const int c = c_col + k * SX;
            const size_t n = n_col + (size_t)k * nx;
            [[maybe_unused]] const int y = y_col + k;
            const unsigned char flag = flag_at[(size_t)k * tiles_x];
""")):
        text = _swap(text, old, new)
    end = "        copies_landed_but_newest();  // plane z + 2, read by the next step\n"
    return _swap(text, "        }\n" + end, "          }\n        }\n" + end)


def _side_ghosts(text: str, three: bool, march: str) -> str:
    """The kernel text with free-slip side ghosts (:mod:`.side_ghosts`): a halo cell beyond a
    side face (x, or y in 3D) of a column with a ghost is staged from its mirror record m
    (``side_columns``: the axes to negate, m − g), and the thread that copies it negates those
    components of the record once its copies of that plane have landed (before the barrier
    that publishes the plane): after the prologue's three planes and at the end of each step
    (plane ``march`` + 2)."""
    column = ("gx < 0 || gx >= nx ? (gx >= nx) * (ny + 2) + gy + 1 : "
              "2 * (ny + 2) + (gy >= ny) * nx + gx" if three else "gx >= nx")
    setup = f"""        from[r] = stored[r] ? (unsigned)gx + (unsigned)nx * (unsigned)gy : 0u;
        flips[r] = 0;
        if (k < PLANE && !stored[r]) {{  // beyond a side face: a ghost column, or zeros
            gx = x0 + (k % SX) - 1;
            {"gy = y0 + (k / SX) - HY;" if three else ""}
            halo_index(gx, nx, periodic & 1);
            {"halo_index(gy, ny, periodic & 2);" if three else ""}
            if (gx >= -1 && gx <= nx{" && gy >= -1 && gy <= ny" if three else ""}) {{
                const int* side = side_columns + 3 * ({column});
                if (side[0]) {{
                    stored[r] = true;
                    from[r] = (unsigned)(gx + side[1]) + (unsigned)nx * (unsigned)(gy + side[2]);
                    flips[r] = (unsigned char)side[0];
                }}
            }}
        }}"""
    text = _swap(text, setup.split("\n", 1)[0], setup)
    text = _swap(text, "    bool stored[STAGE_ROUNDS];\n",
                 "    bool stored[STAGE_ROUNDS];\n    unsigned char flips[STAGE_ROUNDS];"
                 "  // side ghosts: axes to negate\n")
    flip = ("for (int r = 0; r < STAGE_ROUNDS; ++r) if (flips[r]) {{ "
            "node_t* g = &({slot})[STAGE_TID + r * STAGE_THREADS]; "
            "if (flips[r] & 1) g->ux = -g->ux; if (flips[r] & 2) g->uy = -g->uy; }}")
    text = _swap(text, "    copies_landed_but_newest();\n    __syncthreads();\n",
                 "    copies_landed_but_newest();\n"
                 "    for (int p = 0; p < 3; ++p) " + flip.format(slot="ring + p * PLANE") + "\n"
                 "    __syncthreads();\n")
    landed = f"        copies_landed_but_newest();  // plane {march} + 2, read by the next step\n"
    return _swap(text, landed,
                 landed + "        " + flip.format(slot="ring + slot_landed") + "\n")


def _staging16(text: str, plane_stride: str, m_extent: str, m_periodic: str, march: str) -> str:
    """The kernel text with 16-bit staging: the 8-byte records of plane ``march`` + 3 are
    loaded into registers before the update of plane ``march`` (their latency hidden by it),
    decoded and written into the ring slot after it, then the one barrier. The prologue
    stages its four planes the same way, at once. (cp.async would land raw codes in shared
    memory, to be decoded at each of the 19 reads of a record instead of once.)"""
    load = f"""    // plane gm_ (wrapped across a periodic face) into registers: raw codes, decoded
    // into a ring slot by STORE_PLANE (zeros where no node is stored)
    #define LOAD_PLANE(gm_) {{ \\
        int gm = (gm_); \\
        const bool plane_ok = halo_index(gm, {m_extent}, {m_periodic}); \\
        for (int r = 0; r < STAGE_ROUNDS; ++r) {{ \\
            const int k = STAGE_TID + r * STAGE_THREADS; \\
            staged_ok[r] = k < PLANE && plane_ok && stored[r]; \\
            if (staged_ok[r]) staged[r] = src[from[r] + plane_stride * gm]; }} }}
    #define STORE_PLANE(slot_) {{ \\
        for (int r = 0; r < STAGE_ROUNDS; ++r) {{ \\
            const int k = STAGE_TID + r * STAGE_THREADS; \\
            if (k < PLANE) {{ \\
                node_t v = {{0, 0, 0, 0}}; \\
                if (staged_ok[r]) v = record_decode(staged[r]); \\
                (slot_)[k] = v; }} }} }}
    rec_t staged[STAGE_ROUNDS];
    bool staged_ok[STAGE_ROUNDS];
    for (int p = 0; p < 4; ++p) {{
        if (march_begin - 1 + p <= march_end) {{
            LOAD_PLANE(march_begin - 1 + p) STORE_PLANE(ring + p * PLANE)
        }}
    }}
    __syncthreads();"""
    start = text.index("    // copies of plane gm")
    end = text.index("    __syncthreads();", start) + len("    __syncthreads();")
    text = text[:start] + load + text[end:]
    text = _swap(text, f"""        if (left >= 3) STAGE_PLANE({march} + 3, ring + slot_ahead)
        else copies_issued();
""", f"""        const bool stage = left >= 3;
        if (stage) LOAD_PLANE({march} + 3)
""")
    landed = f"        copies_landed_but_newest();  // plane {march} + 2, read by the next step\n"
    text = _swap(text, landed + "        __syncthreads();",
                 "        if (stage) STORE_PLANE(ring + slot_ahead)  // not read in this step\n"
                 "        __syncthreads();")
    return _swap(text, "    #undef STAGE_PLANE\n",
                 "    #undef LOAD_PLANE\n    #undef STORE_PLANE\n")


STAGINGS = ("registers", "async")
"""Staging of 16-bit records into the ring: loaded into registers and decoded once per staged
record (:func:`_staging16`), or copied raw by ``cp.async`` and decoded at each read
(:func:`_staging16_async`)."""

RING16 = """
// 16-bit ring read (async staging): the raw record copied by cp.async, decoded at each read
struct ring16 {
    const rec_t* __restrict__ p;
    __device__ __forceinline__ node_t operator[](int i) const { return record_decode(p[i]); }
};
__device__ __forceinline__ node_t reload16(node_t v) { return v; }

// 8 bytes global to shared (cp.async.ca: the 8-byte size is not allowed with .cg), zeros
// where size is 0; through registers where cp.async is not there (as copy16)
__device__ __forceinline__ void copy8(void* to, const void* from, unsigned size)
{
#if defined(THELMA_CP_ASYNC)
    const unsigned shared = (unsigned)__cvta_generic_to_shared(to);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\\n"
                 :: "r"(shared), "l"(from), "r"(size));
#else
    for (int w = 0; w < 2; ++w)
        ((unsigned*)to)[w] = size ? ((const unsigned*)from)[w] : 0u;
#endif
}
"""
"""Helpers of :func:`_staging16_async` (after :func:`helpers16`)."""


def _staging16_async(text: str) -> str:
    """The kernel text with 16-bit records staged as the fp32 records are: the same ring
    of :data:`RING` planes filled by ``cp.async`` (8 B per record, half the shared memory),
    the same one barrier per plane, and each read of a record decodes its codes
    (:data:`RING16`). A slot where no node is stored holds zero codes (ρ = 1, u = 0 once
    decoded): those records are never used (wall links take ghosts), as in the fp32 ring."""
    text = _swap(text, "    __shared__ node_t ring[RING * PLANE];",
                 "    __shared__ rec_t ring[RING * PLANE];")
    for line in ("        const {}* plane_src = src + plane_stride * (plane_ok ? gm : 0); \\",
                 "                const {}* at = plane_src + from[r]; \\"):
        text = _swap(text, line.format("node_t"), line.format("rec_t"))
    text = _swap(text, """                for (int part = 0; part < RECORD_PARTS; ++part) \\
                    copy16((char*)&(slot_)[k] + 16 * part, (const char*)at + 16 * part, \\
                           copy_size[r] & keep); \\""",
                 """                copy8(&(slot_)[k], at, copy_size[r] & keep); \\""")
    text = _swap(text, "copy_size[r] = stored[r] ? 16u : 0u;",
                 "copy_size[r] = stored[r] ? 8u : 0u;")
    text = _swap(text, """        const node_t* __restrict__ lo = ring + slot_lo;
        const node_t* __restrict__ mid = ring + slot_mid;
        const node_t* __restrict__ hi = ring + slot_hi;""",
                 """        const ring16 lo = {ring + slot_lo};
        const ring16 mid = {ring + slot_mid};
        const ring16 hi = {ring + slot_hi};""")
    return text.replace("reload(&", "reload16(")  # LES second reads: decoded again


def _swap(text: str, old: str, new: str) -> str:
    """``text`` with the one occurrence of ``old`` replaced (an error if the fp32 kernel no
    longer has it: then :func:`_staging16` must follow its change)."""
    if text.count(old) != 1:
        raise AssertionError(f"the fp32 single-step kernel changed; 16-bit staging expects {old!r}")
    return text.replace(old, new)

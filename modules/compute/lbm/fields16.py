"""ρ and u of a 16-bit LBM state in one kernel, from the lattice descriptor.

A 16-bit LBM engine keeps no ρ, u arrays (docs/DESIGN.md, "ρ, u on demand for 16-bit LBM").
Computing them with CuPy a population at a time costs a dozen launches and temporaries per
population: about 70 ms for 256³ D3Q27 nodes on an H200 (a ``statistics`` sample of K17 took
71.5 ms, 77 steps, ``benchmarks/statistics_cost.py``), which each sample, image or VTK file
paid. The kernel here reads the Q codes of a node once and writes ρ and u, about 70 bytes a
node in D3Q27: the sample now takes 1.74 ms.

It makes the same float32 operations in the same order as
:meth:`~thelma_py.modules.compute.lbm.cuda.CudaLbm._fields_from` (ρ = 0 + f_0 + f_1 + …,
u_a = 0 ± f_i in the order of i, then u_a / ρ; f_i = decode(code) + w_i, no product to fuse),
so its values are the same bits; the force's −g/2 and the solid nodes' zero stay with the
caller. The pull layout holds f*_i(x) at slot i of node x, and the in-place (AA) layout after
an even step at slot ī of node x (:func:`held_slots`): each node reads its own codes
(:func:`fields_source`). Push, and AA after an odd step, hold f*_i(x) at slot i of the
neighbour x + c_i (wrapped across every face, as ``xp.roll``), except where x + c_i is solid,
whose link brought it back as ī at x, and at solid nodes, which keep their own codes
(``CudaLbm._canonical_population``): :func:`streamed_source` reads each node's tag for that
(stored, or computed in clean tiles as the step kernels do). Moving walls add Ladd's term at
those links; the kernel takes it off again as the step kernels computed it (float32, from the
wall's row of ``bc``), where the per-population path takes off the host's term rounded to
float32: there the two agree to an ulp of the term, not bit for bit.
"""

from __future__ import annotations

import numpy as np

from thelma_py.codegen.compile import compile_module
from thelma_py.codegen.cuda import WALL_ID, c3, header, wall_term
from thelma_py.codegen.tag_tables import face_tag_function
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import wall_momentum
from thelma_py.store16 import FORMATS, cuda_functions
from thelma_py.tags import SOLID_KINDS, TagLayout

KERNEL_NAME = "fields16"
STREAMED_KERNEL_NAME = "fields16_streamed"
POINTS_SUFFIX = "_at"
"""Appended to a kernel's name for its variant at listed nodes (``points=True``)."""
BLOCK = 256
MAX_FIELDS_NODES = 2**31
"""The kernel counts nodes in 32-bit integers; larger states keep the per-population sums."""


def _float_literal(value: float) -> str:
    """``value`` rounded to float32, as an exact C++17 hexadecimal literal."""
    return float(np.float32(value)).hex() + "f"


def held_slots(lattice: Lattice, scheme: str, phase: str) -> tuple[int, ...] | None:
    """The slot of its own node that holds f*_i, for each i, in the layout of ``scheme`` after
    a step of ``phase`` ('post-even' or 'post-odd', AA only): i in pull, ī in AA after an even
    step; None where f*_i lies at another node (push, AA after an odd step)."""
    if scheme == "pull":
        return tuple(range(lattice.q))
    if scheme == "aa" and phase == "post-even":
        return tuple(int(j) for j in lattice.opposite)
    return None


def _summed(lattice: Lattice, codes, less=None) -> list[str]:
    """Lines adding f_i = decode(``codes(i)``) + w_i to ρ and ±u_a, in the order of i;
    ``less(i)``, where given and not empty, is a statement that may correct f first."""
    lines = []
    for i in range(lattice.q):
        c = [int(v) for v in lattice.c[i]]
        sums = "".join(f" u{a} {'+' if c[a] > 0 else '-'}= f;" for a in range(lattice.d) if c[a])
        fix = less(i) if less is not None else ""
        lines.append(f"    {{ {'float' if fix else 'const float'} f = pop_decode({codes(i)}) + "
                     f"{_float_literal(lattice.w[i])};{fix} rho += f;{sums} }}")
    return lines


def _stores(lattice: Lattice, node: str, count: str, sums: list[str]) -> str:
    """The rest of a kernel: ρ and u declared, the ``sums``, then their stores at ``node`` of
    ``count`` nodes."""
    zeros = ", ".join(f"u{a} = 0.0f" for a in range(lattice.d))
    velocity = "".join(f"    u_out[{a}LL * {count} + {node}] = u{a} / rho;\n"
                       for a in range(lattice.d))
    return (f"    float rho = 0.0f, {zeros};\n" + "\n".join(sums) + "\n"
            f"    rho_out[{node}] = rho;\n" + velocity + "}\n")


def _points_head(points: bool) -> tuple[str, str, str]:
    """(extra arguments, first lines, store index) of a kernel over every node (thread n is
    node n) or, with ``points``, over the ``npoints`` nodes listed in ``nodes`` (thread k
    takes node nodes[k] and stores at k)."""
    if not points:
        return "", "", ""
    return (", const int* __restrict__ nodes, const int npoints",
            "    const int k = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (k >= npoints) return;\n", "k")


def fields_source(lattice: Lattice, store: str, slots: tuple[int, ...] | None = None,
                  points: bool = False) -> str:
    """CUDA source of ``fields16(held, rho, u, n)``: ρ (n) and u (D, n) of the n nodes whose
    populations ``held`` (Q, n) holds as ``store`` codes, f*_i at slot ``slots[i]`` of the
    node (:func:`held_slots`; default: the pull layout, slot i). ``points``:
    ``fields16_at(held, rho, u, n, nodes, npoints)``, ρ (npoints) and u (D, npoints) of the
    listed nodes only (a probe's few points), the same bits."""
    slots = tuple(range(lattice.q)) if slots is None else slots
    layout = "pull" if slots == tuple(range(lattice.q)) else "permuted (in-place)"
    sums = _summed(lattice, lambda i: f"held[{slots[i]}LL * n + x]")
    extra, head, at = _points_head(points)
    node = ("    const long long x = nodes[k];\n" if points else
            "    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (x >= n) return;\n")
    return (f"// rho and u of {lattice.name} {store} {layout} codes; generated by {__name__}\n"
            + cuda_functions(FORMATS[store]) +
            f'extern "C" __global__ void {KERNEL_NAME}{POINTS_SUFFIX if points else ""}('
            "const unsigned short* __restrict__ held, float* __restrict__ rho_out, "
            f"float* __restrict__ u_out, const int n{extra})\n{{\n" + head + node
            + _stores(lattice, at or "x", "npoints" if points else "n", sums))


def streamed_source(lattice: Lattice, store: str, scheme: str, box_walls: int,
                    points: bool = False, moving: bool = False) -> str:
    """CUDA source of ``fields16_streamed(held, tags, tile_flags, rho, u, nx, ny, nz)``: ρ and
    u of a push state, or an AA state after an odd step (``scheme`` 'push' or 'aa'), held as
    ``store`` codes. Tags as the step kernels read them: stored where the tile is flagged, else
    fluid with the links across the box faces ``box_walls``. ``moving``: walls may move, and
    the kernel takes ``bc, edge_bc, periodic`` after ``nz``: a population that came back from
    a wall holds Ladd's term, which is taken off again as the step kernels computed it
    (:func:`thelma_py.codegen.cuda.wall_term`: the wall's row of ``bc``, its id from its tag or
    the edge table). ``points``: ``fields16_streamed_at(..., nodes, npoints)`` last, at the
    listed nodes only (:func:`fields_source`)."""
    if scheme not in ("push", "aa"):
        raise ValueError(f"streamed layouts are push and aa, not {scheme!r}")
    layout, opposite = TagLayout(lattice), [int(j) for j in lattice.opposite]
    solid = " || ".join(f"kind == KIND_{k.name}" for k in SOLID_KINDS)
    own = (lambda i: i) if scheme == "push" else (lambda i: opposite[i])

    def came_back(i: int) -> str:
        """Whether f*_i of a fluid node came back to it as ī (its link bit of ī)."""
        return f"((tag >> {layout.link_bit(opposite[i])}) & 1)"

    def codes(i: int) -> str:
        if i == 0:
            return "held[n]"
        c = c3(lattice, i)
        at = {a: (v if step == 0 else f"{v}{'p' if step > 0 else 'm'}")
              for a, v, step in zip("xyz", "xyz", c, strict=True)}
        neighbour = f"({at['x']} + nx * ({at['y']} + ny * {at['z']}))"
        j = opposite[i]
        # one load at a selected slot and node (constants and ints: selects, not branches),
        # so that the Q loads of a thread go out together instead of one after another
        back = came_back(i)
        return (f"held[(long long)(solid ? {own(i)} : {back} ? {j} : {i}) * count + "
                f"(solid || {back} ? m : {neighbour})]")

    def less_ladd(i: int) -> str:
        """f*_i = what came back as ī, less Ladd's term of ī (only at fluid nodes)."""
        if i == 0:
            return ""
        setup, term = wall_term(lattice, opposite[i], wall_momentum)
        return f" if (!solid && {came_back(i)}) {{ {setup} f -= {term}; }}"

    computed = "face_tag(x, y, z, nx, ny, nz)" if box_walls else "(tag_t)KIND_FLUID"
    wrapped = "".join(f"    const int {a}m = {a} == 0 ? n{a} - 1 : {a} - 1, "
                      f"{a}p = {a} == n{a} - 1 ? 0 : {a} + 1;\n" for a in "xyz"[:lattice.d])
    extra, head, at = _points_head(points)
    walls = (", const float* __restrict__ bc, const int* __restrict__ edge_bc, "
             "const int periodic") if moving else ""
    node = ("    const long long n = nodes[k];\n" if points else
            "    const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (n >= count) return;\n")
    body = ("    const long long count = (long long)nx * ny * nz;\n" + head + node +
            "    const int m = (int)n;  // < 2^31 nodes: 32-bit division, not 64-bit\n"
            "    const int x = m % nx, y = (m / nx) % ny, z = m / (nx * ny);\n"
            "    const tag_t tag = tile_flags[(x / TILE) + ((nx + TILE - 1) / TILE) * "
            f"(y + ny * z)] ? tags[n] : {computed};\n"
            "    const unsigned kind = (unsigned)(tag & TAG_KIND_MASK);\n"
            f"    const bool solid = {solid};\n" + wrapped)
    return ("\n".join(header(f"rho and u of {lattice.name} {store} {scheme} codes, streamed",
                              __name__, "float", lattice)) + "\n"
            + (face_tag_function(lattice, box_walls) + "\n" if box_walls else "")
            + (WALL_ID if moving else "") + cuda_functions(FORMATS[store]) +
            f'extern "C" __global__ void {STREAMED_KERNEL_NAME}{POINTS_SUFFIX if points else ""}('
            "const unsigned short* __restrict__ held, const tag_t* __restrict__ tags, "
            "const unsigned char* __restrict__ tile_flags, float* __restrict__ rho_out, "
            f"float* __restrict__ u_out, const int nx, const int ny, const int nz{walls}{extra})"
            "\n{\n" + body + _stores(lattice, at or "n", "npoints" if points else "count",
                                     _summed(lattice, codes, less_ladd if moving else None)))


def fields_kernel(lattice: Lattice, store: str, slots: tuple[int, ...] | None, scheme: str,
                  box_walls: int, points: bool = False, moving: bool = False):
    """The compiled kernel for codes whose node holds f*_i at ``slots`` (:func:`held_slots`;
    :func:`fields_source`), or, where ``slots`` is None, streamed by ``scheme``
    (:func:`streamed_source`, past ``moving`` walls or walls at rest); ``points``: its
    variant at listed nodes."""
    suffix = POINTS_SUFFIX if points else ""
    if slots is not None:
        return compile_module(fields_source(lattice, store, slots, points)).get_function(
            KERNEL_NAME + suffix)
    return compile_module(streamed_source(lattice, store, scheme, box_walls, points, moving)
                          ).get_function(STREAMED_KERNEL_NAME + suffix)


def fields_from_codes(kernel, held, shape: tuple, d: int, xp, tags=None, nodes=None,
                      walls=()):
    """(ρ, u) float32 of the codes ``held`` (Q, *shape) with ``kernel`` (:func:`fields_kernel`
    of their layout), given ``tags`` (the engine's tag words and tile flags) where it is the
    streamed one, and there ``walls`` (the boundary rows, the edge table and the periodic
    bits) where walls move: of every node, or with ``nodes`` (flat positions, an int32 device
    array; the kernel's ``points`` variant) of those alone, ρ shaped like ``nodes`` and u
    (d, *that)."""
    n = int(np.prod(shape))
    if n >= MAX_FIELDS_NODES:
        raise ValueError(f"fields16 counts nodes in 32-bit integers; {n} nodes is too many")
    out_shape = shape if nodes is None else nodes.shape
    rho = xp.empty(out_shape, dtype=np.float32)
    u = xp.empty((d, *out_shape), dtype=np.float32)
    count = n if nodes is None else int(nodes.size)
    listed = () if nodes is None else (nodes, np.int32(count))
    extent = ((np.int32(n),) if tags is None else
              (*(np.int32(v) for v in reversed(shape)), *[np.int32(1)] * (3 - len(shape))))
    kernel(((count + BLOCK - 1) // BLOCK, 1, 1), (BLOCK, 1, 1),
           (held, *(tags or ()), rho, u, *extent, *walls, *listed))
    return rho, u

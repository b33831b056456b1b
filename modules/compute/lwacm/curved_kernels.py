"""CUDA text of the curved-wall ghosts of both LW-ACM kernels (:mod:`.curved`), traced from
:func:`.rule.curved_ghost`, the function the NumPy references run.

An INTERPOLATED node finds its row of :attr:`.curved.CurvedGhosts.table` by binary search in
the sorted node list (:data:`SEARCH`, as LBM's interpolated arm), then each wall link takes the
ghost: the single step reads x + c_i from its shared ring (within the 3 x 3 x 3
neighbourhood), the two-step kernel sums ρ, u of x and of x + c_i from their f* (Q loads each,
these nodes only; x + c_i only where its weight is not 0). Kernels without interpolated
bodies are generated exactly as before.
"""

from __future__ import annotations

from thelma_py.codegen.expr import Expr, dot
from thelma_py.codegen.kernel_args import Arg
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lwacm import open_kernels, rule
from thelma_py.tags import LINK_SHIFT

AXES = "xyz"
ARGS = [Arg("curved_nodes", "const int*"), Arg("curved_weights", "const real_t*"),
        Arg("n_curved", "int")]
"""The kernel arguments' line: node list, weight rows and their count (the engine's)."""


def row(lattice: Lattice) -> int:
    """Reals per node in the weight table: (a, b, c, u_w) per link."""
    return (3 + lattice.d) * (lattice.q - 1)


def search(lattice: Lattice, index: str) -> list[str]:
    """C lines that point ``cw`` at the weight row of the node of flat index ``index``."""
    return ["int clo = 0, chi = n_curved - 1;",
            "while (clo < chi) { const int cm = (clo + chi) >> 1; "
            f"if (curved_nodes[cm] < (int)({index})) clo = cm + 1; else chi = cm; }}",
            f"const real_t* cw = curved_weights + (size_t){row(lattice)} * clo;"]


def weights(lattice: Lattice, i: int) -> list[Expr]:
    """(a, b, c, u_w) of link i in the row ``cw``."""
    width = 3 + lattice.d
    return [Expr(f"cw[{width * (i - 1) + m}]", atom=True) for m in range(width)]


def bit(i: int) -> str:
    return f"((tag >> {LINK_SHIFT + i - 1}) & 1)"


def fused_link(lattice: Lattice, i: int, k: str, rho0: Expr, u0: list) -> str:
    """Single step: ``o{k}`` = c_i · u of the record ``r{k}``, ``v*{k}`` of upstream x − c_i;
    where link i crosses a wall, the record becomes the mirror (ρ_g, u_m) and ``o{k}`` c_i · u_g
    (:func:`.rule.curved_fstar_i`); x + c_i is read from the ring (``lo``, ``mid``, ``hi``,
    thread offset ``c``)."""
    march = lattice.d - 1
    c = [int(v) for v in lattice.c[i]]
    plane = {1: "hi", 0: "mid", -1: "lo"}[c[march]]
    offset = f"{c[0]} + SX * ({c[1]})" if lattice.d == 3 else f"{c[0]}"
    axes = AXES[: lattice.d]
    far = [Expr(f"b{k}.u{ax}", atom=True) for ax in axes]
    rho_g, u_m, u_g = rule.curved_ghost(rho0, u0, far, weights(lattice, i))
    own = dot(lattice.c[i], [Expr(f"v{ax}{k}", atom=True) for ax in axes])
    assign = " ".join([f"r{k} = {rho_g};", f"o{k} = {dot(lattice.c[i], u_g)};"]
                      + [f"v{ax}{k} = {um};" for ax, um in zip(axes, u_m, strict=True)])
    return (f"[[maybe_unused]] real_t o{k} = {own}; "
            f"if {bit(i)} {{ const node_t b{k} = {plane}[c + ({offset})]; {assign} }}")


def two_step_links(lattice: Lattice) -> list[str]:
    """Two-step: the lines that replace the pulled f_i of every wall link of an INTERPOLATED
    node by f*_i of its ghost (after the bounce-back fix-ups and the open links)."""
    read = open_kernels.fstar_reader(lattice)
    setup, rho0, u0 = read((0,) * lattice.d, "c0")
    axes = AXES[: lattice.d]
    lines = ["if ((tag & TAG_KIND_MASK) == KIND_INTERPOLATED) {"]
    lines += ["    " + line for line in search(lattice, "n")]
    lines += ["    " + setup]
    for i in range(1, lattice.q):
        w = weights(lattice, i)
        more, _, u_far = read(tuple(int(v) for v in lattice.c[i]), f"d{i}")
        far = " ".join(f"fu{ax} = {ua};" for ax, ua in zip(axes, u_far, strict=True))
        rho_g, u_m, u_g = rule.curved_ghost(rho0, u0, [Expr(f"fu{ax}", atom=True)
                                                       for ax in axes], w)
        value = rule.curved_fstar_i(lattice, i, rho_g, u_m, u_g, Expr("kappa", atom=True))
        assign = f"f{i} = {value};"
        zeros = ", ".join(f"fu{ax} = 0" for ax in axes)
        # x + c_i is read only where its weight c is not 0 (it may be solid or beyond a face)
        lines.append(f"    if {bit(i)} {{ [[maybe_unused]] real_t {zeros}; "
                     f"if ({w[2]} != (real_t)0) {{ {more} {far} }} {assign} }}")
    lines.append("}")
    return lines

"""CUDA text of the LW-ACM open links: the arms of :class:`.open_links.OpenLinks`, one per
(kind, face) present, traced from :data:`.rule.OPEN_GHOSTS` (the NumPy reference's rules).

Both kernels call :func:`link_code` per direction; it differs only in how a record of the node
x + e is read (``read``) and what the ghost becomes (``assign``): the single step reads the
record from its shared ring and uses it as the upstream record, the two-step kernel sums ρ and
(1 − κ) ρ u from the f* of that node and pulls f*_i of the ghost. Kernels without open
boundaries are generated exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable

from thelma_py.codegen.expr import Expr
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.boundaries import face_normal
from thelma_py.modules.compute.lwacm import rule
from thelma_py.modules.compute.lwacm.open_links import crossed, tangential
from thelma_py.nodes import face_code
from thelma_py.tags import LINK_SHIFT

AXES = "xyz"
HEADER = ["const unsigned kind = (unsigned)(tag & TAG_KIND_MASK);",
          "const int id = (int)((tag >> TAG_BC_SHIFT) & TAG_BC_MASK);",
          "const int face = open_table[2 * id], base = open_table[2 * id + 1];",
          "(void)kind; (void)face; (void)base;"]
"""Lines that start an open node's update: its kind, face code and first boundary row."""


def _plane_index(face: int, at: tuple[str, str, str]) -> str:
    """Index of the node ``at`` in its face plane (as :func:`.open_nodes.plane_index`)."""
    x, y, z = at
    return (f"{y} + ny * {z}", f"{x} + nx * {z}", f"{x} + nx * {y}")[face // 2]


def wrapped(e: tuple[int, ...]) -> tuple[str, str, str]:
    """C coordinates of x + e, wrapped (only periodic axes can leave the box here)."""
    out = []
    for axis, n, step in zip("xyz", ("nx", "ny", "nz"), tuple(e) + (0,) * (3 - len(e)),
                             strict=True):
        out.append(axis if step == 0 else f"(({axis} + ({step}) + {n}) % {n})")
    return tuple(out)


def link_code(lattice: Lattice, arms, i: int, read: Callable, assign: Callable,
              wall: str) -> str | None:
    """C statement for link i of an open node: if its bit is set, the ghost of the first arm
    whose face it crosses (and whose tangential neighbour is not solid), else ``wall``.
    None where no arm crosses link i (the caller keeps its wall code).

    ``read(e, name, velocity=True)`` -> (C setup, ρ, [u]) of the node x + e (ρ alone, u = [],
    without ``velocity``); ``assign(ρ_g, [u_g])`` -> C."""
    branches = []
    for kind, label in arms:
        face = face_code(label)
        mirror = crossed(lattice, face, i)
        if not mirror:
            continue
        k = tangential(lattice, face, i)
        cond = f"kind == KIND_{kind} && face == {face}"
        if k is not None:
            cond += f" && !((tag >> {LINK_SHIFT + k - 1}) & 1)"
        e = tuple(0 for _ in range(lattice.d)) if k is None else tuple(
            -int(v) for v in lattice.c[k])
        setup, rho_m, u_m = read(e, f"m{i}")
        value = [None] * 4
        if kind in rule.VALUED_KINDS:
            setup += (f" const real_t* vb{i} = open_values + 4 * (base + "
                      f"{_plane_index(face, wrapped(e))});")
            value = [Expr(f"vb{i}[{c}]", atom=True) for c in range(4)]
        inner = None
        if kind in rule.INNER_KINDS:
            normal = face_normal(lattice, face)
            more, inner, _ = read(tuple(a - int(b) for a, b in zip(e, normal, strict=True)),
                                  f"q{i}", False)
            setup += " " + more
        rho_g, u_g = rule.open_ghost(kind, rho_m, u_m, value, inner, mirror)
        branches.append(f"if ({cond}) {{ {setup.strip()} {assign(rho_g, u_g)} }}")
    if not branches:
        return None
    return (f"if ((tag >> {LINK_SHIFT + i - 1}) & 1) {{ "
            + " else ".join(branches) + f" else {{ {wall} }} }}")


def ring_reader(lattice: Lattice) -> Callable:
    """``read`` for the single-step kernel: the record of x + e from the shared ring."""
    march = lattice.d - 1
    planes = {-1: "lo", 0: "mid", 1: "hi"}

    def read(e, name, velocity=True):
        offset = f"{e[0]} + SX * ({e[1]})" if lattice.d == 3 else f"{e[0]}"
        setup = f"const node_t {name} = {planes[e[march]]}[c + ({offset})];"
        return (setup, Expr(f"{name}.rho", atom=True),
                [Expr(f"{name}.u{ax}", atom=True) for ax in AXES[: lattice.d]])
    return read


def fstar_reader(lattice: Lattice) -> Callable:
    """``read`` for the two-step kernel: ρ = Σ_k f*_k and u = Σ_k c_k f*_k / ((1 − κ) ρ) of
    the node x + e, from the f* buffer (its j is being updated in place by its own thread)."""
    def read(e, name, velocity=True):
        X, Y, Z = wrapped(e)
        index = f"{X} + (size_t)nx * ({Y} + (size_t)ny * {Z})"
        axes = AXES[: lattice.d] if velocity else ""
        lines = [f"const size_t {name}n = {index};",
                 "real_t " + ", ".join([f"{name}r = 0"] + [f"{name}j{ax} = 0" for ax in axes])
                 + ";"]
        for k in range(lattice.q):
            lines.append(f"{{ const real_t s = src[{k} * N + {name}n]; {name}r += s;"
                         + "".join(f" {name}j{ax} {'+' if c > 0 else '-'}= s;"
                                   for ax, c in zip(axes, lattice.c[k], strict=False) if c)
                         + " }")
        if velocity:
            lines.append(f"const real_t {name}i = (real_t)1 / (((real_t)1 - kappa) * {name}r);")
        return (" ".join(lines), Expr(f"{name}r", atom=True),
                [Expr(f"({name}j{ax} * {name}i)", atom=True) for ax in axes])
    return read


def fstar_assign(lattice: Lattice, i: int) -> Callable:
    """``assign`` for the two-step kernel: f_i = f*_i of the ghost record."""
    def assign(rho_g, u_g):
        names = [f"gu{ax}" for ax in AXES[: lattice.d]]
        head = f"const real_t gr = {rho_g}; " + " ".join(
            f"const real_t {n} = {u};" for n, u in zip(names, u_g, strict=True))
        u = [Expr(n, atom=True) for n in names]
        usq = Expr("(" + " + ".join(f"{n} * {n}" for n in names) + ")", atom=True)
        value = rule.fstar_i(lattice, i, Expr("gr", atom=True), u, usq,
                             Expr("kappa", atom=True))
        return f"{head} f{i} = {value};"
    return assign

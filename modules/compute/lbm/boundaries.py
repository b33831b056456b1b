"""Open-boundary rules written once, for NumPy arrays and for traced CUDA expressions.

A boundary node sits in the first stored layer of a face with outward normal n. After streaming,
the populations with c_i · n < 0 (their upstream node lies beyond the face) are missing; a rule
rebuilds them from the known ones, then the node collides like any fluid node.

- :func:`nebb`: non-equilibrium bounce-back, Zou & He (1997) for D2Q9, in the general form of
  Hecht & Harting (2010) (identical to theirs for D3Q19; the same closure for D3Q27):
  f_i = f_ī + 2 w_i ρ (c_i · u) / c_s² − Σ_t c_it N_t, with the transverse corrections N_t that
  make Σ_i c_i f_i = ρ u exactly. ρ (velocity inlet) or u · n (pressure outlet) follows from the
  mass balance ρ (1 + u · n) = Σ_{c·n=0} f + 2 Σ_{c·n>0} f. With ``equilibrium=True`` every
  population becomes f_eq(ρ, u) of the same closure (equilibrium inlet / outlet).
- :func:`outflow_sources` (zero gradient) and :func:`free_slip_sources` (specular reflection)
  name, for each missing population, which streamed population of which neighbour it copies.

Everything is plain arithmetic on "values", like :mod:`.collision`: NumPy arrays give the
reference, :class:`~thelma_py.codegen.expr.Expr` leaves give CUDA text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from thelma_py.codegen.expr import dot
from thelma_py.lattice import Lattice
from thelma_py.nodes import EDGE_CODE, FACES, face_code, face_label

__all__ = ["EDGE_CODE", "FACE_NAMES", "face_code", "face_label", "face_normal", "local_rule",
           "nebb", "sources"]

FACE_NAMES = FACES


def face_normal(lattice: Lattice, face: int | str) -> np.ndarray:
    """Outward unit normal (ints, length D) of a face given by name or code; for an edge or a
    corner, the sum of its faces' normals (each axis-aligned: one non-zero entry per face)."""
    label = face_label(face)
    normal = np.zeros(lattice.d, dtype=np.int64)
    for name in (label[k:k + 2] for k in range(0, len(label), 2)):
        axis, sign = divmod(FACE_NAMES.index(name), 2)
        if axis >= lattice.d:
            raise ValueError(f"face {name} does not exist in {lattice.d}D")
        normal[axis] = 1 if sign else -1
    return normal


def missing(lattice: Lattice, normal: Sequence[int]) -> list[int]:
    """Directions whose upstream node lies beyond the face: c_i · n < 0."""
    return [i for i in range(lattice.q) if int(lattice.c[i] @ normal) < 0]


def nebb(lattice: Lattice, normal: Sequence[int], f: Sequence, let: Callable, *,
         velocity: Sequence | None = None, rho=None, equilibrium: bool = False,
         force: Sequence[float] | None = None) -> list:
    """Populations after the rule at a face with outward ``normal``: give ``velocity``
    (D values: velocity inlet) or ``rho`` (pressure outlet, tangential velocity zero).

    With a body ``force`` g (Guo forcing), the fluid velocity is Σ c f / ρ + g/2, so the rule
    imposes the first moment u − g/2 (the prescribed velocity, or a zero tangential velocity
    at an outlet, is then what the collision sees and reports)."""
    c, w, cs2 = lattice.c, lattice.w, lattice.cs2
    normal = np.asarray(normal, dtype=np.int64)
    cn = c @ normal
    known = sum(f[j] for j in range(lattice.q) if cn[j] == 0)
    known = known + 2.0 * sum(f[j] for j in range(lattice.q) if cn[j] > 0)
    known = let(known)
    if (velocity is None) == (rho is None):
        raise ValueError("give velocity (inlet) or rho (outlet), not both")
    shift = [0.0] * lattice.d if force is None else [-0.5 * float(g) for g in force]
    if velocity is not None:
        u = [ua + sa for ua, sa in zip(velocity, shift, strict=True)]
        rho = let(known / (1.0 + dot(normal, u)))
    else:
        un = let(known / rho - 1.0)
        u = [un * float(n) if n != 0 else s_a for n, s_a in zip(normal, shift, strict=True)]
    if equilibrium:
        return lattice.equilibrium(rho, u)
    lost = missing(lattice, normal)
    opposite = lattice.opposite
    corrections = {}
    for t in range(lattice.d):
        if normal[t] != 0:
            continue
        ct = c[:, t].astype(float)
        norm = float(sum(ct[i] ** 2 for i in lost))
        excess = float(sum(2.0 * w[i] / cs2 * ct[i] ** 2 for i in lost)) - 1.0
        tangential = dot([ct[j] if cn[j] == 0 else 0.0 for j in range(lattice.q)], f)
        corrections[t] = let((tangential + excess * rho * u[t]) / norm)
    out = list(f)
    for i in lost:
        value = f[opposite[i]] + (2.0 * float(w[i]) / cs2) * rho * dot(c[i], u)
        for t, n_t in corrections.items():
            if c[i, t] != 0:
                value = value - float(c[i, t]) * n_t
        out[i] = value
    return out


def outflow_sources(lattice: Lattice, normal: Sequence[int]) -> dict[int, tuple[int, tuple]]:
    """Zero gradient: missing f_i(x) = streamed f_i(x − n), the inner neighbour's value.

    Returns {i: (population k, node offset)} with offsets in lattice axes (x, y[, z])."""
    normal = np.asarray(normal, dtype=np.int64)
    return {i: (i, tuple(int(v) for v in -normal)) for i in missing(lattice, normal)}


def free_slip_sources(lattice: Lattice, normal: Sequence[int]) -> dict[int, tuple[int, tuple]]:
    """Specular reflection at the halfway wall beyond the face (or the faces of an edge or
    corner, ``normal`` their summed normal).

    Missing f_i(x) is the population i' that left the node y = x − c_i,t towards the wall(s)
    and was mirrored into i: c_i' = c_i − 2 Σ_F (c_i · n) n over the faces F that c_i crosses
    (c_i · n < 0), and c_i,t = c_i − Σ_F (c_i · n) n. That population bounced back into slot
    k = ī' of y, so the source is (k, −c_i,t): the streamed value of population k at y. At an
    edge a population crossing both faces is reflected by both (for the edge diagonal: plain
    bounce-back, y = x); one crossing a single face is reflected by that face alone."""
    c = lattice.c
    faces = [np.where(np.arange(lattice.d) == a, v, 0) for a, v in
             enumerate(np.asarray(normal, dtype=np.int64)) if v != 0]
    rows = {tuple(int(v) for v in ci): k for k, ci in enumerate(c)}
    out = {}
    for i in range(lattice.q):
        crossed = [n for n in faces if int(c[i] @ n) < 0]
        if not crossed:
            continue
        normal_part = sum(int(c[i] @ n) * n for n in crossed)
        k = rows[tuple(int(v) for v in -(c[i] - 2 * normal_part))]
        out[i] = (k, tuple(int(v) for v in -(c[i] - normal_part)))
    return out


def is_neighbour_kind(kind_name: str) -> bool:
    """Rules that read another node's streamed populations (not possible in place, AA)."""
    return kind_name in ("OUTFLOW", "FREE_SLIP")


def sources(lattice: Lattice, kind_name: str, normal: Sequence[int]):
    """The copy map of a neighbour rule (OUTFLOW or FREE_SLIP)."""
    if kind_name == "OUTFLOW":
        return outflow_sources(lattice, normal)
    if kind_name == "FREE_SLIP":
        return free_slip_sources(lattice, normal)
    raise ValueError(f"{kind_name} is not a neighbour rule")


def local_rule(lattice: Lattice, kind_name: str, normal, f: Sequence, let: Callable, value,
               force: Sequence[float] | None = None):
    """Apply a local rule (VELOCITY, PRESSURE, EQUILIBRIUM_*) with ``value`` = (ux, uy, uz, ρ)
    values of the node and the body ``force`` (or None); returns the rebuilt populations."""
    equilibrium = kind_name.startswith("EQUILIBRIUM")
    if kind_name in ("VELOCITY", "EQUILIBRIUM_VELOCITY"):
        return nebb(lattice, normal, f, let, velocity=list(value[: lattice.d]),
                    equilibrium=equilibrium, force=force)
    if kind_name in ("PRESSURE", "EQUILIBRIUM_PRESSURE"):
        return nebb(lattice, normal, f, let, rho=value[3], equilibrium=equilibrium,
                    force=force)
    raise ValueError(f"{kind_name} is not a local boundary rule")

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
- :func:`characteristic_rule`: a velocity inlet that lets sound leave (the incoming acoustic
  characteristic held at the prescribed state, the outgoing one from the node).
- :func:`outflow_sources` (zero gradient) and :func:`free_slip_sources` (specular reflection)
  name, for each missing population, which streamed population of which neighbour it copies.

Everything is plain arithmetic on "values", like :mod:`.collision`: NumPy arrays give the
reference, :class:`~thelma_py.codegen.expr.Expr` leaves give CUDA text.

:data:`RULES` is the table the engines iterate: one :class:`BoundaryRule` per open node kind
(the kinds themselves are declared in the core, ``thelma_py.tags.OPEN_TABLE``). The NumPy
reference (:mod:`.open_nodes`), the dense CUDA arms (:mod:`.kernels`) and the sparse ones
(:mod:`.sparse_kernels`) apply a record's rule; :func:`refusal` says where a kind cannot run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.codegen.expr import dot, sqrt
from thelma_py.lattice import Lattice
from thelma_py.nodes import EDGE_CODE, FACES, face_code, face_label
from thelma_py.tags import OPEN_KINDS, NodeKind

__all__ = ["EDGE_CODE", "FACE_NAMES", "RULES", "BoundaryRule", "face_code", "face_label",
           "face_normal", "instability", "nebb", "refusal", "rule"]

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


def mass_balance(lattice: Lattice, normal: Sequence[int], f: Sequence, let: Callable):
    """K = Σ_{c·n=0} f + 2 Σ_{c·n>0} f of the node's known populations at a face with outward
    ``normal``: ρ (1 + u · n) = K whatever the missing populations are (Zou & He 1997)."""
    cn = lattice.c @ np.asarray(normal, dtype=np.int64)
    known = sum(f[j] for j in range(lattice.q) if cn[j] == 0)
    return let(known + 2.0 * sum(f[j] for j in range(lattice.q) if cn[j] > 0))


def force_shift(lattice: Lattice, force: Sequence[float] | None) -> list[float]:
    """−g/2 per axis (Guo forcing: a rule imposes the first moment u − g/2), zeros without a
    body force."""
    return [0.0] * lattice.d if force is None else [-0.5 * float(g) for g in force]


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
    known = mass_balance(lattice, normal, f, let)
    if (velocity is None) == (rho is None):
        raise ValueError("give velocity (inlet) or rho (outlet), not both")
    shift = force_shift(lattice, force)
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


def velocity_rule(lattice: Lattice, normal, f: Sequence, let: Callable, value,
                  force: Sequence[float] | None = None, *, equilibrium: bool = False) -> list:
    """Velocity inlet: :func:`nebb` with the node's velocity ``value[:D]``."""
    return nebb(lattice, normal, f, let, velocity=list(value[: lattice.d]),
                equilibrium=equilibrium, force=force)


def pressure_rule(lattice: Lattice, normal, f: Sequence, let: Callable, value,
                  force: Sequence[float] | None = None, *, equilibrium: bool = False) -> list:
    """Pressure outlet: :func:`nebb` with the node's density ``value[3]``."""
    return nebb(lattice, normal, f, let, rho=value[3], equilibrium=equilibrium, force=force)


def characteristic_rule(lattice: Lattice, normal, f: Sequence, let: Callable, value,
                        force: Sequence[float] | None = None) -> list:
    """Velocity inlet that lets sound leave (one-dimensional characteristics along the
    outward ``normal`` n, linearised about the prescribed state u_b = ``value[:D]``,
    ρ_b = ``value[3]``): the wave entering the domain carries c_s δρ − δu_n, and is held at
    zero, u_n = u_b·n + c_s (ρ − ρ_b); the wave leaving it is what the node's streamed
    populations say, through the mass balance ρ (1 + u_n) = K of :func:`nebb`. Together
    c_s ρ² + (1 + u_b·n − c_s ρ_b) ρ − K = 0, whose positive root is taken in the form
    2K / (b + √(b² + 4 c_s K)). The tangential velocity is the prescribed one; every
    population becomes f_eq(ρ, u). An equilibrium or Zou-He inlet holds u_n at u_b·n and
    reflects a pressure wave whole, as a closed end does."""
    cs = float(np.sqrt(lattice.cs2))
    normal = np.asarray(normal, dtype=np.int64)
    known = mass_balance(lattice, normal, f, let)
    shift = force_shift(lattice, force)
    target = [value[a] + shift[a] for a in range(lattice.d)]
    rho_b = value[3]
    b = let(1.0 + dot(normal, target) - cs * rho_b)
    rho = let(2.0 * known / (b + sqrt(b * b + 4.0 * cs * known)))
    excess = let(cs * (rho - rho_b))
    u = [target[a] + excess * float(normal[a]) if normal[a] != 0 else target[a]
         for a in range(lattice.d)]
    return lattice.equilibrium(rho, u)


@attrs.frozen
class BoundaryRule:
    """One open node kind of the LBM plug-in: how its missing populations are rebuilt after
    streaming, and where it can run. Exactly one of ``local`` and ``sources`` is given."""

    kind: NodeKind = attrs.field(validator=attrs.validators.in_(OPEN_KINDS))
    local: Callable | None = None
    """Rebuild from the node's own streamed populations ``f`` and its values ``value``
    (ux, uy, uz, ρ; ``NodeTags.open_values``): ``local(lattice, normal, f, let, value, force)
    -> Q populations``, plain arithmetic (NumPy arrays or traced expressions)."""
    sources: Callable | None = None
    """Copy other nodes' streamed populations: ``sources(lattice, normal) -> {i: (k, offset)}``,
    missing f_i(x) = streamed f_k(x + offset) (kept bounced where that node is solid or
    beyond a face)."""
    edges: bool = False
    """May sit on an edge or corner where faces of this kind meet (face codes from EDGE_CODE)."""
    aa: bool = attrs.field(default=attrs.Factory(lambda rule: rule.sources is None,
                                                 takes_self=True))
    """Runs with streaming='aa' (not a copy rule: AA overwrites the neighbours in place)."""
    sparse: bool = True
    """Runs with storage='sparse' (pull)."""
    lwacm: bool = False
    """Runs with the LW-ACM plug-ins (they take a ghost record beyond the face instead of
    rebuilding populations: ``modules/compute/lwacm/rule.py``, ``OPEN_GHOSTS``)."""
    min_tau: float = attrs.field(default=0.5, validator=attrs.validators.ge(0.5))
    """Below this relaxation time the rule is linearly unstable: the LBM plug-in warns. Measured
    with BGK on a uniform flow (U = 0.05) carrying noise of 10⁻⁶ (docs/DESIGN.md, "Sphere
    cases: the Zou-He faces"); ½ where no limit is known."""

    def __attrs_post_init__(self) -> None:
        if (self.local is None) == (self.sources is None):
            raise ValueError(f"{self.name}: give a local rule or a copy rule (sources), not both")

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def neighbour(self) -> bool:
        """A copy rule: reads another node's streamed populations."""
        return self.sources is not None


RULES: dict[NodeKind, BoundaryRule] = {rule.kind: rule for rule in (
    # Zou-He faces grow a disturbance at small τ (velocity: 0.53 grows, 0.54 decays; pressure:
    # 0.515 grows slowly, 0.52 decays); the equilibrium kinds decayed at τ = 0.503
    BoundaryRule(NodeKind.VELOCITY, local=velocity_rule, lwacm=True, min_tau=0.54),
    BoundaryRule(NodeKind.PRESSURE, local=pressure_rule, lwacm=True, min_tau=0.52),
    BoundaryRule(NodeKind.EQUILIBRIUM_VELOCITY,
                 local=functools.partial(velocity_rule, equilibrium=True), lwacm=True),
    BoundaryRule(NodeKind.EQUILIBRIUM_PRESSURE,
                 local=functools.partial(pressure_rule, equilibrium=True), lwacm=True),
    BoundaryRule(NodeKind.OUTFLOW, sources=outflow_sources, lwacm=True),
    BoundaryRule(NodeKind.FREE_SLIP, sources=free_slip_sources, edges=True, lwacm=True),
    # LW-ACM keeps its own ghost records (lwacm/rule.py) and has no characteristic ghost yet
    BoundaryRule(NodeKind.CHARACTERISTIC_VELOCITY, local=characteristic_rule),
)}
"""The open-boundary rules of the LBM plug-in, one record per node kind."""


def rule(kind: NodeKind | str) -> BoundaryRule:
    """The record of a node kind (or its name); an open kind without a rule lists those with."""
    key = NodeKind[kind] if isinstance(kind, str) and kind in NodeKind.__members__ else kind
    if key not in RULES:
        raise ValueError(f"no LBM boundary rule for node kind {kind!r}; rules exist for "
                         f"{', '.join(r.name for r in RULES.values())}")
    return RULES[key]


def refusal(kind: NodeKind | str, *, streaming: str = "pull", storage: str = "dense",
            compute: str = "lbm") -> str | None:
    """Why ``kind`` cannot run in this configuration (None: it can)."""
    record = rule(kind)
    label = record.name.lower().replace("_", "-")
    if compute != "lbm" and not record.lwacm:
        return f"{compute} has no rule for {label} boundaries; use compute 'lbm'"
    if streaming == "aa" and not record.aa:
        return (f"{label} boundaries read a neighbour's streamed populations, which the "
                "in-place AA scheme overwrites in the same step; use streaming='pull' or "
                "'push'")
    if storage == "sparse" and not record.sparse:
        return f"{label} boundaries do not run with storage='sparse'; use storage='dense'"
    return None


def instability(kind: NodeKind | str, tau: float) -> str | None:
    """Why ``kind`` may blow up at relaxation time ``tau`` (None: no known limit is crossed)."""
    record = rule(kind)
    if tau >= record.min_tau:
        return None
    label = record.name.lower().replace("_", "-")
    return (f"{label} boundaries (Zou-He, non-equilibrium bounce-back) grow disturbances below "
            f"tau = {record.min_tau} (this run: {tau:.4f}); use kind='equilibrium' on that face "
            "or a larger tau")


def check_arm(lattice: Lattice, kind: str, face: str, scheme: str) -> None:
    """Raise ValueError unless (kind, face) is an open boundary the kernels generate for
    ``scheme``: a known kind, a face, or an edge / corner for kinds that allow them."""
    try:  # a face, or an edge / corner of free-slip faces ('-y+z')
        record = rule(kind)
        face_normal(lattice, face)
        edge = face_code(face) >= EDGE_CODE
    except ValueError:
        record = edge = None
    if record is None or (edge and not record.edges):
        raise ValueError(f"unknown open boundary ({kind!r}, {face!r})")
    reason = refusal(kind, streaming=scheme)
    if reason:
        raise ValueError(reason)

"""The LW-ACM update rule, written once for NumPy arrays and for traced CUDA expressions.

Link-wise artificial compressibility (Asinari et al. 2012; Obrecht et al. 2014, eq. 11)::

    f_i(x, t+1) = f_i^(e)(x − c_i, t) + κ (f_i^(e,o)(x, t) − f_i^(e,o)(x − c_i, t)),
    κ = 2 (ω − 1) / ω = 2 (1 − τ),   ν = (1/ω − ½) / 3,

with f^(e) the second-order equilibrium and f^(e,o)_i(ρ, u) = ½ (f^(e)_i(ρ, u) − f^(e)_i(ρ, −u))
= 3 w_i ρ (c_i · u) its odd part. The new ρ, u are the moments of f_i(x, t+1) (plus g with a
body force g). Both plug-ins evaluate it as

    f_i(x, t+1) = f*_i(x − c_i) + κ f_i^(e,o)(x),    f*_i = f_i^(e) − κ f_i^(e,o)    (eqs. 15-16)

— the two-step scheme stores f* and the momentum j = ρ u of each node (its own κ f^(e,o)_i(x) =
κ 3 w_i (c_i · j) needs nothing else; ρ = Σ_i f*_i since the odd part has no mass), the
single-step scheme recomputes f*_i(x − c_i) from the ρ, u of the upstream node and sums the
moments directly (:func:`single_step`), so in the periodic bulk the two agree to rounding.

Every function takes a ``let`` callable that names intermediates (identity for NumPy,
:meth:`~thelma_py.codegen.expr.Emitter.let` for CUDA); κ arrives as a value (a NumPy scalar or
the name of a kernel argument).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isclose
from math import sqrt as root_of
from numbers import Number

import numpy as np

from thelma_py.codegen.expr import dot, rsqrt, sqrt
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import moments


def odd_i(lattice: Lattice, i: int, rho, u: Sequence):
    """Odd part of the equilibrium of direction i: 3 w_i ρ (c_i · u) (0.0 for the rest one)."""
    cu = dot(lattice.c[i], u)
    if isinstance(cu, Number) and cu == 0:
        return 0.0
    return (3.0 * float(lattice.w[i])) * rho * cu


def odd_j_i(lattice: Lattice, i: int, j: Sequence):
    """The same odd part from the momentum j = ρ u: 3 w_i (c_i · j) (0.0 for the rest one)."""
    cj = dot(lattice.c[i], j)
    if isinstance(cj, Number) and cj == 0:
        return 0.0
    return (3.0 * float(lattice.w[i])) * cj


_CUBIC_WEIGHTS: dict[str, np.ndarray] = {}
"""The weights of :func:`cubic_weights`, by lattice name (solved once)."""


def cubic_weights(lattice: Lattice) -> np.ndarray:
    """g[i, b, a] (a ≠ b; 0 elsewhere) such that w_i Σ_{b, a≠b} c_ib g[i, b, a] u_a² u_b has
    zero mass and momentum and the third moments u_a² u_b of the continuous equilibrium.

    For each axis b the part is c_ib (Σ_{a≠b} β_a c_ia² + β_0), whose first moment and third
    moments Σ_i w_i c_ib² c_ia'² (...) are solved for (one small linear system per lattice).
    On D2Q9 and D3Q27 this is the Hermite part 27/2 (c_a² − 1/3) c_b; on D3Q19, which lacks
    the corners, H_aab and H_bcc are not orthogonal and the weights differ (18, 9, −9)."""
    cached = _CUBIC_WEIGHTS.get(lattice.name)
    if cached is not None:
        return cached
    c, w, d = lattice.c.astype(float), lattice.w, lattice.d
    g = np.zeros((lattice.q, d, d))
    for b in range(d):
        others = [a for a in range(d) if a != b]
        basis = [c[:, a] ** 2 for a in others] + [np.ones(lattice.q)]  # β_a c_a², β_0
        rows = [[float(np.sum(w * c[:, b] ** 2 * f)) for f in basis]]  # momentum: 0
        rows += [[float(np.sum(w * c[:, b] ** 2 * c[:, a] ** 2 * f)) for f in basis]
                 for a in others]  # third moments a a b
        targets = np.vstack([np.zeros(len(others)), np.eye(len(others))])
        beta = np.linalg.solve(np.array(rows), targets)  # (basis, monomial u_a² u_b)
        for k, a in enumerate(others):
            g[:, b, a] = sum(beta[m, k] * f for m, f in enumerate(basis))
    _CUBIC_WEIGHTS[lattice.name] = g
    return g


def cubic_i(lattice: Lattice, i: int, u: Sequence):
    """The third-order part of the equilibrium of direction i over w_i ρ, for the components
    the lattice holds (0.0 where none: the rest direction)::

        h_i = Σ_{b, a≠b} c_ib g_iba u_a² u_b  (+ 27 c_ix c_iy c_iz u_x u_y u_z on D3Q27)

    with the weights of :func:`cubic_weights`: Σ_i w_i h_i c_i c_i c_i has the components
    u_a u_a u_b (a ≠ b) and, on D3Q27, u_x u_y u_z of the continuous equilibrium; its zeroth to
    second moments are 0. The diagonal components u_a³ exist on no lattice here (c³ = c)."""
    c = [int(v) for v in lattice.c[i]]
    g = cubic_weights(lattice)
    terms = []
    for b, cb in enumerate(c):
        if cb == 0:
            continue
        square = None
        for a in range(lattice.d):
            k = float(g[i, b, a])
            if a == b or k == 0.0:
                continue
            part = k * (u[a] * u[a])
            square = part if square is None else square + part
        if square is not None:
            terms.append(u[b] * square if cb > 0 else -(u[b] * square))
    if lattice.q == 27 and all(c):
        terms.append((27.0 * c[0] * c[1] * c[2]) * (u[0] * u[1] * u[2]))
    if not terms:
        return 0.0
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def fstar_i(lattice: Lattice, i: int, rho, u: Sequence, usq, kappa, cubic: bool = False):
    """f*_i = f^(e)_i − κ f^(e,o)_i at one node (eq. 16); ``usq`` = |u|². ``cubic``: f^(e)
    carries its third-order part too (:func:`cubic_i`; f^(e,o) stays 3 w_i ρ c_i·u)."""
    value = lattice.equilibrium_i(i, rho, u, usq) - kappa * odd_i(lattice, i, rho, u)
    h = cubic_i(lattice, i, u) if cubic else 0.0
    if isinstance(h, Number) and h == 0:
        return value
    return value + (float(lattice.w[i]) * rho) * h


def fstar(lattice: Lattice, rho, u: Sequence, kappa, let: Callable,
          cubic: bool = False) -> list:
    """All f*_i of one node (or of every node, for arrays)."""
    usq = let(sum(ua * ua for ua in u), "usq")
    return [fstar_i(lattice, i, rho, u, usq, kappa, cubic) for i in range(lattice.q)]


def new_moments(lattice: Lattice, f: Sequence, let: Callable, force: Sequence[float] | None):
    """ρ and u of f_i(x, t+1); a body force g adds g to u (a momentum source ρ g per step)."""
    rho, u = moments(lattice, f, let)
    return rho, add_force(u, let, force)


def add_force(u: Sequence, let: Callable, force: Sequence[float] | None) -> list:
    """u + g for a uniform body acceleration g (components that are 0 cost nothing)."""
    if force is None or not any(force):
        return list(u)
    return [ua if g == 0.0 else let(ua + float(g), f"{name}_f")
            for ua, g, name in zip(u, force, ("ux", "uy", "uz"), strict=False)]


def two_step(lattice: Lattice, f_in: Sequence, j0: Sequence, kappa, let: Callable,
             force: Sequence[float] | None = None, les=None, cubic: bool = False):
    """One two-step update of a node: f_in are the streamed f*_i(x − c_i) (bounce-back
    applied), j0 the node's own momentum ρ u at t. Returns (ρ, u, j, new f*): j = ρ u of the
    new state (after the force), what the node stores besides f*. ``cubic``: the new f*
    carries the equilibrium's third-order part (:func:`cubic_i`).

    ``les`` (a :class:`thelma_py.subgrid.Smagorinsky`): κ stays κ₀ and the new f* carries the
    eddy stress Π_t = −2 ρ ν_t S as an even, massless part (:func:`subgrid_stress`)."""
    f = [let(fi + kappa * odd_j_i(lattice, i, j0), f"g{i}") for i, fi in enumerate(f_in)]
    rho, u = new_moments(lattice, f, let, force)
    j = [let(rho * ua, f"j{axis}") for ua, axis in zip(u, "xyz", strict=False)]
    post = fstar(lattice, rho, u, kappa, let, cubic)
    if les is not None:
        extra = subgrid_stress(lattice, f_in, j0, rho, kappa, les, let)
        post = [p if isinstance(e, Number) and e == 0 else p + e for p, e in zip(post, extra,
                                                                                  strict=True)]
    return rho, u, j, post


def subgrid_stress(lattice: Lattice, f_in: Sequence, j0: Sequence, rho, kappa, les,
                   let: Callable) -> list:
    """The Smagorinsky part of the new f* of a two-step node, from its own pulled values only.

    Strain: Q = Σ_i c_i c_i f*_i(x − c_i) − ρ' I/3 − j j / ρ' (ρ' = Σ_i f*_i(x − c_i), j the
    node's momentum at t) is, by a Taylor expansion of f*_i(x − c_i) = f^(e)_i − κ f^(e,o)_i
    at x − c_i, −(1 − κ₀)/3 (∇j + ∇jᵀ) − 2 ρ ν_t S = −2 ρ (2 ν₀ + ν_t) S to O(u³, u ∇ν_t, Δx²)
    (the ν_t part is the eddy stress the upstream nodes wrote the step before). With ν_t =
    C_s² |S|, τ' = (1 − κ₀) + 3 ν_t solves the LBM relation |Q| = (2/3) ρ τ' |S| / √2, so
    :meth:`~thelma_py.subgrid.Smagorinsky.tau_from_stress` (τ₀ → 1 − κ₀) gives it, and
    Π_t = −2 ρ ν_t S = (1 − (1 − κ₀)/τ') Q.

    Returns f^(t)_i = 9/2 w_i (c_i c_i − I/3) : Π_t (no mass, no momentum): streamed to the
    neighbours it adds −∇·Π_t = ∇·(2 ρ ν_t S) to their momentum, the eddy viscosity in
    divergence form, with κ and so the base scheme unchanged."""
    q = pulled_stress(lattice, f_in, j0, rho, let)
    pairs = list(q)
    weight = {(a, b): 1.0 if a == b else 2.0 for a, b in pairs}
    norm = let(sqrt(sum(weight[p] * q[p] * q[p] for p in pairs)), "q_norm")
    base = 1.0 - kappa
    tau = let(les.tau_from_stress(base, norm, rho), "tau_t")
    share = let(1.0 - base / tau, "les_share")
    stress = {p: let(share * q[p], f"pt{p[0]}{p[1]}") for p in pairs}
    return stress_populations(lattice, stress, let)


def stress_populations(lattice: Lattice, stress: dict, let: Callable) -> list:
    """f^(t)_i = 9/2 w_i (c_i c_i − I/3) : Π of a symmetric stress Π given by its entries
    (a, b), a ≤ b: no mass, no momentum, second moment Π (:func:`subgrid_stress`)."""
    d = lattice.d
    trace = let(sum(stress[(a, a)] for a in range(d)) * (1.0 / 3.0), "pt_trace")
    out = []
    for i in range(lattice.q):
        c = [int(v) for v in lattice.c[i]]
        terms = [float((1.0 if a == b else 2.0) * c[a] * c[b]) * value
                 for (a, b), value in stress.items() if c[a] * c[b]]
        total = sum(terms[1:], terms[0]) if terms else 0.0
        out.append(let((4.5 * float(lattice.w[i])) * (total - trace), f"ft{i}"))
    return out


def pulled_stress(lattice: Lattice, f_in: Sequence, j0: Sequence, rho, let: Callable) -> dict:
    """Q_ab (a ≤ b) = Σ_i c_ia c_ib f_in_i − δ_ab ρ/3 − j0_a j0_b / ρ of a two-step node:
    −(1 − κ₀)/3 (∂_a j_b + ∂_b j_a) plus the upstream eddy stress (:func:`subgrid_stress`)."""
    d = lattice.d
    pairs = [(a, b) for a in range(d) for b in range(a, d)]
    inverse = let(1.0 / rho, "les_inv_rho")
    q = {}
    for a, b in pairs:
        second = None
        for i in range(lattice.q):
            cab = int(lattice.c[i][a]) * int(lattice.c[i][b])
            if cab:
                term = f_in[i] if cab > 0 else -f_in[i]
                second = term if second is None else second + term
        value = second - j0[a] * j0[b] * inverse
        q[(a, b)] = let(value - rho * (1.0 / 3.0) if a == b else value, f"q{a}{b}")
    return q


def _velocity_at(lattice: Lattice, fetch: Callable) -> Callable:
    """u at x + e for a lattice vector e of the stencil (or 0): ``fetch(i)`` gives x − c_i."""
    index = {tuple(int(v) for v in lattice.c[i]): i for i in range(lattice.q)}
    return lambda e: fetch(index[tuple(-v for v in e)])[1]


def face_plane(lattice: Lattice, i: int) -> tuple[int, int, float] | None:
    """(b, c, e_b e_c) of a face-diagonal link i (exactly two non-zero components b < c of
    c_i; its upstream node x − c_i = x + e), None for the others (axis, rest, D3Q27 corners)."""
    axes = [a for a in range(lattice.d) if lattice.c[i][a]]
    if len(axes) != 2:
        return None
    b, c = axes
    return b, c, float(lattice.c[i][b] * lattice.c[i][c])


ROW_AXIS = 1
"""The axis along which :func:`single_step_rows` stacks a thread's nodes (y)."""


def lends_differences(lattice: Lattice) -> bool:
    """Whether :class:`StrainRate` forms a node's mixed derivatives from inner differences that
    nodes stacked along y lend each other (:meth:`StrainRate.share`), or sums the four face
    diagonals as they come. Measured on the H100 (NOTES run 58, 2 nodes a thread, fp32 256³):
    lending is 0.7 to 1.4 % faster on D3Q27 and 2 % slower on D3Q19, whose kernel spills more
    with the longer-lived differences; so D3Q27 only. Both forms are second order, and one
    node's rounding is the same alone as in a column (:func:`single_step_rows`)."""
    return lattice.q == 27


def plane_axes(b: int, c: int) -> tuple[int, int]:
    """(inner, outer) axes of the face-diagonal plane (b, c), b < c: :class:`StrainRate` takes
    its mixed derivative as the outer difference of the inner one. The outer axis is y where the
    plane holds it (so nodes stacked along y share those inner differences), else the last."""
    outer = ROW_AXIS if ROW_AXIS in (b, c) else c
    return (c if outer == b else b), outer


class StrainRate:
    """The strain rate of a node from its neighbours' velocities, for the Smagorinsky model
    of the single step, in two parts so that generated code reads each record of the ring at
    most twice and holds few values.

    On construction (``fetch(i)`` = (ρ, u) of x − c_i, wall ghosts applied, so a wall enters
    as its Dirichlet value at the link midpoint): the axis neighbours give ∂_b u_a ≈
    (u_a(x + e_b) − u_a(x − e_b)) / 2 and ∂_b² u_a, hence S. The norm |S| = √(2 S:S)
    (:attr:`norm`), which sets the node's τ, takes 2 S:S as the mean of its values from the
    forward and from the backward differences: second order like the central one, but it sees
    grid-scale (2Δx) modes, for which central differences vanish (without it the Re 1600 vortex
    piles energy up at the grid scale, unseen by the model, and diverges at 32³ and 64³).
    Then :meth:`add` takes the velocity of every face-diagonal neighbour as the link sums read
    it, and :meth:`gradient` gives ∇|S| from the mixed derivatives, ∂_c|S| = (2/|S|) Σ_ab S_ab
    ∂_b∂_c u_a, with the central S in the sum and the norm above in 1/|S| (the same to second
    order where S is smooth, and finite where the central S vanishes). D2Q9, D3Q19 and D3Q27
    hold every neighbour this needs (D3Q27's corners are not used). A mixed derivative is the
    sum of the plane's four face diagonals as :meth:`add` gets them, or, where
    :func:`lends_differences`, the difference along the plane's outer axis (:func:`plane_axes`)
    of the central differences along its inner axis at x ± e_outer; :meth:`share` then hands a
    node those of its neighbours along y, which are their own central differences.

    Differences are kept unscaled (T = 4 S, X_abc = 4 ∂_b∂_c u_a); one 1/√ gives both |S|
    and the 1/|S| of the gradient: no division, no square root. ``tag`` ends every name."""

    def __init__(self, lattice: Lattice, fetch: Callable, let: Callable, tag: str = ""):
        d = lattice.d
        self.lattice, self.let, self.tag = lattice, let, tag
        at = _velocity_at(lattice, fetch)
        unit = [tuple(1 if k == b else 0 for k in range(d)) for b in range(d)]
        u0 = at((0,) * d)
        diff = [[None] * d for _ in range(d)]  # diff[a][b] = 2 ∂_b u_a
        curve = [[None] * d for _ in range(d)]  # curve[a][b] = ∂_b² u_a
        for b in range(d):
            up, down = at(unit[b]), at(tuple(-v for v in unit[b]))
            for a in range(d):
                diff[a][b] = let(up[a] - down[a], f"du{a}{b}{tag}")
                curve[a][b] = let(up[a] + down[a] - 2.0 * u0[a], f"dd{a}{b}{b}{tag}")
        self.four = {}  # four[(a, b)] = T_ab = 4 S_ab, a ≤ b
        for a in range(d):
            for b in range(a, d):
                self.four[(a, b)] = let(2.0 * diff[a][a] if a == b else
                                        diff[a][b] + diff[b][a], f"S{a}{b}{tag}")
        # |S|² as the mean of the squares of the forward and the backward differences' S:
        # with C_ab = ∂_b² u_a + ∂_a² u_b (second differences), T ± C are those S (times 4),
        # and ½ (|T + C|² + |T − C|²) = |T|² + |C|², so P = Σ_ab (T_ab² + C_ab²)
        # (off-diagonal pairs twice), |S| = √(P / 8), 1/|S| = √8 / √P
        bend = {(a, b): let(2.0 * curve[a][a] if a == b else curve[a][b] + curve[b][a],
                            f"C{a}{b}{tag}") for a, b in self.four}
        square = let(sum((t * t + bend[p] * bend[p]) * (1.0 if p[0] == p[1] else 2.0)
                         for p, t in self.four.items()), f"strain_sq{tag}")
        self.root = let(rsqrt(square + 1e-30), f"strain_rsqrt{tag}")
        self.scaled_norm = (let(square * self.root, f"strain_root{tag}"), 1.0 / root_of(8.0))
        """(√P, 1/√8): |S| as a value and the constant it is to be multiplied by."""
        # sums[c] = 16 Σ_ab S_ab ∂_b∂_c u_a: the axis terms (b = c) now, the mixed ones later
        self.sums = [let(dot_list([self.t(a, c) for a in range(d)],
                                  [curve[a][c] for a in range(d)]) * 4.0, f"sS{c}{tag}")
                     for c in range(d)]
        self.diff = diff
        self.lends = lends_differences(lattice)
        self.seen: dict[tuple, list] = {}  # (b, c, outer sign, inner sign) -> u(x + e)
        self.inner: dict[tuple, list] = {}  # (b, c, outer sign) -> D = u(+ inner) − u(− inner)
        self.mixed: dict[tuple[int, int], list] = {}  # (b, c) -> X_abc by a
        self.added: dict[tuple[int, int], int] = {}  # (b, c) -> diagonals summed, if not lent

    @property
    def norm(self):
        """|S| (an expression, for callers outside the kernels; they take :attr:`scaled_norm`)."""
        return self.scaled_norm[0] * self.scaled_norm[1]

    def t(self, a: int, b: int):
        """T_ab = 4 S_ab."""
        return self.four[(min(a, b), max(a, b))]

    def share(self, side: int, neighbour: StrainRate) -> None:
        """Take the central differences of the node at x + ``side`` e_y (side ±1) as this node's
        inner differences there, for every plane that holds y: the same numbers that
        :meth:`add` would form from the face diagonals (bit for bit), without forming them.
        Nothing where the lattice does not :func:`lend its differences <lends_differences>`."""
        if not self.lends:
            return
        for b, c in self._planes():
            inner, outer = plane_axes(b, c)
            if outer == ROW_AXIS:
                self.inner[(b, c, side)] = [neighbour.diff[a][inner]
                                            for a in range(self.lattice.d)]
                self._mix(b, c)

    def _planes(self) -> list[tuple[int, int]]:
        d = self.lattice.d
        return [(b, c) for b in range(d) for c in range(b + 1, d)]

    def add(self, i: int, u: Sequence) -> None:
        """Take the velocity ``u`` of x − c_i into the mixed derivatives if i is a face
        diagonal: X_abc = Σ over the plane's four diagonals e of e_b e_c u_a(x + e), summed as
        they come, or, where the lattice :func:`lends differences <lends_differences>`, as
        D(x + e_o) − D(x − e_o) with D(p) = u(p + e_n) − u(p − e_n) (n, o: the plane's inner
        and outer axes), each difference formed once both its values are in."""
        plane = face_plane(self.lattice, i)
        if plane is not None:
            (self._pair if self.lends else self._sum)(i, plane, u)

    def _sum(self, i: int, plane: tuple, u: Sequence) -> None:
        b, c, sign = plane
        old = self.mixed.get((b, c))
        name = f"dd{{}}{b}{c}_{i}{self.tag}"
        self.mixed[(b, c)] = [
            (ua if sign > 0 else -ua) if old is None else
            self.let(old[a] + ua if sign > 0 else old[a] - ua, name.format(a))
            for a, ua in enumerate(u)]
        self.added[(b, c)] = self.added.get((b, c), 0) + 1

    def _pair(self, i: int, plane: tuple, u: Sequence) -> None:
        b, c = plane[:2]
        inner, outer = plane_axes(b, c)
        e = [-int(v) for v in self.lattice.c[i]]  # x − c_i = x + e
        side = e[outer]
        if (b, c, side) in self.inner:  # lent by :meth:`share`
            return
        self.seen[(b, c, side, e[inner])] = u
        if (b, c, side, -e[inner]) not in self.seen:
            return
        up, down = self.seen.pop((b, c, side, 1)), self.seen.pop((b, c, side, -1))
        self.inner[(b, c, side)] = [
            self.let(p - m, f"D{a}{b}{c}{'pm'[side < 0]}{self.tag}")
            for a, (p, m) in enumerate(zip(up, down, strict=True))]
        self._mix(b, c)

    def _mix(self, b: int, c: int) -> None:
        """X_abc once both inner differences of the plane (b, c) are in."""
        if (b, c, 1) in self.inner and (b, c, -1) in self.inner and (b, c) not in self.mixed:
            self.mixed[(b, c)] = [
                self.let(p - m, f"dd{a}{b}{c}{self.tag}")
                for a, (p, m) in enumerate(zip(self.inner[(b, c, 1)], self.inner[(b, c, -1)],
                                               strict=True))]

    def _sums(self) -> list:
        """16 Σ_ab S_ab ∂_b∂_c u_a by c, once :meth:`add` has seen every face diagonal."""
        d, let, tag = self.lattice.d, self.let, self.tag
        missing = [plane for plane in self._planes() if plane not in self.mixed
                   or (not self.lends and self.added[plane] < 4)]
        if missing:
            raise RuntimeError(f"StrainRate: the face diagonals of the planes {missing} are not "
                               "all added yet")
        sums = list(self.sums)
        for (b, c), x in sorted(self.mixed.items()):  # plane (b, c) adds to ∂_c|S| and ∂_b|S|
            sums[c] = let(accumulate(sums[c], [self.t(a, b) for a in range(d)], x),
                          f"sS{c}_{b}{tag}")
            sums[b] = let(accumulate(sums[b], [self.t(a, c) for a in range(d)], x),
                          f"sS{b}_{c}{tag}")
        return sums

    def gradient(self, scale: float = 1.0) -> list:
        """``scale`` ∇|S|, once :meth:`add` has seen every face diagonal."""
        sums = self._sums()
        # ∂_c|S| = (2 / |S|) sums[c] / 16 = sums[c] / (√8 √P)
        factor = self.let(self.root * (scale / root_of(8.0)), f"dS_scale{self.tag}")
        return [self.let(factor * value, f"dS{c}{self.tag}") for c, value in enumerate(sums)]

    def add_eddy_momentum(self, j: Sequence, rho, c_s: float) -> list:
        """The momentum sums j of the node plus what a step adds by the gradient of the eddy
        viscosity ν_t = C_s² |S|, ρ (∇ν_t · (∇u + ∇uᵀ) + ∇ν_t ∇·u): with the node's ν_t on
        every link the single step gives ν_t (∇²u + ∇∇·u), and this completes it to the
        divergence form ∇·(ν_t (∇u + ∇uᵀ + I ∇·u)) (:func:`single_step`). ∇ν_t / 2 is
        :meth:`gradient`'s, its scale and ρ applied once to the whole term (T = 4 S =
        2 (∇u + ∇uᵀ) in the sum)."""
        d, let, tag = self.lattice.d, self.let, self.tag
        sums = self._sums()
        scale = let(rho * (self.root * (c_s * c_s / 2.0 / root_of(8.0))), f"jt_scale{tag}")
        trace = let(sum(self.four[(a, a)] for a in range(d)) * 0.5, f"div_u{tag}")
        return [let(ja + scale * (dot_list([self.t(a, b) for b in range(d)], sums)
                                  + sums[a] * trace), f"j{'xyz'[a]}_les{tag}")
                for a, ja in enumerate(j)]


def les_kappa(model, kappa0, strain, scale: float = 1.0):
    """κ_t = 2 (1 − τ) of a node whose relaxation time the subgrid ``model`` raises from τ₀ =
    1 − κ₀/2 for the strain rate |S| = ``scale`` ``strain`` (one formula for NumPy and CUDA):
    κ₀ − 2 (τ(|S|) − τ₀), one multiply-add for a model linear in |S| (Smagorinsky:
    τ = τ₀ + 3 C_s² |S|), whose slope, with ``scale``, is a constant of the kernel."""
    base = model.tau_from_strain(0.0, 0.0)
    slope = model.tau_from_strain(0.0, 1.0) - base
    if not isclose(model.tau_from_strain(0.0, 2.0) - base, 2.0 * slope, rel_tol=1e-12):
        raise ValueError(f"{type(model).__name__}: τ is not linear in |S|; the single step's "
                         "LES takes only such models (Smagorinsky)")
    return kappa0 - (2.0 * scale * slope) * strain


def single_step(lattice: Lattice, upstream: Callable, kappa, let: Callable,
                force: Sequence[float] | None = None, les=None, shifted: bool = False,
                cubic: bool = False, reciprocal: Callable | None = None):
    """One single-step update of a node. ``upstream(i)`` gives (ρ, u) of the upstream node
    x − c_i, wall ghosts applied; it is called for i = 0 (the node itself) first, then in
    :func:`link_order`, each just before its direction is used (so generated code loads one
    neighbour at a time).
    It may give (ρ, u, o) instead: o replaces c_i·u in the odd part, the rest of f*_i comes
    from (ρ, u) (moving walls, :func:`moving_wall_ghost`; curved links, :func:`curved_fstar_i`).
    Returns (ρ, u).

    The moments of f_i(x, t+1) = f*_i(x − c_i) + κ f^(e,o)_i(x) are taken as sums, since the odd
    part of the node's own equilibrium has no mass and momentum ρu (Σ_i f^(e,o)_i = 0,
    Σ_i c_i f^(e,o)_i = ρ u)::

        ρ' = Σ_i f*_i(x − c_i),      ρ' u' = Σ_i c_i f*_i(x − c_i) + κ ρ u(x),

    with f*_i = ρ (w_i − 3/2 w_i |u|² + (c_i·u)(3 w_i (1 − κ) + 9/2 w_i c_i·u)) of the upstream
    node: the same rule as eq. (11), in about half the operations of one equilibrium per link.

    ``les`` (a :class:`thelma_py.subgrid.Smagorinsky`): a first pass over the axis neighbours
    gives |S| (:class:`StrainRate`, which calls ``upstream`` once more for each of them: generated
    code reads those records twice instead of holding them), which raises the node's τ, so
    every link of the node takes κ_t = 2 (1 − τ₀ − 3 C_s² |S|). That alone gives the eddy
    viscosity as ν_t (∇²u + ∇∇·u); the face diagonals, as the sums read them, complete ∇|S|, and
    the momentum gains ρ (∇ν_t · (∇u + ∇uᵀ) + ∇ν_t ∇·u) (:meth:`StrainRate.add_eddy_momentum`), so
    the viscous term is ∇·(ν_t (∇u + ∇uᵀ + I ∇·u)), in divergence form, and mass is conserved.
    (The same term, to leading order, as κ at each link's midpoint, κ_i = κ_t − ½ c_i·∇κ_t, in
    eq. (11), which needs each link's own κ_i in the sums and changes mass by O(Δx³).)

    ``shifted``: the records hold δρ = ρ − 1 instead of ρ (``upstream`` gives δρ, the result
    is δρ'), and the sums run over the small parts of each f*_i, t_i = e_i + δρ_i (w_i + e_i)
    with e_i = f*_i / ρ_i − w_i (Σ_i w_i = 1, Σ_i c_i w_i = 0). In fp32 a record of ρ near 1
    resolves 6e-8, while a step at ν ~ 1e-5 changes ρ by ~1e-8 (6ν ∇·j, u·∇ρ): rounded away.

    ``reciprocal``: how 1/ρ' is taken (default 1 / x; the 16-bit kernels pass a faster one
    whose 2-ulp error the stored codes do not see).

    ``cubic``: each f*_i(x − c_i) carries the third-order part of its equilibrium,
    w_i ρ h_i (:func:`cubic_i`), which cancels the scheme's anti-diffusion −½ u u : ∇∇(ρu)
    of its explicit time step for the components the lattice holds
    (docs/validation/lwacm_energy.md, section 8).
    """
    strain = None
    if les is not None:
        strain = StrainRate(lattice, upstream, let)
        kappa = let(les_kappa(les, kappa, *strain.scaled_norm), "kappa_t")
    rho0, u0 = upstream(0)
    linear = {}  # w 3(1 − κ), one per weight
    rho = None
    j = [0.0] * lattice.d
    for i in link_order(lattice):
        got = (rho0, u0) if i == 0 else upstream(i)
        if strain is not None:
            strain.add(i, got[1])
        lin = linear_part(lattice, i, kappa, linear, let)
        s = link_sum(lattice, i, got, lin, let, shifted, cubic)
        rho, j = add_link(lattice, i, s, rho, j, let)
        if i == 0:
            own, j = add_own(rho0, u0, kappa, j, let, shifted)
    if strain is not None:
        j = strain.add_eddy_momentum(j, own, les.c_s)
    return rho, velocity(rho, j, let, force, shifted, reciprocal)


def velocity(rho, j: Sequence, let: Callable, force: Sequence[float] | None = None,
             shifted: bool = False, reciprocal: Callable | None = None, tag: str = "") -> list:
    """u' = j' / ρ' (+ g) of the sums of :func:`single_step` (ρ' less 1 with ``shifted``
    records), 1/ρ' by ``reciprocal`` (default: correctly rounded); names end in ``tag``."""
    mass = rho + 1.0 if shifted else rho
    inverse = let(reciprocal(mass) if reciprocal else 1.0 / mass, f"inv_rho{tag}")
    u = [let(ja * inverse, f"u{'xyz'[a]}{tag}") for a, ja in enumerate(j)]
    return add_force(u, lambda v, name: let(v, f"{name}{tag}"), force)


def link_order(lattice: Lattice) -> list[int]:
    """The directions by their upstream node x − c_i: plane by plane along the march axis (the
    last), row by row, then along x. :func:`single_step` and :func:`single_step_rows` add the
    links in this order, so a node rounds alike in both (and in the NumPy reference)."""
    return sorted(range(lattice.q), key=lambda i: tuple(-int(c) for c in reversed(lattice.c[i])))


def single_step_rows(lattice: Lattice, rows: int, load: Callable, kappa, let: Callable,
                     force: Sequence[float] | None = None, shifted: bool = False,
                     cubic: bool = False, reciprocal: Callable | None = None,
                     les=None) -> list[tuple]:
    """:func:`single_step` of ``rows`` nodes in a column along y (x + k e_y, k < rows) that read
    each upstream record once: ``load(offset)`` gives (ρ, u) of the record at x + offset,
    called once per offset in the order of :func:`link_order`, and every link that needs it
    is added to its node's sums there. Returns [(ρ, u)] by node: each node's sums are those of
    :func:`single_step`, in the same order, so they round alike (bit for bit). No walls (a
    bulk tile). With ``les`` a first pass loads the records each node's :class:`StrainRate`
    needs (its own and its axis neighbours, once each), and they are loaded again in the sums."""
    y = 1

    def offset(k: int, i: int) -> tuple:
        return tuple((k if a == y else 0) - int(c) for a, c in enumerate(lattice.c[i]))

    users: dict[tuple, list] = {}  # offset -> (node, direction) of every link reading it
    for k in range(rows):
        for i in range(lattice.q):
            users.setdefault(offset(k, i), []).append((k, i))
    kappas, strains = [kappa] * rows, [None] * rows
    if les is not None:
        first: dict[tuple, tuple] = {}

        def fetch_of(k: int) -> Callable:
            def fetch(i: int):
                at = offset(k, i)
                if at not in first:
                    first[at] = load(at)
                return first[at]
            return fetch

        strains = [StrainRate(lattice, fetch_of(k), let, f"_{k}") for k in range(rows)]
        for k in range(rows):  # a neighbour in the column lends its central differences
            for side in (-1, 1):
                if 0 <= k + side < rows:
                    strains[k].share(side, strains[k + side])
        kappas = [let(les_kappa(les, kappa, *s.scaled_norm), f"kappa_t_{k}") for k, s in
                  enumerate(strains)]
    # 3 w (1 − κ) by weight: one table for the column, one a node with LES (each its κ_t)
    linear = [{} for _ in range(rows)] if les is not None else [{}] * rows
    sums = [[None, [0.0] * lattice.d] for _ in range(rows)]
    owns = [None] * rows
    for at in sorted(users, key=lambda o: tuple(reversed(o))):  # as link_order
        got = load(at)
        for k, i in users[at]:
            if strains[k] is not None:
                strains[k].add(i, got[1])
            lin = linear_part(lattice, i, kappas[k], linear[k], let,
                              f"_{k}" if les is not None else "")
            s = link_sum(lattice, i, got, lin, let, shifted, cubic, f"_{k}")
            sums[k] = list(add_link(lattice, i, s, *sums[k], let, f"_{k}"))
            if i == 0:
                owns[k], sums[k][1] = add_own(*got, kappas[k], sums[k][1], let, shifted, f"_{k}")
    if les is not None:
        for k in range(rows):
            sums[k][1] = strains[k].add_eddy_momentum(sums[k][1], owns[k], les.c_s)
    return [(rho, velocity(rho, j, let, force, shifted, reciprocal, f"_{k}"))
            for k, (rho, j) in enumerate(sums)]


def linear_part(lattice: Lattice, i: int, kappa, linear: dict, let: Callable, tag: str = ""):
    """3 w_i (1 − κ) of link i (None for the rest direction), named once per weight in
    ``linear`` (weight -> value) as ``lin{n}`` (and ``tag``)."""
    if not any(lattice.c[i]):
        return None
    w = float(lattice.w[i])
    if w not in linear:
        linear[w] = let((3.0 * w) * (1.0 - kappa), f"lin{len(linear)}{tag}")
    return linear[w]


def add_own(rho0, u0: Sequence, kappa, j: list, let: Callable, shifted: bool = False,
            tag: str = ""):
    """(ρ(x), j + κ ρ u(x)): the node's own κ f^(e,o)(x) in the momentum sums, added where
    its record comes in :func:`link_order` (its ρ and u need not live longer); ρ from δρ
    with ``shifted`` records."""
    own = let(rho0 + 1.0, f"rho_own{tag}") if shifted else rho0
    scale = let(kappa * own, f"kappa_rho{tag}")
    return own, [let(ja + scale * ua, f"j{'xyz'[a]}0{tag}") for a, (ja, ua) in
                 enumerate(zip(j, u0, strict=True))]


def link_sum(lattice: Lattice, i: int, got: tuple, lin, let: Callable, shifted: bool = False,
             cubic: bool = False, tag: str = ""):
    """f*_i(x − c_i) of one link of :func:`single_step`, named ``s{i}{tag}``: ``got`` = (ρ, u)
    of the upstream record, or (ρ, u, o) with o in place of c_i·u in the odd part; ``lin``
    = 3 w_i (1 − κ_i) (None for the rest direction). With ``shifted`` records (δρ) the small
    part t_i = f*_i − w_i (:func:`shifted_sum`)."""
    rho_i, u_i = got[0], got[1]
    odd = got[2] if len(got) > 2 else None  # c_i·u of the link's odd part, if not u_i's
    w = float(lattice.w[i])
    usq = sum(ua * ua for ua in u_i)
    if lin is None:  # the rest direction
        if shifted:
            return shifted_sum(rho_i, w, let((-1.5 * w) * usq, f"e{i}{tag}"), let, i, tag)
        return let(rho_i * (w - (1.5 * w) * usq), f"s{i}{tag}")
    cu = dot(lattice.c[i], u_i)
    h = cubic_i(lattice, i, u_i) if cubic else None
    part = (-1.5 * w) * usq if shifted else (w - (1.5 * w) * usq)  # e_i = f*_i / ρ_i − w_i
    part = part + cu * (lin + (4.5 * w) * cu)
    if h is not None:
        part = part + w * h
    if odd is not None:  # plus (odd − cu) lin, exactly 0 where odd is c_i·u_i
        part = part + (odd - cu) * lin
    if shifted:
        return shifted_sum(rho_i, w, let(part, f"e{i}{tag}"), let, i, tag)
    return let(rho_i * part, f"s{i}{tag}")


def add_link(lattice: Lattice, i: int, s, rho, j: list, let: Callable, tag: str = ""):
    """The sums ρ' (None before the first link) and j' with link i's f*_i = ``s`` added."""
    rho = s if rho is None else let(rho + s, f"m{i}{tag}")
    j = [ja if c == 0 else let(ja + s if c > 0 else ja - s, f"j{'xyz'[a]}{i}{tag}")
         for a, (ja, c) in enumerate(zip(j, lattice.c[i], strict=True))]
    return rho, j


def shifted_sum(delta, w: float, small, let: Callable, i: int, tag: str = ""):
    """t_i = f*_i − w_i = e_i + δρ_i (w_i + e_i) of a link whose upstream record holds
    δρ_i = ρ_i − 1, for e_i = f*_i / ρ_i − w_i (:func:`single_step` with ``shifted``)."""
    return let(small + delta * (w + small), f"s{i}{tag}")


def accumulate(total, a: Sequence, b: Sequence):
    """total + a_0 b_0 + a_1 b_1 + ..., added one product at a time (one FMA each)."""
    for x, y in zip(a, b, strict=True):
        total = total + x * y
    return total


def dot_list(a: Sequence, b: Sequence):
    """Σ a_k b_k of two equally long sequences."""
    total = None
    for x, y in zip(a, b, strict=True):
        total = x * y if total is None else total + x * y
    return total


def wall_ghost(rho, u: Sequence, wall_velocity: Sequence | None):
    """ρ, u that stand in for a solid upstream node in the single-step scheme.

    The wall lies halfway along the link, as for bounce-back. Velocity: Dirichlet, by linear
    extrapolation through the wall, u_ghost = 2 u_w − u(x), so the link midpoint carries u_w.
    Density: zero normal gradient, ρ_ghost = ρ(x). ``wall_velocity`` None means a wall at rest.
    """
    if wall_velocity is None:
        return rho, [-ua for ua in u]
    return rho, [2.0 * w - ua for w, ua in zip(wall_velocity, u, strict=True)]


def moving_wall_ghost(rho, u: Sequence, wall_velocity: Sequence):
    """(ρ, u_g, u) for a link into a moving wall: :func:`wall_ghost`'s record, whose velocity
    enters the link's f*_i linearly (as c_i·u_g, the third value of an ``upstream`` of
    :func:`single_step`), and the node's own u for its even part. That f*_i is
    the two-step scheme's bounce-back with Ladd's term scaled by 1 − κ
    (:func:`.reference.two_step_wall_tags`): f*_ī(x) + (1 − κ) 6 w_i ρ c_i·u_w. With the ghost
    in the quadratic terms too, a node beside a moving wall that is itself nearly at rest (a
    lid's corner) would see |u_g| ≈ 2 |u_w|, a source of mass and momentum that the two-step
    scheme has not: the lid-driven cube at Re 2000 diverged at 64³ and 96³ with it. (Ladd's term
    there takes the wall's density, 1; here the node's ρ: the two differ by (ρ − 1) u_w.)
    Callers pass the ghost velocity itself as the third value where the wall is at rest
    (u_g = −u: the same squares), so that such links round as :func:`wall_ghost`'s do."""
    rho_g, u_g = wall_ghost(rho, u, wall_velocity)
    return rho_g, u_g, list(u)


def curved_ghost(rho, u: Sequence, u_far: Sequence, weights: Sequence):
    """(ρ_g, u_m, u_g) that stand in for the solid upstream node x − c_i of a link cut by a
    curved wall at the fraction q of the link (both schemes; :mod:`.curved`).

    ``weights`` = (a, b, c, u_w,x, u_w,y[, u_w,z]) of the link, computed once on the host
    (:func:`.curved.ghost_weights`): u_g = a u_w + b u(x) + c u(x + c_i) extrapolates u along
    the link through the wall point (value u_w) to x − c_i; ``u_far`` = u(x + c_i). The
    population the link receives takes its odd part from u_g and its even part from the
    halfway mirror u_m = 2 u_w − u(x) (:func:`curved_fstar_i`). ρ_g = ρ(x)."""
    a, b, c, wall = weights[0], weights[1], weights[2], weights[3:]
    u_g = [a * w + b * ua + c * uf for w, ua, uf in zip(wall, u, u_far, strict=True)]
    return rho, [2.0 * w - ua for w, ua in zip(wall, u, strict=True)], u_g


def curved_fstar_i(lattice: Lattice, i: int, rho, u_m: Sequence, u_g: Sequence, kappa):
    """The population f_i a curved link brings to x: f*_i of the mirror record (ρ, u_m) with
    its odd part (1 − κ) 3 w_i ρ c_i · u_m replaced by that of the extrapolated u_g.

    At q = ½ u_g = u_m: the staircase ghost. Elsewhere the odd part (momentum through the link)
    puts the wall at its exact position, while the even part (density and momentum flux) stays
    the reflected one, as Bouzidi's scheme keeps it: a ghost record (ρ, u_g) whole, with |u_g|
    below |u| where the wall is near x − c_i, diverges at τ → ½ (Schäfer–Turek at Re 100)."""
    usq = sum(ua * ua for ua in u_m)
    shift = [g - m for g, m in zip(u_g, u_m, strict=True)]
    return fstar_i(lattice, i, rho, u_m, usq, kappa) + (1.0 - kappa) * odd_i(lattice, i, rho,
                                                                            shift)


# -- open boundaries: ghost records beyond an open face -----------------------------------------

def inlet_ghost(rho, u: Sequence, value: Sequence, inner, mirror: Sequence[int] = ()):
    """Velocity inlet: u_b (``value[:D]``) at the link midpoint, u_g = 2 u_b − u(x); density
    extrapolated linearly from the node and its inner neighbour x − n, ρ_g = 2 ρ(x) − ρ(x − n)
    (``inner``), so the pressure gradient that drives the flow holds up to the face."""
    return 2.0 * rho - inner, [2.0 * w - ua for w, ua in zip(value[: len(u)], u, strict=False)]


def outlet_ghost(rho, u: Sequence, value: Sequence, inner, mirror: Sequence[int] = ()):
    """Pressure outlet: ρ_b (``value[3]``) at the link midpoint, ρ_g = 2 ρ_b − ρ(x), and zero
    normal velocity gradient, u_g = u(x)."""
    return 2.0 * value[3] - rho, list(u)


def outflow_ghost(rho, u: Sequence, value: Sequence, inner, mirror: Sequence[int] = ()):
    """Outflow: zero velocity gradient, u_g = u(x); density extrapolated linearly,
    ρ_g = 2 ρ(x) − ρ(x − n) (a zero density gradient would halve the pressure gradient at the
    last node and bend the profile there)."""
    return 2.0 * rho - inner, list(u)


def free_slip_ghost(rho, u: Sequence, value: Sequence, inner, mirror: Sequence[int] = ()):
    """Free slip at the link midpoint: the node mirrored across each face the link crosses
    (axes ``mirror``): u_g,n = −u_n (no flux), u_g,t = u_t (no shear), ρ_g = ρ(x)."""
    return rho, [-ua if a in mirror else ua for a, ua in enumerate(u)]


OPEN_GHOSTS: dict[str, Callable] = {
    "VELOCITY": inlet_ghost, "EQUILIBRIUM_VELOCITY": inlet_ghost,
    "PRESSURE": outlet_ghost, "EQUILIBRIUM_PRESSURE": outlet_ghost,
    "OUTFLOW": outflow_ghost, "FREE_SLIP": free_slip_ghost,
}
"""Ghost record (ρ_g, u_g) by open node kind: ``ghost(ρ(x), u(x), value, ρ(x − n), mirror)``
with ``value`` the node's boundary row (u_x, u_y, u_z, ρ), x − n its inner neighbour along the
face normal and ``mirror`` the axes of the faces the link crosses. Both LW-ACM schemes use it
where x − c_i lies beyond the node's own open face(s): the single step as the upstream record,
the two-step scheme as the pulled f*_i = :func:`fstar_i` (ρ_g, u_g). The boundary sits at the
link midpoint, half a spacing beyond the boundary nodes, as the walls do (LBM's Zou-He inlets
and outlets sit on the boundary nodes themselves)."""

VALUED_KINDS = ("VELOCITY", "EQUILIBRIUM_VELOCITY", "PRESSURE", "EQUILIBRIUM_PRESSURE")
"""Open kinds whose ghost reads the node's boundary row (``NodeTags.open_values``)."""
INNER_KINDS = ("VELOCITY", "EQUILIBRIUM_VELOCITY", "OUTFLOW")
"""Open kinds whose ghost reads ρ of the inner neighbour x − n."""


def open_ghost(kind: str, rho, u: Sequence, value: Sequence, inner=None,
               mirror: Sequence[int] = ()):
    """(ρ_g, u_g) of the ghost beyond an open face of node kind ``kind`` (a NodeKind name)."""
    if kind not in OPEN_GHOSTS:
        raise ValueError(f"LW-ACM has no ghost rule for {kind!r}; it has {sorted(OPEN_GHOSTS)}")
    return OPEN_GHOSTS[kind](rho, u, value, inner, mirror)

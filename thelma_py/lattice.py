"""Discrete velocity sets (DdQq): the one description every kernel, CPU or GPU, is built from.

A :class:`Lattice` is pure data. The order of ``c`` is an ABI: stored populations, link bits in
node tags and generated kernels all index by it, and ``tests/test_lattice.py`` pins it.

MRT moment matrices follow d'Humières et al. (2002) for D3Q19 and Lallemand & Luo (2000) for
D2Q9: rows are orthogonal polynomials of the velocities, so ``M @ M.T`` is diagonal and the
inverse is ``M.T @ diag(1 / norms)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import attrs
import numpy as np

CS2 = 1.0 / 3.0
"""Lattice speed of sound squared for every lattice here (dx = dt = 1)."""


def _frozen_array(dtype: type) -> Callable[[object], np.ndarray]:
    def convert(values: object) -> np.ndarray:
        array = np.array(values, dtype=dtype)
        array.flags.writeable = False
        return array

    return convert


@attrs.frozen
class MomentBasis:
    """Orthogonal moment basis for multiple-relaxation-time collision.

    ``matrix`` has shape (Q, Q): row k gives moment k as a combination of populations.
    ``names`` label the rows; ``default_rates`` are the relaxation rates of the non-hydrodynamic
    moments; the rows listed in ``shear`` relax with ω = 1/τ (they set the viscosity) and those in
    ``conserved`` are not relaxed at all.
    """

    matrix: np.ndarray = attrs.field(converter=_frozen_array(np.float64), eq=False, repr=False)
    names: tuple[str, ...]
    default_rates: dict[str, float] = attrs.field(eq=False)
    shear: tuple[int, ...]
    conserved: tuple[int, ...]

    def rates(self, omega: float, **overrides: float) -> np.ndarray:
        """Diagonal of the relaxation matrix S for viscosity rate ``omega``.

        ``overrides`` set the rate of a moment by name (for example ``e=1.0``).
        """
        unknown = set(overrides) - set(self.names)
        if unknown:
            raise ValueError(
                f"unknown MRT moment name(s) {sorted(unknown)}; valid names: {list(self.names)}"
            )
        s = np.zeros(len(self.names))
        for k, name in enumerate(self.names):
            if k in self.conserved:
                s[k] = 0.0
            elif k in self.shear:
                s[k] = omega
            else:
                s[k] = self.default_rates[name]
            s[k] = overrides.get(name, s[k])
        return s

    def collision_matrix(self, s: np.ndarray) -> np.ndarray:
        """K = M⁻¹ S M, so that post-collision f' = f − K (f − f_eq)."""
        m = self.matrix
        return np.linalg.solve(m, np.diag(s) @ m)


@attrs.frozen
class Lattice:
    """Velocity set DdQq: ``c`` has shape (Q, D) (integers), ``w`` shape (Q,)."""

    name: str
    c: np.ndarray = attrs.field(converter=_frozen_array(np.int64), eq=False, repr=False)
    w: np.ndarray = attrs.field(converter=_frozen_array(np.float64), eq=False, repr=False)
    mrt: MomentBasis | None = attrs.field(default=None, eq=False, repr=False)
    cs2: float = CS2
    _opposite: np.ndarray = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.c.shape != (len(self.w), self.c.shape[1]):
            raise ValueError(f"{self.name}: c has shape {self.c.shape} for {len(self.w)} weights")
        if not np.isclose(self.w.sum(), 1.0):
            raise ValueError(f"{self.name}: weights sum to {self.w.sum()}, expected 1")
        if not (self.c[0] == 0).all():
            raise ValueError(f"{self.name}: direction 0 must be the rest velocity")
        second = np.einsum("q,qa,qb->ab", self.w, self.c, self.c)
        if not np.allclose(second, self.cs2 * np.eye(self.d)):
            raise ValueError(f"{self.name}: second moment of the weights is not cs2 * I")
        opposite = [np.flatnonzero((self.c == -ci).all(axis=1)) for ci in self.c]
        if any(len(found) != 1 for found in opposite):
            raise ValueError(f"{self.name}: every velocity needs exactly one opposite")
        # held, not recomputed: the NumPy engines ask for it at every boundary of every step
        object.__setattr__(self, "_opposite", _frozen_array(np.int64)([o[0] for o in opposite]))

    @property
    def q(self) -> int:
        """Number of discrete velocities."""
        return self.c.shape[0]

    @property
    def d(self) -> int:
        """Number of space dimensions."""
        return self.c.shape[1]

    @property
    def opposite(self) -> np.ndarray:
        """Index of −c_i for every i, shape (Q,)."""
        return self._opposite

    def equilibrium(self, rho, u: Sequence):
        """Second-order equilibrium f_eq_i(ρ, u) for i in 0..Q-1, as a list.

        Works on any number-like values (floats, NumPy or CuPy arrays, traced expressions), so
        the NumPy reference and the CUDA generator evaluate the same formula.
        """
        usq = sum(ua * ua for ua in u)
        return [self.equilibrium_i(i, rho, u, usq) for i in range(self.q)]

    def equilibrium_shifted(self, delta, rho, u: Sequence):
        """f_eq_i − w_i for i in 0..Q-1, as a list: w_i δρ + w_i ρ (−3/2 u² + c·u (3 + 9/2 c·u))
        with δρ = ρ − 1 given (the shifted populations of 16-bit storage collide in it
        without adding and taking away w_i)."""
        quadratic = -1.5 * sum(ua * ua for ua in u)
        out = []
        for i in range(self.q):
            cu = sum(int(c) * ua for c, ua in zip(self.c[i], u, strict=True) if c != 0)
            w = float(self.w[i])  # w δρ, w ρ and −3/2 u²: once per weight or node
            part = quadratic if isinstance(cu, int) else quadratic + cu * (3.0 + 4.5 * cu)
            out.append(w * delta + (w * rho) * part)
        return out

    def equilibrium_i(self, i: int, rho, u: Sequence, usq=None):
        """Equilibrium of direction i alone; ``usq`` = |u|² if already computed."""
        if usq is None:
            usq = sum(ua * ua for ua in u)
        cu = sum(int(c) * ua for c, ua in zip(self.c[i], u, strict=True) if c != 0)
        return float(self.w[i]) * rho * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * usq)


def _velocities(d: int, max_norm2: int) -> list[tuple[int, ...]]:
    """All velocities in {-1,0,1}^d with |c|² <= max_norm2, ordered rest, faces, edges, corners.

    Within a shell, a velocity is followed by its opposite, so opposite(i) = i ± 1 for i ≥ 1.
    """
    shells: dict[int, list[tuple[int, ...]]] = {}
    for c in itertools.product((0, 1, -1), repeat=d):
        c = tuple(reversed(c))  # x varies first, as in the published tables
        n2 = sum(v * v for v in c)
        if n2 <= max_norm2:
            shells.setdefault(n2, []).append(c)
    ordered: list[tuple[int, ...]] = []
    for n2 in sorted(shells):
        seen: set[tuple[int, ...]] = set()
        for c in sorted(shells[n2], key=_published_order):
            if c in seen:
                continue
            opposite = tuple(-v for v in c)
            ordered += [c] if c == opposite else [c, opposite]
            seen |= {c, opposite}
    return ordered


def _published_order(c: tuple[int, ...]) -> tuple:
    """Sort key: faces by axis; edges by axis pair, (+,+) then (+,-); corners by signs."""
    axes = tuple(a for a, v in enumerate(c) if v != 0)
    return (axes, tuple(-v for v in c))


def _polynomial_basis(c: np.ndarray, rows: dict[str, Callable]) -> np.ndarray:
    cx, cy = c[:, 0].astype(float), c[:, 1].astype(float)
    cz = c[:, 2].astype(float) if c.shape[1] == 3 else np.zeros(len(c))
    c2 = cx**2 + cy**2 + cz**2
    return np.array([f(cx, cy, cz, c2) for f in rows.values()])


_D2Q9_ROWS: dict[str, Callable] = {
    "rho": lambda x, y, z, c2: 1 + 0 * x,
    "e": lambda x, y, z, c2: 3 * c2 - 4,
    "eps": lambda x, y, z, c2: 4.5 * c2**2 - 10.5 * c2 + 4,
    "jx": lambda x, y, z, c2: x,
    "qx": lambda x, y, z, c2: (3 * c2 - 5) * x,
    "jy": lambda x, y, z, c2: y,
    "qy": lambda x, y, z, c2: (3 * c2 - 5) * y,
    "pxx": lambda x, y, z, c2: x**2 - y**2,
    "pxy": lambda x, y, z, c2: x * y,
}

_D3Q19_ROWS: dict[str, Callable] = {
    "rho": lambda x, y, z, c2: 1 + 0 * x,
    "e": lambda x, y, z, c2: 19 * c2 - 30,
    "eps": lambda x, y, z, c2: (21 * c2**2 - 53 * c2 + 24) / 2,
    "jx": lambda x, y, z, c2: x,
    "qx": lambda x, y, z, c2: (5 * c2 - 9) * x,
    "jy": lambda x, y, z, c2: y,
    "qy": lambda x, y, z, c2: (5 * c2 - 9) * y,
    "jz": lambda x, y, z, c2: z,
    "qz": lambda x, y, z, c2: (5 * c2 - 9) * z,
    "pxx3": lambda x, y, z, c2: 3 * x**2 - c2,
    "pixx3": lambda x, y, z, c2: (3 * c2 - 5) * (3 * x**2 - c2),
    "pww": lambda x, y, z, c2: y**2 - z**2,
    "piww": lambda x, y, z, c2: (3 * c2 - 5) * (y**2 - z**2),
    "pxy": lambda x, y, z, c2: x * y,
    "pyz": lambda x, y, z, c2: y * z,
    "pxz": lambda x, y, z, c2: x * z,
    "mx": lambda x, y, z, c2: (y**2 - z**2) * x,
    "my": lambda x, y, z, c2: (z**2 - x**2) * y,
    "mz": lambda x, y, z, c2: (x**2 - y**2) * z,
}


def _make_basis(c: np.ndarray, rows: dict[str, Callable], rates: dict[str, float],
                shear: Sequence[str], conserved: Sequence[str]) -> MomentBasis:
    names = tuple(rows)
    return MomentBasis(
        matrix=_polynomial_basis(c, rows),
        names=names,
        default_rates=rates,
        shear=tuple(names.index(n) for n in shear),
        conserved=tuple(names.index(n) for n in conserved),
    )


def _lattice(name: str, d: int, max_norm2: int, weights: dict[int, float],
             mrt: tuple | None = None) -> Lattice:
    c = np.array(_velocities(d, max_norm2))
    w = [weights[int((ci * ci).sum())] for ci in c]
    basis = _make_basis(c, *mrt) if mrt else None
    return Lattice(name, c=c, w=w, mrt=basis)


D2Q9 = _lattice(
    "D2Q9", 2, 2, {0: 4 / 9, 1: 1 / 9, 2: 1 / 36},
    mrt=(_D2Q9_ROWS,
         # Lallemand & Luo (2000), their linear-stability choice.
         {"e": 1.64, "eps": 1.54, "qx": 1.9, "qy": 1.9},
         ("pxx", "pxy"), ("rho", "jx", "jy")),
)

D3Q19 = _lattice(
    "D3Q19", 3, 2, {0: 1 / 3, 1: 1 / 18, 2: 1 / 36},
    mrt=(_D3Q19_ROWS,
         # d'Humières, Ginzburg, Krafczyk, Lallemand & Luo (2002), section 2.
         {"e": 1.19, "eps": 1.4, "qx": 1.2, "qy": 1.2, "qz": 1.2, "pixx3": 1.4,
          "piww": 1.4, "mx": 1.98, "my": 1.98, "mz": 1.98},
         ("pxx3", "pww", "pxy", "pyz", "pxz"), ("rho", "jx", "jy", "jz")),
)

D3Q27 = _lattice("D3Q27", 3, 3, {0: 8 / 27, 1: 2 / 27, 2: 1 / 54, 3: 1 / 216})

LATTICES: dict[str, Lattice] = {lat.name: lat for lat in (D2Q9, D3Q19, D3Q27)}


def lattice_by_name(name: str) -> Lattice:
    """Look a lattice up by name (case-insensitive), with an error that lists the valid names."""
    try:
        return LATTICES[name.upper()]
    except KeyError:
        raise ValueError(f"unknown lattice {name!r}; valid: {sorted(LATTICES)}") from None

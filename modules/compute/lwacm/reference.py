"""NumPy LW-ACM engines: the references every CUDA variant is checked against.

Arrays have shape (*S) for ρ and (D, *S) for u and for the momentum j = ρ u, S = (Nz, Ny, Nx) or
(Ny, Nx), x fastest. The two-step engine stores f* and j (its ρ, u are derived: ρ = Σ_i f*_i,
u = j / ρ), the single-step one ρ, u. Solid nodes keep their values (u = 0 and j = 0 there from
:meth:`initialize` on), as in the LBM reference.
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.backend import Backend
from thelma_py.codegen.expr import dot, identity_let
from thelma_py.compute import ComputeEngine
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm import layouts
from thelma_py.modules.compute.lwacm import rule
from thelma_py.modules.compute.lwacm.curved import CurvedExchange, CurvedGhosts, quadratic_min_q
from thelma_py.modules.compute.lwacm.open_links import OpenLinks
from thelma_py.nodes import NodeTags
from thelma_py.store16 import (
    check_state_store,
    node_coordinates,
    round_trip,
    round_trip_stochastic,
)


def fused_rows(itemsize: int) -> int:
    """Rows (along y) of the 3D single-step block: 32 x 8 threads in fp32, 32 x 4 in fp64 (its
    ring of five planes of (32 + 2) x (rows + 2) records must fit the 48 KB of static shared
    memory)."""
    return 8 if itemsize <= 4 else 4


def fused_block(lattice: Lattice, rows: int = 8) -> tuple[int, int]:
    """Threads per block of the single-step kernel in the plane it marches through: 32 x rows
    (x, y) in 3D, 128 x 1 in 2D. Each warp is one 32-node row, so its tile flag is the LBM one."""
    return (32, rows) if lattice.d == 3 else (128, 1)


CHUNKS = (8, 4, 2)
"""Planes a block marches through, longest first (:func:`fused_chunk`). Measured on an H100
(benchmarks/data/*_fused_tuning.json, 256³ fp32): 8 planes beat 16 and 32 by 1.5 and 5% in the
closed cavity (more, shorter blocks even out the slower wall tiles) and lose 1% in the periodic
box."""


def fused_chunk(lattice: Lattice, shape: tuple[int, ...], sm_count: int, rows: int = 8) -> int:
    """Planes per block along the march axis (z in 3D, y in 2D): 8, or fewer where the grid
    would not give every SM eight blocks (small domains), never more than the domain has."""
    px, py = fused_block(lattice, rows)
    extent = shape[0]
    columns = -(-shape[-1] // px) * (-(-shape[1] // py) if lattice.d == 3 else 1)
    for chunk in CHUNKS:
        if columns * -(-extent // chunk) >= 8 * sm_count:
            return min(chunk, extent)
    return min(CHUNKS[-1], extent)


def fused_reads_per_node(lattice: Lattice, chunk: int, rows: int = 8) -> float:
    """(ρ, u) records a bulk block of the single-step kernel reads from global memory per node:
    (PX + 2)(PY + 2) per plane (PY + 0 in 2D), chunk + 2 planes for chunk planes of nodes."""
    px, py = fused_block(lattice, rows)
    plane = (px + 2) * (py + 2 if lattice.d == 3 else 1)
    return plane * (chunk + 2) / (px * py * chunk)


def two_step_traffic(lattice: Lattice, itemsize: int) -> int:
    """f* read (Q) and written (Q), the node's momentum j = ρ u read (D) and written (D): 176 B
    per node in fp32 D3Q19, against 152 B for LBM (86 %)."""
    return (2 * lattice.q + 2 * lattice.d) * itemsize


def two_step_memory(lattice: Lattice, itemsize: int, tag_itemsize: int) -> int:
    """Two f* buffers (streamed from one into the other), j and the tags. (ρ, u for output
    are computed when asked for, from f* and j: (1 + D) values per node more while they are
    held.)"""
    return (2 * lattice.q + lattice.d) * itemsize + tag_itemsize


DEFAULT_CHUNK = 8
"""The chunk the NumPy reference reports its traffic for (what a GPU takes for a 256³ box)."""


def fused_traffic(lattice: Lattice, itemsize: int, chunk: int = DEFAULT_CHUNK,
                  rows: int | None = None) -> int:
    """4-value (ρ, u) records: tile, halo and the planes beyond a chunk read, one record
    written (rounded to a byte)."""
    rows = fused_rows(itemsize) if rows is None else rows
    return int(round(4 * itemsize * (fused_reads_per_node(lattice, chunk, rows) + 1.0)))


def rounded_records(store: str, w, xp=np):
    """Single-step fields (ρ, u...) stacked along axis 0 as 16-bit records hold them: ρ − 1 and
    u through the format of ``store`` (:mod:`thelma_py.store16`; fp32: ``w`` itself)."""
    if store == "fp32":
        return w
    shift = xp.zeros((len(w),) + (1,) * (w.ndim - 1), dtype=np.float32)
    shift[0] = 1
    return round_trip(store, w, shift, xp)


def stochastic_records(store: str, w, coordinates, seed: int, xp=np):
    """``w`` (ρ, u... along axis 0, fp32) through 16-bit records rounded stochastically with
    the random bits of :func:`thelma_py.store16.dither_bits` for nodes at global
    ``coordinates`` (gx, gy, gz arrays of the node shape) and ``seed``."""
    shift = xp.zeros((len(w),) + (1,) * (w.ndim - 1), dtype=np.float32)
    shift[0] = 1
    return round_trip_stochastic(store, w, shift, coordinates, seed, xp)


def two_step_wall_tags(tags: NodeTags, kappa: float) -> NodeTags:
    """The tags with every boundary row's velocity scaled by 1 − κ = 2τ − 1.

    Bounce-back of f* reflects the odd part of f* = f^(e) − κ f^(e,o), so a wall at rest gives
    exactly the single-step ghost rule (ρ_g = ρ, u_g = −u). For a moving wall the ghost
    u_g = 2 u_w − u asks for the term (1 − κ) · 2 w_i ρ_w (c_i · u_w) / c_s²: Ladd's term with the
    wall velocity scaled by 1 − κ. Unscaled, the wall would move at u_w / (2τ − 1) (five times
    too fast at τ = 0.6); only at τ = 1 (κ = 0, where LW-ACM is BGK LBM) do the two coincide.
    """
    table = np.array(tags.bc_table, dtype=np.float64, copy=True)
    table[:, :3] *= 1.0 - kappa
    return attrs.evolve(tags, bc_table=table)


def fstar_array(lattice: Lattice, rho, u, kappa, xp, cubic: bool = False):
    """f* (Q, *S) of every node from ρ (S) and u (D, *S) (NumPy or CuPy arrays); ``cubic``:
    with the equilibrium's third-order part."""
    usq = sum(ua * ua for ua in u)
    return xp.stack([rule.fstar_i(lattice, i, rho, list(u), usq, kappa, cubic)
                     for i in range(lattice.q)])


def open_fields(lattice: Lattice, f, kappa) -> tuple:
    """ρ = Σ_i f*_i and u = Σ_i c_i f*_i / ((1 − κ) ρ) of every node, flat, from f* alone
    (the odd part of f* is (1 − κ) ρ u): what the two-step open links read of their mirror
    points, since a node's j is updated in place by its own thread while others run."""
    q = lattice.q
    flat = f.reshape(q, -1)
    rho = flat.sum(axis=0)
    scale = 1.0 / ((1.0 - kappa) * rho)
    u = [(lattice.c[:, a].astype(f.dtype) @ flat) * scale for a in range(lattice.d)]
    return rho, u


class TwoStepSizes:
    """Traffic and memory of the two-step scheme, for its NumPy and CUDA engines alike."""

    @property
    def traffic_bytes_per_node(self) -> int:
        return two_step_traffic(self.lattice, self.dtype.itemsize)

    @property
    def memory_bytes_per_node(self) -> int:
        return two_step_memory(self.lattice, self.dtype.itemsize, self.tags.tags.itemsize)


def macroscopic_from(f, j):
    """ρ = Σ_i f*_i and u = j / ρ from a two-step state (NumPy or CuPy arrays: the NumPy and
    CUDA engines compute them alike). Where ρ = 0 (a node never given a state), u is 0 instead
    of NaN: j is divided by 1 there."""
    rho = f.sum(axis=0)
    return rho, j / (rho + (rho == 0))


class CheckedState:
    """Loading a checkpoint: each array must be there with this run's shape and dtype (shared
    by the NumPy and CUDA LW-ACM engines)."""

    def _check(self, state: dict, key: str, shape: tuple) -> np.ndarray:
        if key not in state:
            raise ValueError(f"checkpoint has no {key!r}; an LW-ACM state holds "
                             f"{sorted(self.state())}")
        value = np.asarray(state[key])
        if value.shape != shape or value.dtype != self.dtype:
            raise ValueError(f"checkpoint holds {key} as {value.dtype}{value.shape}, this run "
                             f"needs {self.dtype}{shape}")
        return value

    SHIFTED_KEY = "rho_minus_one"
    """The state's copy of records of ρ − 1 (density='shifted'): ρ = 1 + (ρ − 1), as the
    state's ``rho`` holds it, drops the last bits of ρ − 1, so a restart from ``rho`` alone
    would not step on bit for bit."""

    def _shifted_records(self, state: dict, shifted: bool) -> np.ndarray | None:
        """The checkpoint's records of ρ − 1 where this run keeps them and the checkpoint has
        them (a run of absolute records takes ``rho``), else None."""
        if not shifted or self.SHIFTED_KEY not in state:
            return None
        return self._check(state, self.SHIFTED_KEY, self.shape)


class _NumpyBase(CurvedExchange, CheckedState, ComputeEngine):
    def __init__(self, params, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        self.params, self.lattice, self.tags, self.backend, self.dtype = (
            params, lattice, tags, backend, np.dtype(dtype))
        self.open = OpenLinks(lattice, tags, self.dtype)
        self.walls = layouts.WallLinks(lattice, self.open.tags, self.dtype)
        self.curved = CurvedGhosts(lattice, tags, self.dtype, quadratic_min_q(params))
        self.solid = np.flatnonzero(tags.solid)
        self.shape = tags.tags.shape
        self.kappa = self.dtype.type(params.kappa)
        self.force = params.force

    def _fields(self, rho, u) -> tuple[np.ndarray, np.ndarray]:
        rho = np.array(rho, dtype=self.dtype).reshape(self.shape)
        u = np.array(np.stack([np.asarray(ua) for ua in u]), dtype=self.dtype)
        if u.shape != (self.lattice.d, *self.shape):
            raise ValueError(f"u has shape {u.shape}, expected {(self.lattice.d, *self.shape)}")
        u.reshape(self.lattice.d, -1)[:, self.solid] = 0
        return rho, u

    @property
    def force_tags(self) -> NodeTags:
        """Tags for the momentum-exchange forces: wall rows scaled by 1 − κ, so Ladd's term
        there is the two-step moving-wall term (:func:`two_step_wall_tags`)."""
        return two_step_wall_tags(self.tags, self.params.kappa)

    def _keep_solid(self, new: np.ndarray, old: np.ndarray) -> None:
        if len(self.solid):
            k = new.shape[0]
            new.reshape(k, -1)[:, self.solid] = old.reshape(k, -1)[:, self.solid]


class NumpyLwacm(TwoStepSizes, _NumpyBase):
    """Two-step LW-ACM: state f* (Q, *S) and the momentum j = ρ u (D, *S). Streaming and
    bounce-back (with Ladd's term for moving walls) are the LBM ones (:func:`.layouts.stream`),
    applied to f*. ρ and u are not stored: ρ = Σ_i f*_i (f^(e,o) has no mass) and u = j / ρ."""

    def __init__(self, params, lattice, tags, backend, dtype):
        super().__init__(params, lattice, tags, backend, dtype)
        self.walls = layouts.WallLinks(lattice, two_step_wall_tags(self.open.tags, params.kappa),
                                       self.dtype)
        self.f = np.zeros((lattice.q, *self.shape), dtype=self.dtype)
        self.j = np.zeros((lattice.d, *self.shape), dtype=self.dtype)
        self.halo_fields = bool(self.open) or bool(self.curved)
        """Open and curved links read all f* of a neighbour (:func:`open_fields`): whole nodes
        travel."""

    def initialize(self, rho, u) -> None:
        rho, u = self._fields(rho, u)
        self.f = np.array(rule.fstar(self.lattice, rho, list(u), self.kappa, identity_let,
                                     self.params.cubic), dtype=self.dtype)
        self.j = np.array(rho * u, dtype=self.dtype)  # u, hence j, is 0 in solids

    def step(self, n: int = 1) -> None:
        lat = self.lattice
        for _ in range(n):
            streamed = layouts.stream(lat, self.walls, self.f)
            if self.open or self.curved:
                self._open_links(streamed)
            _, _, j, post = rule.two_step(lat, list(streamed), list(self.j), self.kappa,
                                          identity_let, self.force, self.params.les,
                                          self.params.cubic)
            f = np.array(post, dtype=self.dtype)
            j = np.array(j, dtype=self.dtype)
            self._keep_solid(f, self.f)
            self._keep_solid(j, self.j)
            self.f, self.j = f, j

    def _open_links(self, streamed: np.ndarray) -> None:
        """The pulled f*_i of the open and curved links: f*_i of the ghost record
        (:mod:`.open_links`, :mod:`.curved`)."""
        rho, u = open_fields(self.lattice, self.f, self.kappa)
        for i in range(1, self.lattice.q):
            for flat, rho_g, u_g in self.open.ghosts(i, rho, u) if i in self.open.links else ():
                usq = sum(ua * ua for ua in u_g)
                streamed[i].reshape(-1)[flat] = rule.fstar_i(self.lattice, i, rho_g, u_g, usq,
                                                              self.kappa)
            if i in self.curved.links:
                flat, rho_g, u_m, u_g = self.curved.ghosts(i, rho, u)
                streamed[i].reshape(-1)[flat] = rule.curved_fstar_i(self.lattice, i, rho_g, u_m,
                                                                    u_g, self.kappa)

    def macroscopic(self):
        """ρ = Σ_i f*_i and u = j / ρ of the current state (new arrays). Solid nodes keep their
        initial f*, so ρ > 0 there too; a node with ρ = 0 reports u = 0, not NaN."""
        return macroscopic_from(self.f, self.j)

    def canonical(self) -> np.ndarray:
        """The stored f* (Q, *S): what the momentum-exchange forces sum over wall links."""
        return self.f

    def state(self) -> dict[str, np.ndarray]:
        return {"f": self.f.copy(), "j": self.j.copy()}

    def halo_arrays(self) -> list[np.ndarray]:
        """Arrays (Q, *S) whose ghost layers a distributed run fills before each step: f*.
        A node reads f*_i(x − c_i) of its neighbours but only its own j (bounce-back too
        reads its own f*), so the populations crossing a cut are all it needs."""
        return [self.f]

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        lat = self.lattice
        f = self._check(state, "f", (lat.q, *self.shape))
        j = self._check(state, "j", (lat.d, *self.shape))
        self.f, self.j = f.copy(), j.copy()


class NumpyLwacmFused(_NumpyBase):
    """Single-step LW-ACM: state ρ, u only, stacked as w = (ρ, u_x, u_y[, u_z]), shape
    (1 + D, *S). Each step gathers the upstream w(x − c_i) (periodic wrap) and replaces it by
    :func:`.rule.wall_ghost` where the link crosses a wall."""

    halo_fields = True
    """A node reads ρ, u of every upstream neighbour: distributed runs exchange whole nodes."""

    def __init__(self, params, lattice, tags, backend, dtype):
        super().__init__(params, lattice, tags, backend, dtype)
        self.w = np.zeros((1 + lattice.d, *self.shape), dtype=self.dtype)
        self.w[0] = 1
        self._axes = tuple(range(1, 1 + lattice.d))

    @property
    def traffic_bytes_per_node(self) -> int:
        return fused_traffic(self.lattice, self.dtype.itemsize)

    @property
    def memory_bytes_per_node(self) -> int:
        return self.params.memory_bytes_per_node(self.lattice, self.dtype, self.backend)

    clock = 0
    """Steps done (the seed of stochastic rounding; checkpoints keep it)."""
    origin = (0, 0, 0)
    """Global (x, y, z) of node 0 (stochastic rounding hashes global coordinates)."""

    @property
    def store(self) -> str:
        return getattr(self.params, "store", "fp32")

    @property
    def stochastic(self) -> bool:
        return self.store != "fp32" and getattr(self.params, "rounding", "") == "stochastic"

    def _coordinates(self) -> list:
        """Global (gx, gy, gz) of every node, arrays of the node shape."""
        if getattr(self, "_grid", None) is None:
            self._grid = node_coordinates(self.shape, self.origin)
        return self._grid

    @property
    def shifted(self) -> bool:
        """Records hold ρ − 1 (:attr:`LwacmFused.density`)."""
        return getattr(self.params, "density", "absolute") == "shifted"

    def _records(self, rho, u) -> np.ndarray:
        first = np.asarray(rho, dtype=np.float64) - 1.0 if self.shifted else rho
        return rounded_records(self.store, np.concatenate([np.asarray(first)[None], u])
                               .astype(self.dtype))

    def initialize(self, rho, u) -> None:
        rho, u = self._fields(rho, u)
        self.w = self._records(rho, u)

    def upstream(self, w: np.ndarray, i: int) -> tuple:
        """(ρ(x − c_i), u(x − c_i)) with periodic wrap, wall ghosts applied."""
        shift = tuple(int(v) for v in self.lattice.c[i][::-1])
        if not any(shift):
            return w[0], list(w[1:])
        up = np.roll(w, shift, axis=self._axes)
        quad = None  # moving walls: the quadratic terms take the node's own u
        if i in self.walls.index:
            flat = self.walls.index[i]
            here = w.reshape(len(w), -1)[:, flat]
            velocity = self.walls.velocity[i]
            if velocity is None:
                rho_g, u_g = rule.wall_ghost(here[0], list(here[1:]), None)
            else:
                rho_g, u_g, u_q = rule.moving_wall_ghost(here[0], list(here[1:]),
                                                         list(velocity))
                moving = np.any(np.asarray(velocity) != 0, axis=0)
                quad = (flat, [np.where(moving, q, g) for q, g in zip(u_q, u_g, strict=True)])
            view = up.reshape(len(w), -1)
            view[0, flat] = rho_g
            for a, ua in enumerate(u_g):
                view[1 + a, flat] = ua
        if i in self.open.links:
            here = w.reshape(len(w), -1)
            view = up.reshape(len(w), -1)
            for flat, rho_g, u_g in self.open.ghosts(i, here[0], list(here[1:])):
                view[0, flat] = rho_g
                for a, ua in enumerate(u_g):
                    view[1 + a, flat] = ua
        curved = i in self.curved.links
        if quad is None and not curved:
            return up[0], list(up[1:])
        odd = np.array(dot(self.lattice.c[i], list(up[1:])), dtype=self.dtype)
        u_even = up[1:].copy()  # moving walls: the node's own u in the even part
        if quad is not None:
            for a, ua in enumerate(quad[1]):
                u_even.reshape(len(u_even), -1)[a, quad[0]] = ua
        if curved:  # the mirror record, and c_i · u_g for the odd part
            here = w.reshape(len(w), -1)
            flat, rho_g, u_m, u_g = self.curved.ghosts(i, here[0], list(here[1:]))
            up.reshape(len(w), -1)[0, flat] = rho_g
            for a, ua in enumerate(u_m):
                u_even.reshape(len(u_even), -1)[a, flat] = ua
            odd.reshape(-1)[flat] = dot(self.lattice.c[i], u_g)
        return up[0], list(u_even), odd

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            w = self.w
            rho, u = rule.single_step(self.lattice, lambda i, w=w: self.upstream(w, i),
                                      self.kappa, identity_let, self.force,
                                      self.params.les, self.shifted,
                                      self.params.cubic)
            new = np.array([rho, *u], dtype=self.dtype)
            if self.stochastic:
                new = stochastic_records(self.store, new, self._coordinates(), self.clock)
            else:
                new = rounded_records(self.store, new)
            self._keep_solid(new, w)
            self.w = new
            self.clock += 1

    def macroscopic(self):
        return (self.w[0] + self.dtype.type(1) if self.shifted else self.w[0]), self.w[1:]

    def canonical(self) -> np.ndarray:
        """f* = f^(e) − κ f^(e,o) (Q, *S) of the records: the populations each node sends to
        its neighbours (the momentum-exchange forces sum them over the wall links)."""
        rho, u = self.macroscopic()
        return fstar_array(self.lattice, rho, u, self.kappa, np,
                           self.params.cubic)

    def halo_arrays(self) -> list[np.ndarray]:
        """The records (1 + D, *S) whose ghost layers a distributed run fills before each step
        (every component: :attr:`halo_fields`)."""
        return [self.w]

    def state(self) -> dict[str, np.ndarray]:
        state = {"rho": np.array(self.macroscopic()[0]), "u": self.w[1:].copy()}
        if self.shifted:
            state[self.SHIFTED_KEY] = self.w[0].copy()
        if self.store == "fp32":
            return state
        return {**state, "store": np.array(self.store), "clock": np.array(self.clock)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        lat = self.lattice
        rho = self._check(state, "rho", self.shape)
        u = self._check(state, "u", (lat.d, *self.shape))
        check_state_store(state, self.store)
        self.w = self._records(rho, u)
        shifted = self._shifted_records(state, self.shifted)
        if shifted is not None:
            self.w[0] = shifted
        self.clock = int(state.get("clock", 0))

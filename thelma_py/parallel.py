"""Distributed runs: Cartesian decomposition, ghost layers and halo exchange over MPI.

Each rank owns a sub-box of the global lattice and runs an ordinary compute engine on that box
grown by one ghost layer along every decomposed axis. The ghost tags come from the global
geometry like any others, so only the populations need exchanging: before each step, and for
one axis after the other, every rank sends the populations that cross each face (c_a = +1 to
its + neighbour, c_a = −1 to its − neighbour). Sending whole slabs of the grown box axis after
axis also fills the edge and corner ghosts. Inner nodes then stream and collide exactly as in a
single-domain run, element for element, so the results are bit-identical.

mpi4py is imported only when a run is started under an MPI launcher (or given a communicator).
"""

from __future__ import annotations

import contextvars
import itertools
import math
import os
from collections.abc import Sequence

import attrs
import numpy as np

from thelma_py.compute import ComputeEngine

LAUNCHER_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")

requested_decomposition: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "requested_decomposition", default=None)
"""Decomposition asked for on the command line (``thelma run --decomp``); a Solver built while
it is set, with no decomposition of its own, uses it."""


def parse_dims(text: str, dim: int) -> tuple[int, ...]:
    """'1x1x4' -> (1, 1, 4) (ranks along x, y, z)."""
    try:
        dims = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        dims = ()
    if len(dims) != dim or min(dims, default=0) < 1:
        raise ValueError(f"decomposition {text!r} must be {dim} positive counts like "
                         f"{'x'.join(['1'] * (dim - 1) + ['2'])}")
    return dims


def choose_dims(shape: Sequence[int], ranks: int) -> tuple[int, ...]:
    """Ranks per axis (x, y[, z]) that minimise the total area of the cuts between sub-boxes.

    Among equal areas, cutting the slowest axis (z, then y) is preferred: its slabs are
    contiguous in memory.

    >>> choose_dims((256, 256, 256), 4), choose_dims((512, 64), 4)
    ((1, 2, 2), (4, 1))
    """
    best = None
    for dims in itertools.product(*(range(1, ranks + 1) for _ in shape)):
        if math.prod(dims) != ranks or any(d > n for d, n in zip(dims, shape, strict=True)):
            continue
        total = math.prod(shape)
        area = sum((d - 1) * total // n for d, n in zip(dims, shape, strict=True))
        key = (area, tuple(-d for d in reversed(dims)))
        if best is None or key < best[0]:
            best = (key, dims)
    if best is None:
        raise ValueError(f"{ranks} ranks cannot split a domain of {tuple(shape)} nodes")
    return best[1]


@attrs.frozen
class Decomposition:
    """Balanced split of ``shape`` (x, y[, z]) into ``dims`` sub-boxes per axis."""

    shape: tuple[int, ...] = attrs.field(converter=tuple)
    dims: tuple[int, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self):
        if len(self.dims) != len(self.shape):
            raise ValueError(f"decomposition {self.dims} does not match a {len(self.shape)}D "
                             "domain")
        for d, n in zip(self.dims, self.shape, strict=True):
            if d > n:
                raise ValueError(f"cannot split {n} nodes into {d} parts (decomposition "
                                 f"{'x'.join(map(str, self.dims))} of {self.shape})")

    @property
    def ranks(self) -> int:
        return math.prod(self.dims)

    def extent(self, axis: int, index: int) -> tuple[int, int]:
        """(first node, node count) of part ``index`` along ``axis``."""
        n, parts = self.shape[axis], self.dims[axis]
        start = index * n // parts
        return start, (index + 1) * n // parts - start

    def sub_box(self, coords: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(lower, shape) of the sub-box at Cartesian coordinates ``coords``."""
        parts = [self.extent(a, c) for a, c in enumerate(coords)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)

    def all_coords(self):
        return itertools.product(*(range(d) for d in self.dims))


def launched_by_mpi() -> bool:
    """True when an MPI launcher started this process (mpiexec, mpirun, srun with PMI)."""
    return any(v in os.environ for v in LAUNCHER_VARIABLES)


def world():
    """MPI.COMM_WORLD, importing mpi4py (which initialises MPI)."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError("distributed runs need mpi4py and an MPI library: "
                           "pip install 'thelma-py[mpi]'") from error
    return MPI.COMM_WORLD


def allreduce(comm, values: np.ndarray, op: str) -> np.ndarray:
    """float64 ``values`` reduced element-wise over ``comm`` ('sum' or 'max'), on every rank."""
    from mpi4py import MPI

    values = np.ascontiguousarray(values, dtype=np.float64)
    result = np.empty_like(values)
    comm.Allreduce(values, result, op={"sum": MPI.SUM, "max": MPI.MAX}[op])
    return result


@attrs.define
class RankBox:
    """This rank's place in the decomposition: Cartesian communicator, sub-box, ghost box."""

    decomposition: Decomposition
    cart: object
    coords: tuple[int, ...]
    lower: tuple[int, ...]
    shape: tuple[int, ...]
    ghost: tuple[bool, ...]
    """Per axis (x, y[, z]): does this box carry ghost layers (the axis is decomposed)?"""

    @classmethod
    def create(cls, comm, global_shape, periodic, dims=None) -> RankBox:
        dims = tuple(dims) if dims is not None else choose_dims(global_shape, comm.size)
        decomposition = Decomposition(global_shape, dims)
        if decomposition.ranks != comm.size:
            raise ValueError(f"decomposition {'x'.join(map(str, dims))} needs "
                             f"{decomposition.ranks} ranks, the run has {comm.size}")
        # mpi4py orders Cartesian dimensions like C arrays; we keep (x, y, z) order throughout
        cart = comm.Create_cart(list(dims), periods=[bool(p) for p in periodic], reorder=False)
        coords = tuple(cart.Get_coords(cart.rank))
        lower, shape = decomposition.sub_box(coords)
        return cls(decomposition, cart, coords, lower, shape, tuple(d > 1 for d in dims))

    @property
    def grown_lower(self) -> tuple[int, ...]:
        return tuple(lo - g for lo, g in zip(self.lower, self.ghost, strict=True))

    @property
    def grown_shape(self) -> tuple[int, ...]:
        return tuple(n + 2 * g for n, g in zip(self.shape, self.ghost, strict=True))

    def piece(self, coords: Sequence[int] | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(lower, shape) of a rank's output piece: its sub-box plus the first node of its +
        neighbour on decomposed axes (not beyond the last node), so pieces join without gaps."""
        coords = self.coords if coords is None else tuple(coords)
        lower, shape = self.decomposition.sub_box(coords)
        dims = self.decomposition.dims
        return lower, tuple(n + (1 if c < d - 1 else 0)
                            for n, c, d in zip(shape, coords, dims, strict=True))

    def piece_index(self) -> tuple[slice, ...]:
        """Index of this rank's piece inside a grown node array (array axes: z, y, x)."""
        _, shape = self.piece()
        return tuple(slice(1, 1 + n) if g else slice(None)
                     for g, n in zip(reversed(self.ghost), reversed(shape), strict=True))

    @property
    def inner(self) -> tuple[slice, ...]:
        """Index of the owned nodes inside a grown node array (array axes: z, y, x)."""
        return tuple(slice(1, -1) if g else slice(None) for g in reversed(self.ghost))


class HaloExchange:
    """Fills the ghost layers of population arrays (Q, *S_grown) from the neighbour ranks."""

    def __init__(self, lattice, box: RankBox):
        self.box = box
        self.plans = []
        d = lattice.d
        for axis in range(d):
            if not box.ghost[axis]:
                continue
            array_axis = 1 + (d - 1 - axis)
            source, dest = box.cart.Shift(axis, 1)
            up = np.flatnonzero(lattice.c[:, axis] == 1)
            down = np.flatnonzero(lattice.c[:, axis] == -1)
            self.plans.append((array_axis, source, dest, up, down))

    @staticmethod
    def _layer(array, array_axis: int, index: int, populations):
        view = np.take(array, populations, axis=0)
        return np.ascontiguousarray(np.take(view, [index], axis=array_axis))

    def exchange(self, f: np.ndarray) -> None:
        cart = self.box.cart
        for array_axis, source, dest, up, down in self.plans:
            # c_a = +1 populations leave through the + face: my last owned layer becomes the
            # − ghost of my + neighbour; c_a = −1 ones go the other way.
            for populations, send_index, recv_index, to, frm in (
                    (up, -2, 0, dest, source), (down, 1, -1, source, dest)):
                sent = self._layer(f, array_axis, send_index, populations)
                received = np.empty_like(sent)
                cart.Sendrecv(sent, dest=to, recvbuf=received, source=frm)
                if frm >= 0:  # MPI.PROC_NULL beyond a non-periodic edge: nothing arrives
                    index = [slice(None)] * f.ndim
                    index[array_axis] = slice(recv_index, recv_index + 1 or None)
                    target = f[tuple(index)]
                    target[populations] = received


class DistributedEngine(ComputeEngine):
    """A compute engine on this rank's grown box, seen from outside as the owned box only."""

    def __init__(self, engine: ComputeEngine, box: RankBox):
        if not hasattr(engine, "halo_arrays"):
            raise ValueError(f"{type(engine).__name__} cannot run distributed yet (it offers no "
                             "halo_arrays()); use the NumPy LBM engine")
        self.engine, self.box = engine, box
        self.lattice, self.backend, self.dtype = engine.lattice, engine.backend, engine.dtype
        self.exchange = HaloExchange(engine.lattice, box)

    @property
    def tags(self):
        return self.engine.tags

    def _grow(self, array, components: bool):
        pad = [(0, 0)] * components + [(int(g), int(g)) for g in reversed(self.box.ghost)]
        return np.pad(array, pad, mode="edge")

    def initialize(self, rho, u) -> None:
        self.engine.initialize(self._grow(np.asarray(rho), False),
                               self._grow(np.asarray(u), True))

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            for array in self.engine.halo_arrays():
                self.exchange.exchange(array)
            self.engine.step(1)

    def macroscopic(self):
        rho, u = self.engine.macroscopic()
        return rho[self.box.inner], u[(slice(None), *self.box.inner)]

    def piece_fields(self):
        """(ρ, u, kind) on this rank's output piece (:meth:`RankBox.piece`): the ghost layers
        are refreshed first, so the overlap holds the neighbour's current values."""
        for array in self.engine.halo_arrays():
            self.exchange.exchange(array)
        rho, u = self.engine.macroscopic()
        index = self.box.piece_index()
        return rho[index], u[(slice(None), *index)], self.engine.tags.kind[index]

    def state(self) -> dict[str, np.ndarray]:
        return {key: value[(slice(None), *self.box.inner)] if value.ndim > len(self.box.ghost)
                else value[self.box.inner] for key, value in self.engine.state().items()}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        self.engine.load_state({key: self._grow(value, value.ndim > len(self.box.ghost))
                                for key, value in state.items()})

    @property
    def traffic_bytes_per_node(self) -> int:
        return self.engine.traffic_bytes_per_node

    @property
    def memory_bytes_per_node(self) -> int:
        return self.engine.memory_bytes_per_node

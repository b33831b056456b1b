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

import contextlib
import contextvars
import itertools
import math
import os
import platform
import warnings
from collections.abc import Sequence

import attrs
import numpy as np

from thelma_py.compute import (
    ComputeEngine,
    ComputePlugin,
    DistributableEngine,
    OverlappingEngine,
)
from thelma_py.domain import Domain
from thelma_py.memory import check_fits
from thelma_py.nodes import NodeTags

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


def choose_dims(shape: Sequence[int], ranks: int, gpu: bool = False) -> tuple[int, ...]:
    """Ranks per axis (x, y[, z]) that minimise the total area of the cuts between sub-boxes.

    Among equal areas, cutting the slowest axis (z, then y) is preferred: its slabs are
    contiguous in memory. With ``gpu``, one axis is cut, the slowest that has a node per rank
    (GPU ranks exchange whole planes: contiguous along z, packed rows along y; x, the contiguous
    axis, would need a strided halo, see :func:`check_gpu_box`).

    >>> choose_dims((256, 256, 256), 4), choose_dims((512, 64), 4)
    ((1, 2, 2), (4, 1))
    >>> choose_dims((256, 256, 256), 4, gpu=True), choose_dims((64, 2, 3), 2, gpu=True)
    ((1, 1, 4), (1, 1, 2))
    """
    if gpu:
        for axis in reversed(range(1, len(shape))):
            if shape[axis] >= ranks:
                return tuple(ranks if a == axis else 1 for a in range(len(shape)))
        raise ValueError(f"{ranks} GPU ranks cannot split a domain of {tuple(shape)} nodes: "
                         "GPU runs cut the z or y axis, which need at least one node per rank")
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
    def create(cls, comm, global_shape, periodic, dims=None, gpu: bool = False) -> RankBox:
        """``dims`` None: :func:`choose_dims` (its GPU rule with ``gpu``)."""
        dims = tuple(dims) if dims is not None else choose_dims(global_shape, comm.size, gpu)
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


@attrs.frozen
class HaloTransfer:
    """One message of a halo exchange: the populations that cross one face of the box, sent
    from one layer of the grown box to a neighbour rank while the matching layer arrives from
    the opposite neighbour. Layers are indices along ``array_axis`` of a (Q, *S_grown) array
    (negative: from the end); a rank below 0 (MPI.PROC_NULL) is none."""

    axis: int
    """Lattice axis (0 = x) normal to the face."""
    array_axis: int
    populations: tuple[int, ...]
    send_layer: int
    recv_layer: int
    to: int
    frm: int

    def index(self, layer: int) -> tuple:
        """Index of ``layer`` of these populations (all components if none are named) in a
        (Q, *S) array, axes kept."""
        index = [slice(None)] * (self.array_axis + 1)
        index[0] = list(self.populations) if self.populations else slice(None)
        index[self.array_axis] = slice(layer, layer + 1 or None)
        return tuple(index)


def halo_plan(lattice, box: RankBox, fields: bool = False) -> tuple[HaloTransfer, ...]:
    """The exchange that refreshes the ghost layers before a pull step, axis after axis.

    c_a = +1 populations leave through the + face: the last owned layer (−2) becomes the −
    ghost (0) of the + neighbour; c_a = −1 ones go the other way (layer 1 to layer −1). Whole
    layers of the grown box travel, so on the second cut axis the edge ghosts come along.
    Both transports (:class:`HaloExchange`, :class:`NcclHaloExchange`) follow this plan, in
    this order. With ``fields``, every component moves both ways: ρ, u for output, or the
    state of a scheme that reads whole upstream nodes (the single-step LW-ACM records). Arrays
    are (K, *S) or (K, *S, R): trailing record axes travel with their node."""
    plan = []
    d = lattice.d
    for axis in range(d):
        if not box.ghost[axis]:
            continue
        source, dest = box.cart.Shift(axis, 1)
        for sign, send, recv, to, frm in ((1, -2, 0, dest, source), (-1, 1, -1, source, dest)):
            populations = () if fields else tuple(
                int(i) for i in np.flatnonzero(lattice.c[:, axis] == sign))
            plan.append(HaloTransfer(axis, 1 + (d - 1 - axis), populations, send, recv,
                                     int(to), int(frm)))
    return tuple(plan)


def halo_bytes(lattice, face_nodes: int, itemsize: int) -> int:
    """Bytes one rank sends and receives through one cut face per step: the populations
    crossing it (c_a = ±1) times the face nodes times sizeof(real), both directions."""
    crossing = int(np.count_nonzero(lattice.c[:, -1] == 1))
    return 2 * crossing * face_nodes * itemsize


class HaloExchange:
    """Fills the ghost layers of population arrays (Q, *S_grown) from the neighbour ranks over
    MPI (mpi4py Sendrecv of host buffers). NumPy arrays go as they are; CuPy arrays are staged
    through the host on the given stream (the fallback where NCCL cannot run, e.g. two ranks
    sharing one GPU)."""

    name = "mpi"

    def __init__(self, lattice, box: RankBox, fields: bool = False):
        self.box = box
        self.plan = halo_plan(lattice, box, fields)

    def exchange(self, f, stream=None) -> None:
        from thelma_py.backend import array_module

        xp = array_module(f)
        if xp is np:
            self._exchange(f, np.ascontiguousarray, np.asarray)
            return
        with stream if stream is not None else contextlib.nullcontext():
            self._exchange(f, lambda a: xp.ascontiguousarray(a).get(), xp.asarray)

    def _exchange(self, f, to_host, to_array) -> None:
        cart = self.box.cart
        for t in self.plan:
            sent = to_host(f[t.index(t.send_layer)])
            received = np.empty_like(sent)
            cart.Sendrecv(sent, dest=t.to, recvbuf=received, source=t.frm)
            if t.frm >= 0:  # MPI.PROC_NULL beyond a non-periodic edge: nothing arrives
                f[t.index(t.recv_layer)] = to_array(received)

    def close(self) -> None:
        """Nothing to release (the NCCL transport frees its communicator)."""


class NcclHaloExchange:
    """The :func:`halo_plan` between GPUs with NCCL (``cupy.cuda.nccl``), one rank per GPU.

    Per step one NCCL group of send/recv pairs on the caller's stream. On a z cut every
    population's layer of the (Q, Nz, Ny, Nx) array is contiguous, and so is a field layer of
    (1, Nz, Ny, Nx, R) records: it is sent and received in place. Other layers (y cuts) are
    packed into a staging buffer and unpacked after."""

    name = "nccl"

    def __init__(self, lattice, box: RankBox, fields: bool = False):
        import cupy
        from cupy.cuda import nccl

        self.cp, self.nccl, self.box = cupy, nccl, box
        self.plan = halo_plan(lattice, box, fields)
        cart = box.cart
        uid, error = None, ""
        if cart.rank == 0:
            try:
                uid = nccl.get_unique_id()
            except Exception as exc:  # report on every rank, not only rank 0
                error = f"{type(exc).__name__}: {exc}"
        uid, error = cart.bcast((uid, error), root=0)
        if error:
            raise RuntimeError(f"NCCL: ncclGetUniqueId failed on rank 0 ({error}). "
                               f"{nccl_diagnostics()}")
        try:
            self.comm = nccl.NcclCommunicator(cart.size, uid, cart.rank)
        except Exception as exc:
            raise RuntimeError(f"NCCL: ncclCommInitRank failed on rank {cart.rank} of "
                               f"{cart.size} ({type(exc).__name__}: {exc}). "
                               f"{nccl_diagnostics()}") from exc
        self._ops: dict[tuple, list] = {}

    def _operations(self, f) -> list:
        """('send' or 'recv', layer, peer) per message for the buffer ``f``, in plan order; a
        strided layer comes as (layer, staging buffer). Cached by address: an engine exchanges
        its two buffers in turn."""
        key = (f.data.ptr, f.shape, f.dtype.str)
        if key not in self._ops:
            ops = []
            for t in self.plan:
                # one message per population, or one per field layer (every component)
                for p in t.populations or (slice(None),):
                    send = f[(p, *t.index(t.send_layer)[1:])]
                    recv = f[(p, *t.index(t.recv_layer)[1:])]
                    if not send.flags.c_contiguous:
                        send, recv = ((send, self.cp.empty(send.shape, f.dtype)),
                                      (recv, self.cp.empty(recv.shape, f.dtype)))
                    if t.to >= 0:
                        ops.append(("send", send, t.to))
                    if t.frm >= 0:
                        ops.append(("recv", recv, t.frm))
            self._ops[key] = ops
        return self._ops[key]

    def exchange(self, f, stream=None) -> None:
        cp, nccl = self.cp, self.nccl
        stream = stream if stream is not None else cp.cuda.get_current_stream()
        ops = self._operations(f)
        # 16-bit populations (thelma_py.store16) travel as the stored words: no arithmetic
        kind = {2: nccl.NCCL_FLOAT16, 4: nccl.NCCL_FLOAT32, 8: nccl.NCCL_FLOAT64}[f.dtype.itemsize]
        with stream:
            for op, buffer, _ in ops:  # pack strided layers (y cuts)
                if op == "send" and isinstance(buffer, tuple):
                    buffer[1][...] = buffer[0]
            nccl.groupStart()
            try:
                for op, buffer, peer in ops:
                    array = buffer[1] if isinstance(buffer, tuple) else buffer
                    call = self.comm.send if op == "send" else self.comm.recv
                    call(array.data.ptr, array.size, kind, peer, stream.ptr)
            finally:
                nccl.groupEnd()
            for op, buffer, _ in ops:  # unpack
                if op == "recv" and isinstance(buffer, tuple):
                    buffer[0][...] = buffer[1]

    def close(self) -> None:
        """Free the NCCL communicator; every rank calls it at the same point of the run."""
        self.cp.cuda.Device().synchronize()
        self.comm.destroy()
        self._ops.clear()


def nccl_swap(communicator, send, recv, peer: int, stream) -> None:
    """One NCCL group on ``stream``: float32 ``send`` to ``peer``, ``recv`` from it (a link
    test; the halo exchange groups its own messages)."""
    from cupy.cuda import nccl

    nccl.groupStart()
    try:
        communicator.send(send.data.ptr, send.size, nccl.NCCL_FLOAT32, peer, stream.ptr)
        communicator.recv(recv.data.ptr, recv.size, nccl.NCCL_FLOAT32, peer, stream.ptr)
    finally:
        nccl.groupEnd()


def nccl_diagnostics() -> str:
    """What to check when NCCL does not start: versions, devices, the relevant variables."""
    lines = []
    try:
        import cupy
        from cupy.cuda import nccl

        lines.append(f"NCCL {nccl.get_version()}, CuPy {cupy.__version__}, "
                     f"{cupy.cuda.runtime.getDeviceCount()} visible device(s), this rank on "
                     f"device {cupy.cuda.Device().id}")
    except Exception as exc:
        lines.append(f"cupy.cuda.nccl unusable: {type(exc).__name__}: {exc} (install the NCCL "
                     "wheel of your CUDA version, e.g. nvidia-nccl-cu13)")
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")
           or k == "CUDA_VISIBLE_DEVICES"}
    lines.append(f"environment: {env or 'no NCCL_* variables'}")
    lines.append("rerun with NCCL_DEBUG=INFO for NCCL's own log; THELMA_HALO=mpi exchanges "
                 "through the host instead")
    return "; ".join(lines)


HALO_TRANSPORTS = ("auto", "nccl", "mpi")


def gpu_exchange(lattice, box: RankBox, device: int, fields: bool = False):
    """The halo transport for CuPy ranks: NCCL when every rank has a GPU of its own, else
    (ranks sharing a GPU, which NCCL refuses) MPI through the host. ``THELMA_HALO`` = nccl or
    mpi forces one. ``fields``: the :func:`halo_plan` of whole nodes."""
    choice = os.environ.get("THELMA_HALO", "auto").lower()
    if choice not in HALO_TRANSPORTS:
        raise ValueError(f"THELMA_HALO={choice!r}; valid: {', '.join(HALO_TRANSPORTS)}")
    places = box.cart.allgather((platform.node(), device))
    shared = len(set(places)) < len(places)
    if choice == "mpi" or (choice == "auto" and shared):
        if shared and box.cart.rank == 0:
            warnings.warn(f"{len(places)} ranks share {len(set(places))} GPU(s): halos go "
                          "through the host over MPI (NCCL needs one GPU per rank)",
                          stacklevel=2)
        return HaloExchange(lattice, box, fields)
    if shared:
        raise RuntimeError(f"THELMA_HALO=nccl but ranks share GPUs ({places}); NCCL needs "
                           "one GPU per rank: start at most one rank per GPU")
    return NcclHaloExchange(lattice, box, fields)


def check_gpu_box(box: RankBox, lattice) -> str:
    """Refuse a decomposition GPU engines cannot run; else 'planes' (a z cut in 3D) or 'rows'.

    GPU ranks cut exactly one axis, z or y: x is the contiguous axis (its halo layers would be
    one element per row), and the launches over part of the planes or rows cover one axis."""
    cut = [a for a, g in enumerate(box.ghost) if g]
    d = lattice.d
    if len(cut) != 1 or cut[0] == 0:
        dims = "x".join(map(str, box.decomposition.dims))
        raise ValueError(
            f"decomposition {dims}: GPU ranks cut exactly one axis, z or y (x is the "
            f"contiguous axis: its halo layers are strided); use e.g. "
            f"{'x'.join(['1'] * (d - 1) + [str(box.decomposition.ranks)])} or leave the "
            "choice to thelma (--decomp omitted)")
    return "planes" if (d == 3 and cut[0] == 2) else "rows"


def select_device(comm) -> int:
    """Make GPU (local rank mod device count) current for this rank, before any allocation.

    The local rank is this process's index among the ranks of its host
    (MPI COMM_TYPE_SHARED); several ranks share a GPU when there are more ranks than GPUs."""
    import cupy
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    rank = local.rank
    local.Free()
    device = rank % cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(device).use()
    return device


def _into_grown(k, inner: slice, grown: int):
    """An index along one axis of the owned box (an int, an index array or a slice) as the
    same nodes' index into the grown arrays, whose owned part is ``inner``."""
    start, stop, _ = inner.indices(grown)
    if not isinstance(k, slice):
        return k + start
    lo, hi, step = k.indices(stop - start)
    return slice(lo + start, None if hi + start < 0 else hi + start, step)


class DistributedEngine(ComputeEngine):
    """A compute engine on this rank's grown box, seen from outside as the owned box only.

    The engine is a :class:`~thelma_py.compute.DistributableEngine`: its ``halo_arrays()``
    are the arrays whose ghost layers the exchange fills before each step. They hold
    populations (Q, *S), of which only those crossing a face travel, unless the engine sets
    ``halo_fields = True``: then every component of whole nodes travels (the single-step
    LW-ACM reads ρ, u of its upstream neighbours)."""

    def __init__(self, engine: ComputeEngine, box: RankBox, device: int | None = None):
        """``device``: this rank's GPU (:func:`select_device`) for an engine on the GPU."""
        if not isinstance(engine, DistributableEngine):
            raise ValueError(f"{type(engine).__name__} cannot run distributed yet (it offers no "
                             "halo_arrays()); use the LBM or LW-ACM engines (NumPy or CUDA)")
        self.engine, self.box = engine, box
        self.lattice, self.backend, self.dtype = engine.lattice, engine.backend, engine.dtype
        self.fields = bool(engine.halo_fields)
        """The halo arrays hold whole nodes (every ghost value is exact after an exchange)."""
        if engine.backend.is_gpu:
            engine.distribute(box)  # refuses what it cannot run exactly, before NCCL starts
            self.exchange = gpu_exchange(engine.lattice, box, device or 0, self.fields)
        else:
            self.exchange = HaloExchange(engine.lattice, box, self.fields)
            if hasattr(engine, "origin"):  # stochastic rounding hashes global coordinates
                engine.origin = (*box.grown_lower, 0, 0)[:3]
        self.overlap = True
        """GPU ranks: update the interior while the halos travel (False: exchange, then
        update; the benchmark times the exchange so). Engines without ``step_distributed``
        (LW-ACM) always exchange, then update."""

    @property
    def tags(self):
        return self.engine.tags

    def _grow(self, array, components: bool):
        from thelma_py.backend import array_module

        pad = [(0, 0)] * components + [(int(g), int(g)) for g in reversed(self.box.ghost)]
        return array_module(array).pad(array, pad, mode="edge")

    def initialize(self, rho, u) -> None:
        self.engine.initialize(self._grow(rho, False), self._grow(u, True))

    def step(self, n: int = 1) -> None:
        if isinstance(self.engine, OverlappingEngine):
            self.engine.step_distributed(n, self.exchange, overlap=self.overlap)
            return
        for _ in range(n):
            for array in self.engine.halo_arrays():
                self.exchange.exchange(array)
            self.engine.step(1)

    def macroscopic(self):
        rho, u = self.engine.macroscopic()
        return rho[self.box.inner], u[(slice(None), *self.box.inner)]

    def macroscopic_at(self, index: tuple):
        """ρ and u at ``index`` into the owned box (the probes' points, a profile's line), from
        the engine's own ``macroscopic_at`` at the same nodes of the grown box where it has one
        (16-bit LBM: those nodes' codes alone, not the rank's whole state)."""
        at = getattr(self.engine, "macroscopic_at", None)
        if at is None:
            rho, u = self.macroscopic()
            return rho[index], u[(slice(None), *index)]
        grown = self.engine.tags.tags.shape
        return at(tuple(_into_grown(k, s, n)
                        for k, s, n in zip(index, self.box.inner, grown, strict=True)))

    def refresh_ghosts(self) -> None:
        """Exchange the ghost layers of the current state now (collective), as the next step
        would: the crossing populations there then hold the neighbours' current values."""
        for array in self.engine.halo_arrays():
            self.exchange.exchange(array)

    def piece_fields(self):
        """(ρ, u, kind) on this rank's output piece (:meth:`RankBox.piece`): the ghost layers
        are refreshed first, so the overlap holds the neighbour's current values."""
        self.refresh_ghosts()
        rho, u = self.engine.macroscopic()
        # ghost ρ, u are exact only where the state is whole nodes; elsewhere GPU ranks never
        # update ghost layers and CPU ranks update them from partly exchanged populations
        if not self.fields:
            fields = HaloExchange(self.lattice, self.box, fields=True)
            fields.exchange(rho[None])
            fields.exchange(u)
        index = self.box.piece_index()
        return rho[index], u[(slice(None), *index)], self.engine.tags.kind[index]

    def state(self) -> dict[str, np.ndarray]:
        """The engine's state on the owned box (fields of fewer axes, e.g. a layout name, as
        they are)."""
        d = len(self.box.ghost)
        return {key: value[(slice(None),) * (value.ndim - d) + self.box.inner]
                if value.ndim >= d else value for key, value in self.engine.state().items()}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        d = len(self.box.ghost)
        self.engine.load_state({key: self._grow(value, value.ndim > d) if value.ndim >= d
                                else value for key, value in state.items()})

    @property
    def traffic_bytes_per_node(self) -> int:
        return self.engine.traffic_bytes_per_node

    @property
    def memory_bytes_per_node(self) -> int:
        return self.engine.memory_bytes_per_node


def build_rank(comm, geometry: Domain, lattice, compute: ComputePlugin, backend, dtype,
               dims: str | Sequence[int] | None) -> tuple[RankBox, NodeTags, DistributedEngine]:
    """This rank's sub-box, the tags of its owned nodes and its engine on the grown box.

    On a GPU, the rank's device (local rank mod device count) is made current first, before
    any allocation. ``dims``: ranks per axis ('1x1x4' or a tuple), None to choose them."""
    device = select_device(comm) if backend.is_gpu else None
    if isinstance(dims, str):
        dims = parse_dims(dims, geometry.dim)
    box = RankBox.create(comm, geometry.shape, geometry.periodic, dims, gpu=backend.is_gpu)
    check_fits(lattice, box.grown_shape, compute, backend, dtype)  # this rank's part
    tags = geometry.evaluate(lattice, box.lower, box.shape)
    grown = geometry.evaluate(lattice, box.grown_lower, box.grown_shape, ghost=True)
    local = compute.create(lattice, grown, backend, dtype)
    return box, tags, DistributedEngine(local, box, device)

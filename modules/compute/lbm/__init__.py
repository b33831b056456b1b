"""Lattice Boltzmann compute plug-in: collision models from a table (:mod:`.collisions`),
halfway bounce-back walls (Ladd's correction for moving walls), open boundaries, periodic axes,
uniform body force (Guo forcing).

The NumPy engine here is the reference; :mod:`.cuda` generates kernels from the same collision
code (:mod:`.collision`) for the GPU.
"""

from __future__ import annotations

import itertools
import warnings

import attrs
import numpy as np

from thelma_py.backend import Backend
from thelma_py.codegen.cuda import narrow_fits
from thelma_py.codegen.expr import identity_let
from thelma_py.compute import ComputeEngine, check_memory, node_blocks
from thelma_py.compute_params import check_nu, force_tuple
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.boundaries import instability, refusal
from thelma_py.modules.compute.lbm.collision import (
    CollisionModel,
    Relaxation,
    collide,
    collision_model,
)
from thelma_py.modules.compute.lbm.interpolated import CurvedLinks
from thelma_py.modules.compute.lbm.kernels import CUDA_OPTIONS
from thelma_py.modules.compute.lbm.layouts import WallLinks
from thelma_py.modules.compute.lbm.open_nodes import OpenNodes
from thelma_py.modules.compute.lbm.sparse import STORAGES
from thelma_py.modules.compute.lbm.sparse_engines import create_sparse
from thelma_py.nodes import NodeTags
from thelma_py.registry import register
from thelma_py.store16 import (
    ROUNDINGS,
    STORES,
    bytes_per_value,
    check_state_store,
    from_codes,
    node_coordinates,
    round_trip,
    round_trip_stochastic,
    to_codes,
    weights,
)
from thelma_py.subgrid import Smagorinsky, subgrid_model
from thelma_py.tags import TagLayout
from thelma_py.units import RelaxationTime

STREAMING = ("pull", "push", "aa")
MAX_TAU = 50.0
"""Above this relaxation time the scheme is inaccurate: :meth:`Lbm.check` refuses it when the
engine is built, after the solver has checked that the domain fits in memory (a domain too
large for the machine is the first thing to hear about)."""


def _check_cuda_options(instance, attribute, value):
    unknown = set(value) - set(CUDA_OPTIONS)
    if unknown:
        raise ValueError(f"unknown cuda_options {sorted(unknown)}; valid: {CUDA_OPTIONS}")
    block = value.get("block", 128)
    if block is not None and not (isinstance(block, int) and 32 <= block <= 1024
                                  and block % 32 == 0):
        raise ValueError(f"cuda_options block must be a multiple of 32 in 32..1024, got {block!r}")


@register("compute", "lbm")
@attrs.frozen(kw_only=True)
class Lbm(RelaxationTime):
    """Lattice Boltzmann: collision model from a table, streaming pull|push|aa; lattice units."""

    nu: float = attrs.field(validator=check_nu)
    """Kinematic viscosity [lattice units]; τ = 3ν + ½."""
    collision: CollisionModel = attrs.field(default="bgk", converter=collision_model)
    """Collision model: a name from the table (:mod:`.collisions`; default parameters) or an
    instance with its parameters, e.g. ``Trt(magic=1/4)``, ``Mrt(rates={"e": 1.1})``."""
    les: Smagorinsky | None = attrs.field(default=None, converter=subgrid_model)
    """Subgrid model for large-eddy simulation: None (default), "smagorinsky",
    ``{"name": "smagorinsky", "c_s": 0.1}`` or an instance. Each node relaxes with its own τ
    from its non-equilibrium momentum flux (:func:`.collision.collide`): no extra memory."""
    force: tuple | None = attrs.field(default=None, converter=force_tuple)
    """Uniform body acceleration (g_x, g_y[, g_z]) in lattice units."""
    streaming: str = attrs.field(default="pull", validator=attrs.validators.in_(STREAMING))
    """GPU memory scheme: two buffers (pull, push) or one (aa); the NumPy reference pulls."""
    storage: str = attrs.field(default="dense", validator=attrs.validators.in_(STORAGES))
    """Node storage: 'dense' (the whole box) or 'sparse' (non-solid nodes only, indirect
    addressing through a neighbour table: see :mod:`.sparse`; pull streaming only)."""
    store: str = attrs.field(default="fp32", validator=attrs.validators.in_(STORES))
    """Population storage: 'fp32' (the arithmetic type), or 16 bits of f_i − w_i with fp32
    arithmetic: 'fp16s' (IEEE half) or 'fp16c' (4 exponent, 11 mantissa bits; more accurate,
    see :mod:`thelma_py.store16`); dense or sparse. The NumPy reference rounds through the
    same format after each step."""
    rounding: str = attrs.field(default="nearest", validator=attrs.validators.in_(ROUNDINGS))
    """16-bit storage: round each stored population to nearest ('nearest'), or up with the
    probability of the fraction of a storage step ('stochastic'; random bits hashed from the
    node's global coordinates and the step count, :func:`thelma_py.store16.dither_bits`), so
    that changes smaller than half a step survive on average: a diffusion-driven approach to a
    steady state then no longer stalls (docs/validation/store16.md). Pull streaming in dense
    storage; each step is launched on its own (no CUDA graphs)."""
    cuda_options: dict = attrs.field(factory=dict, converter=dict, validator=_check_cuda_options)
    """GPU tuning: block (threads along x), min_blocks (per SM, for __launch_bounds__),
    streaming_stores (evict-first stores), propagation ('direct' | 'shared' | 'shuffle': how
    populations with c_x ≠ 0 cross between threads, dense pull or push; see
    :mod:`.propagation`), wall_launch ('fused' | 'split': wall tiles in the step kernel or in
    a kernel of their own), moving_tiles (moving-wall terms only in tiles that touch a moving
    wall), wall_reads ('refetch' | 'select': a population across a wall link re-read after
    the tag, or read once from an address the tag selects; :meth:`wall_reads` gives the
    default), narrow (32-bit population indices from each thread's node; :meth:`narrow`
    gives the default). Results do not depend on them."""

    @rounding.validator
    def _check_rounding(self, _, value):
        if value != "stochastic":
            return
        if self.store == "fp32":
            raise ValueError("rounding='stochastic' is for 16-bit populations; give "
                             "store='fp16s' or 'fp16c', or leave rounding='nearest'")
        if self.streaming != "pull" or self.storage != "dense":
            raise ValueError("rounding='stochastic' runs with streaming='pull' and "
                             f"storage='dense' (got streaming={self.streaming!r}, "
                             f"storage={self.storage!r}), where each node stores its own "
                             "populations")

    def tuning(self, dtype=None) -> dict:
        """``cuda_options`` with the defaults filled in: ``block`` 256 for dense fp32 pull and
        AA (``dtype`` float32, fp32 storage), else 128; ``moving_tiles`` on where it runs (dense
        storage with direct propagation)."""
        options = {**CUDA_OPTIONS, **self.cuda_options}
        if options["block"] is None:
            wide = (self.storage == "dense" and self.streaming in ("pull", "aa")
                    and self.store == "fp32" and dtype is not None
                    and np.dtype(dtype) == np.float32)
            options["block"] = 256 if wide else 128
        if options["moving_tiles"] is None:
            options["moving_tiles"] = (self.storage == "dense"
                                       and options["propagation"] == "direct")
        return options

    def wall_reads(self, moving_walls: bool, box_walls: int = 0, double: bool = False) -> str:
        """``cuda_options['wall_reads']``, or the measured default (benchmarks/NOTES.md, runs
        37–38, H100): 'select' for pull and fp32 AA, but 'refetch' for fp32 pull without wall
        faces (equal there), for AA with moving walls (whose wall-row code holds the registers
        anyway) and fp64 AA (0.4 % faster); push reads no population across a wall link."""
        options = self.tuning()
        if options["wall_reads"] is not None:
            return options["wall_reads"]
        if (self.storage != "dense" or options["propagation"] != "direct"
                or self.streaming == "push"):
            return "refetch"
        if self.streaming == "aa":
            return "refetch" if moving_walls or double else "select"
        return "select" if self.store != "fp32" or box_walls else "refetch"

    def narrow(self, lattice: Lattice, nodes: int | None) -> bool:
        """``cuda_options['narrow']``, or the measured default where it runs (dense storage,
        direct propagation, buffers of fewer than 2^31 values: ``nodes`` known,
        :func:`.cuda.narrow_fits`): on for AA and 16-bit storage, off for fp32 pull and push
        (H100 256³, NOTES run 44: 16-bit AA periodic +4.7 %, fp32 pull periodic −0.7 %)."""
        options = self.tuning()
        runs = (self.storage == "dense" and options["propagation"] == "direct"
                and nodes is not None and narrow_fits(lattice.q, nodes))
        if options["narrow"] and not runs:
            size = ("a domain size (none is known here)" if nodes is None
                    else f"fewer than 2^31 populations ({lattice.q} x {nodes} nodes)")
            raise ValueError(f"cuda_options narrow needs dense storage, direct propagation and "
                             f"{size}; leave it unset")
        if options["narrow"] is not None:
            return bool(options["narrow"])
        return runs and (self.streaming == "aa" or self.store != "fp32")

    @property
    def omega_minus(self) -> float:
        """The model's second run-time rate (TRT's ω⁻)."""
        return self.collision.omega_minus(self.omega)

    def memory_bytes_per_node(self, lattice: Lattice, dtype, backend: Backend) -> int | None:
        """Bytes the engine of :meth:`create` holds per lattice node, known before it is built
        (None for sparse storage: per stored node, known once the tags are)."""
        if self.storage == "sparse":
            return None
        real, tag = np.dtype(dtype).itemsize, TagLayout(lattice).dtype.itemsize
        if backend.is_gpu:  # populations (AA: one copy in place), ρ, u and the tags
            buffers = 1 if self.streaming == "aa" else 2
            pop = bytes_per_value(self.store, real)
            # 16-bit storage keeps no ρ, u (computed when asked; dense storage)
            fields = 0 if self.store != "fp32" else (1 + lattice.d) * real
            return buffers * lattice.q * pop + fields + tag
        return 2 * lattice.q * real + tag  # NumPy: stream from one buffer into the other

    def stability_advice(self) -> str:
        """The generic advice, and a more robust collision model than the one in use."""
        other = self.collision.sturdier
        return super().stability_advice() + (f", or use {other}" if other else "")

    def stored_velocity(self, u: list) -> list:
        """Velocity of the equilibrium stored for an initial u: with a body force the
        post-collision state carries u + g/2, so that the reported velocity is u."""
        if self.force is None:
            return u
        return [ua + 0.5 * g for ua, g in zip(u, self.force, strict=True)]

    def relaxation(self, lattice: Lattice) -> Relaxation:
        """The collision model bound to ``lattice`` (raises where it cannot run there)."""
        return Relaxation(lattice, self.collision, self.les)

    def shifts(self, lattice: Lattice, open_faces: bool, interpolated: bool) -> bool:
        """Whether the dense kernels and the NumPy reference collide the 16-bit storage's
        f_i − w_i as they are (:func:`.collision.collide` with ``shifted``: 2Q additions a
        node fewer, NOTES run 50): fp16s dense storage (fp16c's integer decode is the cost
        there, and its AA even kernel held 96 registers this way), a model that relaxes
        f − f_eq, and no open boundaries or interpolated bodies anywhere in the geometry (so
        every rank of a distributed run decides alike; those rules read whole populations)."""
        return (self.store == "fp16s" and self.storage == "dense" and not open_faces
                and not interpolated and self.relaxation(lattice).shifts)

    def kernel_source(self, lattice: Lattice, dtype, moving_walls: bool = True,
                      boundaries: tuple = (), interpolated: bool = False,
                      box_walls: int = 0, nodes: int | None = None,
                      shifted: bool | None = None) -> str:
        """The generated CUDA source of this configuration (what ``thelma kernels`` prints);
        ``boundaries`` lists the (node kind, face) pairs of open boundaries to handle,
        ``interpolated`` adds interpolated bounce-back for curved bodies, ``box_walls`` the
        faces of the stored box that are walls (:func:`.tag_tables.box_walls`; dense),
        ``nodes`` the stored nodes (dense: 32-bit indices where they fit, :meth:`narrow`),
        ``shifted`` a collision in shifted populations (None: :meth:`shifts` of these
        boundaries and bodies)."""
        from thelma_py.modules.compute.lbm.kernels import KernelConfig, generate
        from thelma_py.modules.compute.lbm.sparse_kernels import generate_sparse

        self.check(lattice)
        options = self.tuning(dtype)
        # the same configuration (collision, precision, boundaries) drives either layout
        emit = generate_sparse if self.storage == "sparse" else generate
        if self.storage == "sparse" and (
                options["propagation"], options["wall_launch"], bool(options["moving_tiles"]),
                options["wall_reads"] not in (None, "refetch")) != ("direct", "fused", False,
                                                                   False):
            raise ValueError("cuda_options propagation, wall_launch, moving_tiles and "
                             "wall_reads are for "
                             "dense storage; sparse storage reads through its neighbour table")
        return emit(KernelConfig(
            lattice=lattice, relaxation=self.relaxation(lattice),
            real="float" if np.dtype(dtype) == np.float32 else "double", scheme=self.streaming,
            force=self.force, moving_walls=moving_walls, block=options["block"],
            min_blocks=options["min_blocks"],
            streaming_stores=bool(options["streaming_stores"]), boundaries=boundaries,
            interpolated=interpolated, propagation=options["propagation"],
            wall_launch=options["wall_launch"], moving_tiles=bool(options["moving_tiles"]),
            wall_reads=self.wall_reads(moving_walls, box_walls,
                                       double=np.dtype(dtype) == np.float64),
            box_walls=box_walls if self.storage == "dense" else 0,
            store=self.store, narrow=self.narrow(lattice, nodes), rounding=self.rounding,
            shifted=self.shifts(lattice, bool(boundaries), interpolated) if shifted is None
            else shifted))

    def check(self, lattice: Lattice) -> None:
        if self.tau > MAX_TAU:
            raise ValueError(f"nu = {self.nu} gives tau = {self.tau:.1f}; above {MAX_TAU:.0f} "
                             "the scheme is inaccurate. Lower nu = U N / Re: a smaller lattice "
                             "velocity U or fewer nodes N per length.")
        if self.force is not None and len(self.force) != lattice.d:
            raise ValueError(f"force needs {lattice.d} components for {lattice.name}, "
                             f"got {self.force}")
        self.relaxation(lattice)

    def check_store(self, dtype) -> None:
        """16-bit storage keeps fp32 arithmetic."""
        if self.store == "fp32":
            return
        if np.dtype(dtype) != np.float32:
            raise ValueError(f"store={self.store!r} stores 16 bits and computes in float32; "
                             f"use precision float32 (got {np.dtype(dtype).name})")

    def create(self, lattice: Lattice, tags: NodeTags, backend: Backend, dtype) -> ComputeEngine:
        self.check(lattice)
        self.check_store(dtype)
        for kind, _ in tags.open_kinds:
            reason = refusal(kind, streaming=self.streaming, storage=self.storage)
            if reason:
                raise ValueError(reason)
            unstable = instability(kind, self.tau)
            if unstable:
                warnings.warn(unstable, stacklevel=2)
        if len(tags.curved_nodes) and self.streaming != "pull":
            raise ValueError("interpolated bodies read the post-collision populations of two "
                             "nodes per link, which only the pull scheme holds; use "
                             "streaming='pull' (or a body without interpolated=True)")
        if self.storage == "sparse":
            return create_sparse(self, lattice, tags, backend, dtype)
        if backend.is_gpu:
            from thelma_py.modules.compute.lbm.cuda import CudaLbm

            return CudaLbm(self, lattice, tags, backend, np.dtype(dtype))
        return NumpyLbm(self, lattice, tags, backend, np.dtype(dtype))


class NumpyLbm(ComputeEngine):
    """Vectorised NumPy LBM, the reference for every GPU variant.

    State: post-collision populations ``f`` of shape (Q, *S) where S = (Nz, Ny, Nx), x fastest.
    One step pulls f_i(x) from x − c_i (periodic wrap; links into walls bounce back), rebuilds
    the missing populations of open-boundary nodes (:mod:`.open_nodes`), overwrites the links
    of interpolated bodies (:mod:`.interpolated`), then collides. Solid nodes keep their
    values.
    """

    def __init__(self, params: Lbm, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        self.params, self.lattice, self.tags, self.backend, self.dtype = (
            params, lattice, tags, backend, dtype)
        self.relax = params.relaxation(lattice)
        self.walls = WallLinks(lattice, tags, dtype)
        self.open = OpenNodes(lattice, tags, dtype, params.force)
        self.curved = CurvedLinks(lattice, tags, dtype)
        self.solid = np.flatnonzero(tags.solid)
        self.shape = tags.tags.shape
        self.f = np.zeros((lattice.q, *self.shape), dtype=dtype)
        self._spare = np.empty_like(self.f)  # the other buffer: stream into it, swap
        self.omega = dtype.type(params.omega)
        self.omega_minus = dtype.type(params.omega_minus)
        self.uniforms = self.relax.uniform_values(self.omega)  # as the CUDA engines hold them
        self._copies = [_shift_copies(c[::-1], self.shape) for c in lattice.c.tolist()]
        # 16-bit storage: collide f − w as the kernels do (Lbm.shifts), w as fp32 (Q, 1)
        self.shifted = params.shifts(lattice, tags.has_open_faces, bool(tags.interpolated_ids))
        self._w_nodes = weights(lattice)  # (Q, 1, ..., 1)
        self.clock = 0  # steps done: the seed of stochastic rounding (checkpoints keep it)
        self.origin = (0, 0, 0)  # global (x, y, z) of node 0, hashed by stochastic rounding
        self._grid = None
        # Collide in blocks of nodes so that the dozens of temporaries the collision creates
        # stay in cache; elementwise arithmetic makes the result independent of the blocking.
        self._blocks = node_blocks(int(np.prod(self.shape)), lattice.q * dtype.itemsize)

    @property
    def traffic_bytes_per_node(self) -> int:
        return 2 * self.lattice.q * self.dtype.itemsize

    @property
    def memory_bytes_per_node(self) -> int:
        return self.params.memory_bytes_per_node(self.lattice, self.dtype, self.backend)

    def initialize(self, rho, u) -> None:
        rho = np.asarray(rho, dtype=self.dtype)
        u = self.params.stored_velocity([np.asarray(ua, dtype=self.dtype) for ua in u])
        self.f = self._stored(np.array(self.lattice.equilibrium(rho, u), dtype=self.dtype))

    def _stored(self, f: np.ndarray) -> np.ndarray:
        """``f`` rounded through the population storage (16-bit: decode(encode(f − w)) + w)."""
        if self.params.store == "fp32":
            return f
        return round_trip(self.params.store, f, weights(self.lattice))

    def stream(self, f: np.ndarray, out: np.ndarray | None = None,
               wall_terms: bool = True) -> np.ndarray:
        """Pull streaming with halfway bounce-back: returns the pre-collision populations
        (``wall_terms`` False: moving walls' terms left out, :meth:`add_wall_terms`).

        Same values as :func:`.layouts.stream` (``np.roll`` per population), written with
        slice copies into ``out`` (a new array if None) instead of temporaries.
        """
        out = np.empty_like(f) if out is None else out
        for i, copies in enumerate(self._copies):
            for dst, src in copies:
                out[i][dst] = f[i][src]
        opposite = self.lattice.opposite
        for i, flat in self.walls.index.items():
            bounced = f[opposite[i]].reshape(-1)[flat]
            term = self.walls.term[i] if wall_terms else None
            out[i].reshape(-1)[flat] = bounced if term is None else bounced + term
        return out

    def add_wall_terms(self, f: np.ndarray) -> None:
        """Ladd's moving-wall terms added in place to the bounced populations of ``f``."""
        for i, flat in self.walls.index.items():
            term = self.walls.term[i]
            if term is not None:
                f[i].reshape(-1)[flat] += term

    def step(self, n: int = 1) -> None:
        force = self.params.force
        q = self.lattice.q
        for _ in range(n):
            new = self.stream(self.f, out=self._spare, wall_terms=not self.shifted)
            if self.shifted:  # the stored f − w exactly (the codes' values), then the terms
                new[...] = from_codes(self.params.store, to_codes(self.params.store, new,
                                                                  self._w_nodes), 0.0)
                self.add_wall_terms(new)
            if self.open:
                self.open.apply(new)
            if self.curved:  # after the open rules: their neighbour copies see halfway values
                self.curved.apply(self.f, new)
            flat = new.reshape(q, -1)
            for block in self._blocks:
                post, _, _ = collide(self.relax, list(flat[:, block]), identity_let, self.omega,
                                     self.omega_minus, force, self.shifted, self.uniforms)
                for i in range(q):  # every post[i] is computed before any write: in place
                    flat[i, block] = post[i]
            if self.shifted:  # f − w to codes and back, as the kernels store it
                new[...] = self._rounded(new, 0.0) + self._w_nodes
            elif self.params.store != "fp32":
                new[...] = self._rounded(new, self._w_nodes)
            if len(self.solid):
                flat[:, self.solid] = self.f.reshape(q, -1)[:, self.solid]
            self.f, self._spare = new, self.f
            self.clock += 1

    def _rounded(self, f: np.ndarray, shift) -> np.ndarray:
        """Post-collision ``f`` through the 16-bit storage as this step stores it: to nearest,
        or stochastically with this step's random bits (:attr:`Lbm.rounding`)."""
        if self.params.rounding == "nearest":
            return round_trip(self.params.store, f, shift)
        if self._grid is None:
            self._grid = node_coordinates(self.shape, self.origin)
        return round_trip_stochastic(self.params.store, f, shift, self._grid,
                                     self.clock % 2**31)

    def macroscopic(self):
        lat = self.lattice
        rho = self.f.sum(axis=0)
        u = np.tensordot(lat.c.T.astype(self.dtype), self.f, axes=1) / rho
        if self.params.force is not None:
            u -= np.asarray(self.params.force, dtype=self.dtype).reshape(-1, *[1] * lat.d) * 0.5
        u[:, self.tags.solid] = 0
        return rho, u

    def state(self) -> dict[str, np.ndarray]:
        state = {"f": self.f.copy(), "store": np.array(self.params.store)}
        if self.params.rounding == "stochastic":  # the seed of the next step
            state["clock"] = np.array(self.clock)
        return state

    def halo_arrays(self) -> list[np.ndarray]:
        """Arrays (Q, *S) whose ghost layers a distributed run fills before each step."""
        return [self.f]

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        f = np.asarray(state["f"])
        if f.shape != self.f.shape or f.dtype != self.f.dtype:
            raise ValueError(f"checkpoint holds f as {f.dtype}{f.shape}, this run needs "
                             f"{self.f.dtype}{self.f.shape}")
        check_state_store(state, self.params.store)
        self.f = self._stored(f.copy())
        self.clock = int(state.get("clock", 0))


def _shift_copies(shift, shape) -> list[tuple[tuple[slice, ...], tuple[slice, ...]]]:
    """(destination, source) slice pairs that do ``out = np.roll(a, shift)`` by plain copies:
    out[x] = a[x − shift] with periodic wrap, in at most 2^D pieces."""
    per_axis = []
    for s, n in zip(shift, shape, strict=True):
        s %= n
        if s == 0:
            per_axis.append([(slice(None), slice(None))])
        else:
            per_axis.append([(slice(s, None), slice(None, n - s)),
                             (slice(None, s), slice(n - s, None))])
    return [tuple(zip(*pieces, strict=True)) for pieces in itertools.product(*per_axis)]


def check_fits(backend: Backend, nodes: int, bytes_per_node: int) -> None:
    check_memory(backend, nodes, bytes_per_node, hint="or streaming='aa' (one copy of f)")

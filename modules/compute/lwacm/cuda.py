"""CUDA LW-ACM engines: generated kernels (:mod:`.kernels`) launched through CuPy.

Built like :class:`thelma_py.modules.compute.lbm.cuda.CudaLbm`: the same compile cache (one
RawModule per source text), the same tag tables, and the same stepping
(:mod:`thelma_py.cuda_steps`: runs of many steps on small domains replay a captured CUDA
graph). The two-step state is f* and the momentum j = ρ u (ρ, u are computed from them on the
device when asked for); the single-step records are ρ, u.

Distributed runs (:class:`thelma_py.parallel.DistributedEngine`) exchange :meth:`halo_arrays`
through the LBM transports (NCCL, or MPI through the host where ranks share a GPU). Two-step
ranks then launch one step over the whole grown box (no overlap; ghost nodes are updated too,
from whatever they hold); single-step ranks overlap the exchange with the interior as LBM does
(:class:`thelma_py.cuda_steps.OverlappedSteps`). Owned nodes read only ghost values the
exchange has just written (the crossing f* of the two-step scheme, whole records of the
single-step one).
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.backend import Backend
from thelma_py.codegen.compile import compile_module
from thelma_py.codegen.tag_tables import edge_table, tile_flags
from thelma_py.compute import ComputeEngine, check_memory
from thelma_py.cuda_steps import GraphSteps, OverlappedSteps
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lwacm import fused_kernels, open_links, rule
from thelma_py.modules.compute.lwacm.curved import CurvedExchange, CurvedGhosts, quadratic_min_q
from thelma_py.modules.compute.lwacm.kernels import (
    LwacmKernelConfig,
    generate,
    kernel_names,
    thread_rows,
    two_step_args,
)
from thelma_py.modules.compute.lwacm.reference import (
    CheckedState,
    TwoStepSizes,
    fstar_array,
    fused_block,
    fused_chunk,
    fused_traffic,
    macroscopic_from,
    two_step_wall_tags,
)
from thelma_py.modules.compute.lwacm.side_ghosts import SideGhosts, side_ghosts
from thelma_py.nodes import NodeTags
from thelma_py.parallel import check_gpu_box
from thelma_py.store16 import (
    FORMATS,
    check_state_store,
    from_codes,
    seed_launch_values,
    to_codes,
)

TWO_STEP_BLOCK = 128
"""Threads per block along x for the two-step kernel (as the LBM default)."""


class _CudaBase(CurvedExchange, CheckedState, GraphSteps, ComputeEngine):
    scheme = "two-step"

    def __init__(self, params, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        import cupy

        self.cp = cupy
        self.params, self.lattice, self.tags, self.backend, self.dtype = (
            params, lattice, tags, backend, np.dtype(dtype))
        self.shape = tags.tags.shape
        self.nodes = int(np.prod(self.shape))
        check_memory(backend, self.nodes, self.memory_bytes_per_node)
        dims = (1,) * (3 - len(self.shape)) + tuple(self.shape)
        self.nz, self.ny, self.nx = (int(v) for v in dims)
        moving = bool(np.any(tags.bc_table[:, :3] != 0))
        self.sides = self._side_ghosts(lattice, tags)
        self.config = LwacmKernelConfig(
            lattice=lattice, real="float" if self.dtype == np.float32 else "double",
            scheme=self.scheme, force=params.force, moving_walls=moving, block=TWO_STEP_BLOCK,
            les=params.les, boundaries=() if self.sides else open_links.arms(tags),
            side_ghosts=bool(self.sides),
            store=getattr(params, "store", "fp32"),
            rounding=getattr(params, "rounding", "nearest"),
            staging=getattr(params, "staging", "registers"),
            interpolated=bool(len(tags.curved_nodes)),
            shifted=getattr(params, "density", "absolute") == "shifted",
            cubic=params.cubic)
        if self.scheme == "fused":
            self.config = attrs.evolve(self.config, thread_rows=thread_rows(self.config))
        self._compile()
        xp = cupy
        self.solid_index = xp.asarray(np.flatnonzero(tags.solid))
        self.tag_words = xp.asarray((self.sides.tags if self.sides else tags).tags)
        self.tile_flags = xp.asarray(tile_flags(tags))
        self.edge_bc = xp.asarray(edge_table(tags))
        self.periodic = sum(1 << a for a, p in enumerate(tags.periodic) if p)
        values = tags.open_values if len(tags.open_values) else np.zeros((1, 4))
        self.open_table = xp.asarray(tags.open_table.astype(np.int32).reshape(-1))
        self.open_values = xp.asarray(values.astype(self.dtype).reshape(-1))
        self.kappa = self.dtype.type(params.kappa)
        curved = CurvedGhosts(lattice, tags, self.dtype, quadratic_min_q(self.params))
        self.curved_nodes = xp.asarray(np.append(curved.nodes, 0).astype(np.int32))
        self.curved_weights = xp.asarray(np.append(curved.table.reshape(-1), 0).astype(self.dtype))
        self.n_curved = np.int32(len(curved.nodes))
        self.current = 0
        self.phase = "post-even"  # the graph cache keys on (current, phase)
        self._graphs: dict = {}
        self._stream = None

    def _side_ghosts(self, lattice: Lattice, tags: NodeTags) -> SideGhosts | None:
        """Free-slip side ghosts staged as copies (the single step's choice); None: per link."""
        return None

    def _compile(self) -> None:
        """The kernels of :attr:`config` (one RawModule per source text, cached)."""
        self.source = generate(self.config)
        module = compile_module(self.source)
        self.kernels = {store: module.get_function(name)
                        for store, name in kernel_names(self.scheme).items()}

    @property
    def force_tags(self) -> NodeTags:
        """Tags for the momentum-exchange forces (wall rows scaled by 1 − κ)."""
        return two_step_wall_tags(self.tags, self.params.kappa)

    def distribute(self, box) -> None:
        """Run on the grown box of ``box`` (a :class:`thelma_py.parallel.RankBox`): the
        distributed engine exchanges :meth:`halo_arrays`, then calls :meth:`step` (one launch
        over the grown box). The decomposition rule is the LBM one (one axis, z or y)."""
        check_gpu_box(box, self.lattice)


class CudaLwacm(TwoStepSizes, _CudaBase):
    """Two-step LW-ACM on one GPU: f* in two buffers (pull), the momentum j = ρ u (D, *S)
    updated in place. ρ and u are not stored: :meth:`macroscopic` computes them."""

    scheme = "two-step"

    def __init__(self, params, lattice, tags, backend, dtype):
        super().__init__(params, lattice, tags, backend, dtype)
        xp = self.cp
        wall_tags = two_step_wall_tags(tags, params.kappa)
        self.bc = xp.asarray(wall_tags.bc_table.astype(self.dtype).reshape(-1))
        args = two_step_args(bool(self.config.boundaries), self.config.interpolated)
        self.args = args.bind(real_t=self.dtype, tag_t=tags.tags.dtype)
        q = lattice.q
        self.buffers = [xp.empty((q, *self.shape), dtype=self.dtype) for _ in range(2)]
        self.j = xp.zeros((lattice.d, *self.shape), dtype=self.dtype)
        self.halo_fields = bool(self.config.boundaries) or self.config.interpolated
        """Open and curved links read all f* of a neighbour: distributed runs then exchange
        whole nodes."""

    def initialize(self, rho, u) -> None:
        xp, lat = self.cp, self.lattice
        rho = xp.asarray(rho, dtype=self.dtype).reshape(self.shape)
        if len(u) != lat.d:
            raise ValueError(f"u has {len(u)} components, expected {lat.d}")
        # u goes into self.j, which then becomes ρ u in place: no (D, *S) temporary
        for a in range(lat.d):
            self.j[a] = xp.asarray(u[a], dtype=self.dtype).reshape(self.shape)
        self.j.reshape(lat.d, -1)[:, self.solid_index] = 0
        velocity = list(self.j)
        usq = sum(ua * ua for ua in velocity)
        for i in range(lat.q):  # one population at a time: no second copy of f on the device
            value = rule.fstar_i(lat, i, rho, velocity, usq, float(self.kappa),
                                 self.config.cubic)
            for buffer in self.buffers:
                buffer[i] = value
        self.j *= rho  # j = ρ u, the same rounding as the NumPy reference
        self.current = 0
        self._graphs.clear()

    def state(self) -> dict[str, np.ndarray]:
        return {"f": self.buffers[self.current].get(), "j": self.j.get()}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        lat = self.lattice
        f = self._check(state, "f", (lat.q, *self.shape))
        j = self._check(state, "j", (lat.d, *self.shape))
        for buffer in self.buffers:
            buffer[...] = self.cp.asarray(f)
        self.j[...] = self.cp.asarray(j)
        self.current = 0
        self._graphs.clear()

    def macroscopic(self):
        """ρ = Σ_i f*_i of the current buffer and u = j / ρ, computed on the device (new
        arrays, (1 + D) values per node while they are held; u = 0 where ρ = 0)."""
        return macroscopic_from(self.buffers[self.current], self.j)

    def _launch(self, store: bool) -> None:
        grid = ((self.nx + TWO_STEP_BLOCK - 1) // TWO_STEP_BLOCK, self.ny, self.nz)
        args = self.args.pack(self, src=self.buffers[self.current],
                              dst=self.buffers[1 - self.current])
        self.kernels[store](grid, (TWO_STEP_BLOCK, 1, 1), args)
        self.current = 1 - self.current

    def canonical(self):
        """The current f* buffer (Q, *S), for the momentum-exchange forces."""
        return self.buffers[self.current]

    def halo_arrays(self) -> list:
        """The current f* buffer (Q, *S): its crossing populations fill the ghost layers before
        each step (a node reads only its own j, so j is never exchanged)."""
        return [self.buffers[self.current]]

    def poison(self) -> None:
        """Testing aid: fill what a step must write (the other f* buffer) with NaN. (j is read
        and written in place, so it cannot be poisoned.)"""
        self.buffers[1 - self.current].fill(np.nan)


class CudaLwacmFused(OverlappedSteps, _CudaBase):
    """Single-step LW-ACM on one GPU: (ρ, u_x, u_y, u_z) records in two buffers, shape
    (*S, 4), and nothing else per node but the tag (36 B in fp32). ρ and u are the state, so
    :meth:`macroscopic` hands out views of the current records (strided; copies are made only
    where a consumer needs contiguous arrays, e.g. for output)."""

    scheme = "fused"
    halo_fields = True
    """A node reads the records of every upstream neighbour: distributed runs exchange whole
    records."""

    def __init__(self, params, lattice, tags, backend, dtype):
        plane = int(np.prod(tags.tags.shape[1:])) if lattice.d == 3 else tags.tags.shape[-1]
        if plane >= 2**32:
            raise ValueError(f"a plane of {plane} nodes is too large for the single-step "
                             "kernel (its staging indexes a plane in 32 bits: fewer than 2^32 "
                             "nodes); cut the domain across ranks or use another scheme")
        super().__init__(params, lattice, tags, backend, dtype)
        xp = self.cp
        self.store = params.store
        self.stochastic = params.rounding == "stochastic"
        self.clock = 0  # steps done: the seed of stochastic rounding
        self.ox = self.oy = self.oz = np.int32(0)  # global (x, y, z) of node 0 (a rank's)
        self.bc = xp.asarray(tags.bc_table.astype(self.dtype).reshape(-1))
        record = self.dtype if self.store == "fp32" else np.uint16  # 16-bit: codes
        self.buffers = [xp.zeros((*self.shape, 4), dtype=record) for _ in range(2)]
        self.tile_flags = xp.asarray(fused_kernels.tile_flags(
            lattice, self.sides.tags if self.sides else tags, open_plain=bool(self.sides)))
        types = {"real_t": self.dtype, "node_t": self.dtype, "rec_t": np.uint16,
                 "tag_t": tags.tags.dtype}
        self.args = fused_kernels.args(self.store, params.rounding,
                                       bool(self.config.boundaries),
                                       self.config.interpolated, bool(self.sides)).bind(**types)
        if self.sides:
            self.side_columns = xp.asarray(self.sides.columns.reshape(-1))
            self.link_tag_words = xp.asarray(tags.tags)
            self.link_tile_flags = xp.asarray(fused_kernels.tile_flags(lattice, tags))
            self.end_args = fused_kernels.end_args(self.config.interpolated).bind(**types)
        self.rows = self.config.plane_rows
        self.block = fused_block(lattice, self.rows)
        self.chunk = fused_chunk(lattice, self.shape, backend.sm_count(), self.tile_rows)

    @property
    def tile_rows(self) -> int:
        """Rows of nodes of a block's tile: its rows of threads, times the nodes a thread
        updates along y (:attr:`LwacmKernelConfig.thread_rows`)."""
        return self.rows * self.config.thread_rows

    def _side_ghosts(self, lattice: Lattice, tags: NodeTags) -> SideGhosts | None:
        if self.params.open_ghosts != "sides" or self.params.store != "fp32":
            return None
        return side_ghosts(lattice, tags)

    def _compile(self) -> None:
        """The kernels of :attr:`config`, and with side ghosts the per-link kernel of the end
        planes (:attr:`end_kernels`)."""
        super()._compile()
        if self.sides and self.sides.end_planes:
            links = attrs.evolve(self.config, side_ghosts=False,
                                 boundaries=open_links.arms(self.tags))
            module = compile_module(generate(links))
            self.end_kernels = {store: module.get_function(name)
                                for store, name in kernel_names(self.scheme).items()}

    def retune(self, rows: int | None = None, min_blocks: int | None = None,
               chunk: int | None = None, thread_rows: int | None = None) -> None:
        """Benchmarking aid: rebuild the kernel with another block (32 x ``rows`` threads),
        ``__launch_bounds__`` minimum or nodes per thread along y, or march ``chunk`` planes
        per block."""
        changes = {k: v for k, v in (("rows", rows), ("min_blocks", min_blocks),
                                     ("thread_rows", thread_rows)) if v is not None}
        if changes:
            self.config = attrs.evolve(self.config, **changes)
            self._compile()
            self.rows = self.config.plane_rows
            self.block = fused_block(self.lattice, self.rows)
        if chunk is not None or {"rows", "thread_rows"} & changes.keys():
            self.chunk = chunk or fused_chunk(self.lattice, self.shape, self.backend.sm_count(),
                                              self.tile_rows)
        self._graphs.clear()

    @property
    def traffic_bytes_per_node(self) -> int:
        size = self.dtype.itemsize if self.store == "fp32" else 2
        return fused_traffic(self.lattice, size, self.chunk, self.tile_rows)

    @property
    def memory_bytes_per_node(self) -> int:
        return self.params.memory_bytes_per_node(self.lattice, self.dtype, self.backend)

    def _set(self, rho, u) -> None:
        """Both record buffers from ρ (S) and u (D arrays of S; broadcast views will do: no
        full-size temporary is made, so the largest domains initialise in place)."""
        d = self.lattice.d
        xp = self.cp
        for buffer in self.buffers:
            if self.store == "fp32":
                if self.config.shifted:  # records of ρ − 1, taken before rounding
                    for slab in self._slabs():
                        buffer[slab + (Ellipsis, 0)] = xp.asarray(rho)[slab] - 1.0
                else:
                    buffer[..., 0] = xp.asarray(rho)
                for a in range(d):
                    buffer[..., 1 + a] = xp.asarray(u[a])
            else:  # codes of ρ − 1 and u, a slab of planes at a time (bounded temporaries)
                for slab in self._slabs():
                    fields = [(0, rho, 1.0)] + [(1 + a, u[a], 0.0) for a in range(d)]
                    for k, value, shift in fields:
                        buffer[slab + (Ellipsis, k)] = to_codes(
                            self.store, xp.asarray(value)[slab], shift, xp)
            buffer[..., 1 + d:] = 0  # code 0 is 0.0 in either format
            buffer.reshape(-1, 4)[self.solid_index, 1:] = 0  # walls at rest in the records
        self.current = 0
        self._graphs.clear()

    def _slabs(self, nodes: int = 1 << 24):
        """Index tuples of slabs of planes (along the first axis) of about ``nodes`` nodes."""
        planes = max(1, nodes // max(1, self.nodes // self.shape[0]))
        return [(slice(lo, lo + planes),) for lo in range(0, self.shape[0], planes)]

    def initialize(self, rho, u) -> None:
        self._set(rho, u)

    def state(self) -> dict[str, np.ndarray]:
        rho, u = self.macroscopic()
        state = {"rho": np.ascontiguousarray(rho.get()), "u": np.ascontiguousarray(u.get())}
        if self.store == "fp32":
            if self.config.shifted:
                state[self.SHIFTED_KEY] = np.ascontiguousarray(
                    self.buffers[self.current][..., 0].get())
            return state
        # the codes themselves, components first like every field of a state (a distributed
        # run cuts the last axes): a restart is bit for bit (ρ = 1 + (ρ − 1) in fp32 drops the
        # smallest codes of ρ − 1)
        records = np.ascontiguousarray(np.moveaxis(self.buffers[self.current].get(), -1, 0))
        return {**state, "records": records,
                "store": np.array(self.store), "clock": np.array(self.clock)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        lat = self.lattice
        rho = self._check(state, "rho", self.shape)
        u = self._check(state, "u", (lat.d, *self.shape))
        check_state_store(state, self.store)
        self.clock = int(state.get("clock", 0))
        if self.store != "fp32" and str(state.get("store", "")) == self.store and (
                "records" in state):
            records = np.asarray(state["records"])
            if records.shape != (4, *self.shape) or records.dtype != np.uint16:
                raise ValueError(f"checkpoint holds records as {records.dtype}{records.shape}, "
                                 f"this run needs uint16{(4, *self.shape)}")
            for buffer in self.buffers:
                buffer[...] = self.cp.asarray(np.ascontiguousarray(np.moveaxis(records, 0, -1)))
            self.current = 0
            self._graphs.clear()
            return
        self._set(self.cp.asarray(rho), self.cp.asarray(u))
        shifted = self._shifted_records(state, self.config.shifted)
        if shifted is not None:
            for buffer in self.buffers:
                buffer[..., 0] = self.cp.asarray(shifted)

    def macroscopic(self):
        """Views (ρ of shape S, u of shape (D, *S)) of the current records; with 16-bit
        records new fp32 arrays decoded from them ((1 + D) values per node while held)."""
        held = self.buffers[self.current]
        d = self.lattice.d
        if self.store == "fp32":
            rho = held[..., 0] + 1 if self.config.shifted else held[..., 0]
            return rho, self.cp.moveaxis(held[..., 1:1 + d], -1, 0)
        xp = self.cp
        rho = xp.empty(self.shape, dtype=self.dtype)
        u = xp.empty((d, *self.shape), dtype=self.dtype)
        for slab in self._slabs():
            rho[slab] = from_codes(self.store, held[slab + (Ellipsis, 0)], 1.0, xp)
            for a in range(d):
                u[(a, *slab)] = from_codes(self.store, held[slab + (Ellipsis, 1 + a)], 0.0, xp)
        return rho, u

    def all_finite(self) -> bool:
        """Whether every record of the current state is finite (a slab of planes at a time: no
        full-size temporaries)."""
        held = self.buffers[self.current]
        parts = [held[slab] for slab in self._slabs()]
        if self.store == "fp32":
            return all(bool(self.cp.isfinite(part).all()) for part in parts)
        fmt = FORMATS[self.store]
        top = np.uint16(fmt.exp_max << fmt.man_bits)  # the all-ones exponent: ∞ or NaN
        return not any(bool(((part & top) == top).any()) for part in parts)

    def canonical(self):
        """f* (Q, *S) rebuilt from the current records (a temporary of Q values per node),
        for the momentum-exchange forces."""
        rho, u = self.macroscopic()
        return fstar_array(self.lattice, rho, u, self.kappa, self.cp, self.config.cubic)

    def halo_arrays(self) -> list:
        """The current records as one field of (1, *S, 4): on a z cut a layer is contiguous
        and goes over NCCL in place."""
        return [self.buffers[self.current][None]]

    def _launch(self, store: bool, advance: bool = True, rows: tuple[int, int] | None = None,
                planes: tuple[int, int] | None = None) -> None:
        """One step kernel on the current stream; ``rows``/``planes`` = (first, count) limit it
        to part of the y rows / z planes (y rows in 2D: the march axis there), ``advance``
        False keeps the buffer parity (the caller launches the other parts of the step). With
        side ghosts, the end planes of the march axis go to the per-link kernel."""
        three = self.lattice.d == 3
        march_extent = self.nz if three else self.ny
        row_first, row_count = (rows if three and rows else (0, self.ny))
        march_first, march_count = planes if three and planes else (
            rows if not three and rows else (0, march_extent))
        ends = self.sides.end_planes if self.sides else ()
        start = march_first
        for end in [p for p in ends if march_first <= p < march_first + march_count]:
            if end > start:
                self._launch_part(self.kernels[store], self.args, row_first, row_count,
                                  start, end - start)
            self._launch_part(self.end_kernels[store], self.end_args, row_first, row_count,
                              end, 1)
            start = end + 1
        if start < march_first + march_count:
            self._launch_part(self.kernels[store], self.args, row_first, row_count, start,
                              march_first + march_count - start)
        if advance:
            self.current = 1 - self.current
            self.clock += 1

    def _launch_part(self, kernel, args, row_first: int, row_count: int, march_first: int,
                     march_count: int) -> None:
        px, py = self.block
        three = self.lattice.d == 3
        grid = (-(-self.nx // px), -(-row_count // self.tile_rows) if three else 1,
                -(-march_count // self.chunk))
        if not three:
            grid = (grid[0], grid[2], 1)
        seed = (seed_launch_values(self.clock, fused_kernels.RECORD_VALUES) if self.stochastic
                else {})
        values = args.pack(self, src=self.buffers[self.current],
                           dst=self.buffers[1 - self.current], row_first=row_first,
                           row_last=row_first + row_count, march_first=march_first,
                           march_last=march_first + march_count, **seed)
        kernel(grid, (px, py, 1), values)

    def step(self, n: int = 1) -> None:
        """``n`` steps; with stochastic rounding each launch gets its own seed, so no CUDA graph
        (which would replay the seeds it captured)."""
        if not self.stochastic:
            super().step(n)
            return
        for _ in range(max(n, 0)):
            self._launch(False)

    def step_distributed(self, n: int, exchange, overlap: bool = True) -> None:
        """:meth:`OverlappedSteps.step_distributed` one step at a time, counting the steps."""
        for _ in range(n):
            super().step_distributed(1, exchange, overlap)
            self.clock += 1

    def distribute(self, box) -> None:
        """Run on the grown box of ``box``; :meth:`step_distributed` then updates the owned
        layers only, the interior overlapped with the exchange of the records."""
        super().distribute(box)
        self._plan_layers(box, row_group=self.config.thread_rows)
        lower = (*box.grown_lower, 0, 0)[:3]
        self.ox, self.oy, self.oz = (np.int32(v) for v in lower)

    def poison(self) -> None:
        """Testing aid: fill everything a step must write (the other records) with NaN."""
        nan = np.nan if self.store == "fp32" else 0x7E00  # a NaN code in either format
        self.buffers[1 - self.current].fill(nan)

"""CUDA LBM engine: generated kernels (:mod:`.kernels`) launched through CuPy.

Kernels are compiled once per source text (:func:`thelma_py.codegen.compile.compile_module`).
Stepping comes from :mod:`thelma_py.cuda_steps`: runs of many steps on small domains are replayed
from a captured CUDA graph so that Python launch overhead disappears, and distributed ranks
overlap the halo exchange with the interior.
"""

from __future__ import annotations

import numpy as np

from thelma_py.backend import Backend, host_copy
from thelma_py.codegen.compile import compile_module
from thelma_py.codegen.cuda import TILE
from thelma_py.codegen.tag_tables import any_per_tile, box_walls, edge_table, tile_flags
from thelma_py.compute import ComputeEngine, check_memory
from thelma_py.cuda_steps import GraphSteps, OverlappedSteps
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm import layouts
from thelma_py.modules.compute.lbm.collision import hold_uniforms
from thelma_py.modules.compute.lbm.fields16 import (
    MAX_FIELDS_NODES,
    fields_from_codes,
    fields_kernel,
    held_slots,
)
from thelma_py.modules.compute.lbm.interpolated import CurvedLinks
from thelma_py.modules.compute.lbm.kernels import (
    MOVING_TILE,
    kernel_names,
    step_args,
    wall_args,
)
from thelma_py.nodes import NodeTags
from thelma_py.store16 import (
    FORMATS,
    bytes_per_value,
    check_state_store,
    encode,
    from_codes,
    seed_launch_values,
    to_codes,
    weights,
)
from thelma_py.tags import SOLID_KINDS

INIT_SLAB_NODES = 1 << 24
"""Nodes per slab when populations are initialised (bounds the temporaries to a few slabs)."""


def moving_tile_flags(walls: layouts.WallLinks, shape: tuple) -> np.ndarray:
    """:data:`.kernels.MOVING_TILE` where a wall link of the tile ends on a moving wall."""
    moving = np.zeros(int(np.prod(shape)), dtype=bool)
    for i, velocity in walls.velocity.items():
        if velocity is not None:
            index, speed = host_copy(walls.index[i]), host_copy(velocity)
            moving[index[np.any(speed != 0, axis=0)]] = True
    return any_per_tile(moving.reshape(shape)).astype(np.uint8) * MOVING_TILE


class CudaLbm(GraphSteps, OverlappedSteps, ComputeEngine):
    """LBM on one GPU: pull, push (two buffers) or AA (one buffer, in place); a rank of a
    distributed run (pull) overlaps its exchange (:class:`thelma_py.cuda_steps.OverlappedSteps`)."""

    clock = 0
    """Steps done: the seed of stochastic rounding (checkpoints of such a run keep it)."""

    def __init__(self, params, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        import cupy

        self.cp = cupy
        self.params, self.lattice, self.tags, self.backend, self.dtype = (
            params, lattice, tags, backend, np.dtype(dtype))
        self.scheme = params.streaming
        # clean tiles compute their tag: fluid, with the links across the wall faces of the box
        self.box_walls = box_walls(tags)
        self.source = params.kernel_source(
            lattice, self.dtype, moving_walls=bool(np.any(tags.bc_table[:, :3] != 0)),
            boundaries=tags.open_kinds, interpolated=bool(len(tags.curved_nodes)),
            box_walls=self.box_walls, nodes=int(tags.tags.size),
            shifted=params.shifts(lattice, tags.has_open_faces, bool(tags.interpolated_ids)))
        self.shape = tags.tags.shape
        self.nodes = int(np.prod(self.shape))
        flags = tile_flags(tags, self.box_walls)
        dims = (1,) * (3 - len(self.shape)) + tuple(self.shape)
        self.nz, self.ny, self.nx = (int(v) for v in dims)
        options = params.tuning(self.dtype)
        self.block = options["block"]  # the kernels' bound; a narrow box launches fewer threads
        if options["propagation"] == "direct":  # (the variants' exchanges assume full blocks)
            self.block = min(self.block, -(-self.nx // TILE) * TILE)
        self.split = options["wall_launch"] == "split"  # bulk and wall tiles launched apart
        self.walls = layouts.WallLinks(lattice, tags, self.dtype, cupy)
        if options["moving_tiles"]:
            flags = flags | moving_tile_flags(self.walls, tags.tags.shape)
        # kernels read a tag only in flagged tiles (wall_id reads a stored solid's, which
        # flags the tile of its link): with none flagged one word stands in for the array
        self.tags_stored = bool(flags.any())
        check_memory(backend, self.nodes, self.memory_bytes_per_node,
                     hint="or streaming='aa' (one copy of f)" if self.scheme != "aa" else "")
        module = compile_module(self.source)
        self.kernels = {key: module.get_function(name) for key, name in
                        kernel_names(self.scheme, "bulk" if self.split else "").items()}
        self.store = params.store
        self.omega = self.dtype.type(params.omega)
        self.omega_minus = self.dtype.type(params.omega_minus)
        uniforms = hold_uniforms(self, params.relaxation(lattice))
        self.stochastic = params.rounding == "stochastic"
        self.ox = self.oy = self.oz = np.int32(0)  # global (x, y, z) of node 0 (a rank's)
        self.args = step_args(self.scheme, self.store, uniforms, params.rounding,
                              lattice.q).bind(
            real_t=self.dtype, tag_t=tags.tags.dtype, pop_t=np.uint16)
        xp = cupy
        if self.split:
            self.wall_kernels = {key: module.get_function(name)
                                 for key, name in kernel_names(self.scheme, "walls").items()}
            self.wall_args = wall_args(self.scheme, params.store, uniforms, params.rounding,
                                       lattice.q).bind(
                real_t=self.dtype, tag_t=tags.tags.dtype, pop_t=np.uint16)
            listed = np.flatnonzero(flags.reshape(-1)).astype(np.int32)
            self.n_wall_tiles = np.int32(len(listed))
            self.wall_tiles = xp.asarray(np.append(listed, 0).astype(np.int32))
        self.solid_index = xp.asarray(np.flatnonzero(tags.solid))
        self.tag_words = xp.asarray(tags.tags if self.tags_stored else tags.tags.reshape(-1)[:1])
        self.tile_flags = xp.asarray(flags)
        self.bc = xp.asarray(tags.bc_table.astype(self.dtype).reshape(-1))
        self.edge_bc = xp.asarray(edge_table(tags))
        self.periodic = sum(1 << a for a, p in enumerate(tags.periodic) if p)
        self.open_table = xp.asarray(np.ascontiguousarray(tags.open_table, dtype=np.int32))
        values = tags.open_values if len(tags.open_values) else np.zeros((1, 4))
        self.open_values = xp.asarray(values.astype(self.dtype).reshape(-1))
        curved = CurvedLinks(lattice, tags, self.dtype)  # weights of interpolated links
        self.n_curved = np.int32(len(curved.nodes))
        self.curved_nodes = xp.asarray(np.append(curved.nodes, 0).astype(np.int32))
        self.curved_weights = xp.asarray(np.append(curved.table.reshape(-1), 0.0)
                                         .astype(self.dtype))
        buffers = 1 if self.scheme == "aa" else 2
        q = lattice.q
        pop = self.dtype if self.store == "fp32" else np.uint16
        self.buffers = [xp.empty((q, *self.shape), dtype=pop) for _ in range(buffers)]
        # 16-bit storage keeps no ρ, u: macroscopic() computes them from the stored populations
        # when asked (docs/DESIGN.md, "16-bit LW-ACM records and ρ, u on demand")
        self.lean = self.store != "fp32"
        self._fields = None  # lean: (ρ, u) of the current state, once asked for
        self._listed = None  # the nodes macroscopic_at was last asked for, on the device
        self._fields_kernels = {}  # lean: the fields16 kernel of each layout, at the first ask
        if self.lean:  # the plain kernels' rho_out, u_out: never written
            self._outputs = {"rho_out": xp.empty(1, dtype=self.dtype),
                             "u_out": xp.empty(1, dtype=self.dtype)}
        else:
            self._outputs = {}
            self.rho = xp.empty(self.shape, dtype=self.dtype)
            self.u = xp.zeros((lattice.d, *self.shape), dtype=self.dtype)
        self.current = 0
        self.phase = "post-even"
        self._graphs: dict = {}
        self._stream = None

    # -- sizes -------------------------------------------------------------------------------
    @property
    def traffic_bytes_per_node(self) -> int:
        """Populations read and written per node, at their stored size."""
        return 2 * self.lattice.q * bytes_per_value(self.store, self.dtype.itemsize)

    @property
    def memory_bytes_per_node(self) -> int:
        """Per node: populations, ρ, u (not in 16-bit storage: computed when asked, into new
        arrays not counted here) and the tag (the open-boundary values, one row of 4 reals per
        node of each open face plane, are not counted: a plane, not a volume)."""
        tags = 0 if self.tags_stored else self.tags.tags.dtype.itemsize  # not allocated
        return self.params.memory_bytes_per_node(self.lattice, self.dtype, self.backend) - tags

    # -- state -------------------------------------------------------------------------------
    def _set_canonical(self, f_post) -> None:
        xp = self.cp
        held = layouts.to_scheme(self.lattice, self.walls, self.solid_index, f_post,
                                 self.scheme, "post-even", xp)
        self.current, self.phase = 0, "post-even"
        self.buffers[0][...] = self._encoded(held)
        if len(self.buffers) > 1:
            self.buffers[1][...] = held
        if self.lean:
            self._fields = None
        else:
            self._macroscopic_from(f_post)
        self._graphs.clear()

    def _encoded(self, f, slot: slice | int = slice(None)):
        """Populations as the buffers hold them (16-bit: codes of f − w; ``slot`` picks the
        weights of the rows given)."""
        if self.store == "fp32":
            return f
        w = weights(self.lattice, self.cp)[slot]
        return to_codes(self.store, f, w, self.cp)

    def _decoded(self, held):
        """Float populations of the buffers' contents."""
        if self.store == "fp32":
            return held
        return from_codes(self.store, held, weights(self.lattice, self.cp), self.cp)

    def _macroscopic_from(self, f_post) -> None:
        """ρ, u from post-collision populations (as the NumPy reference defines them)."""
        xp = self.cp
        lat = self.lattice
        self.rho[...] = f_post.sum(axis=0)
        c = xp.asarray(lat.c.T.astype(self.dtype))
        u = xp.tensordot(c, f_post, axes=1) / self.rho
        if self.params.force is not None:
            u -= xp.asarray(self.params.force, dtype=self.dtype).reshape(-1, *[1] * lat.d) * 0.5
        u.reshape(lat.d, -1)[:, self.solid_index] = 0
        self.u[...] = u

    def initialize(self, rho, u) -> None:
        xp = self.cp
        rho = xp.asarray(rho, dtype=self.dtype)
        u = [xp.asarray(ua, dtype=self.dtype) for ua in u]
        if self.scheme == "push":
            stored = self.params.stored_velocity(u)
            f_post = xp.stack(self.lattice.equilibrium(rho, stored)).astype(self.dtype)
            self._set_canonical(f_post)
            return
        # pull and AA hold f* as it is (AA: reversed per node): fill one population of one slab
        # of planes at a time, so that the largest domains need neither a second copy of f nor
        # full-size temporaries (ρ and u may be broadcast views).
        lat = self.lattice
        slots = lat.opposite if self.scheme == "aa" else range(lat.q)
        planes = max(1, INIT_SLAB_NODES // max(1, self.nodes // self.shape[0]))
        for lo in range(0, self.shape[0], planes):
            slab = slice(lo, lo + planes)
            stored = self.params.stored_velocity([ua[slab] for ua in u])
            usq = sum(ua * ua for ua in stored)
            for i, slot in enumerate(slots):
                feq = self._encoded(lat.equilibrium_i(i, rho[slab], stored, usq), i)
                for buffer in self.buffers:
                    buffer[slot][slab] = feq
        self.current, self.phase = 0, "post-even"
        self._graphs.clear()
        self._fields = None
        if self.lean:  # ρ, u when asked, from the rounded populations (as the reference)
            return
        self.rho[...] = rho
        for a, ua in enumerate(u):
            self.u[a] = ua
        self.u.reshape(lat.d, -1)[:, self.solid_index] = 0

    def canonical(self):
        """Post-collision populations f* (device array), whatever the scheme holds."""
        held = self._decoded(self.buffers[self.current])
        return layouts.from_scheme(self.lattice, self.walls, self.solid_index, held,
                                   self.scheme, self.phase, self.cp)

    def population_rows(self):
        """f* to gather from (what the momentum exchange and the probes read). fp32:
        :meth:`canonical` itself, (Q, N); 16-bit: an object whose ``take_flat(positions)``
        decodes only the codes asked for (pull; other schemes decode one population at a
        time), so a force costs no full-size decode (a 129 M-node D3Q27 sphere would need
        28 GB more) and one gather."""
        if self.store == "fp32":
            return self.canonical().reshape(self.lattice.q, -1)
        return _DecodedPopulations(self)

    def state(self) -> dict[str, np.ndarray]:
        state = {"f": self.canonical().get(), "held": self.buffers[self.current].get(),
                 "layout": np.array(f"{self.scheme}/{self.phase}"),
                 **{k: a.get() for k, a in zip(("rho", "u"), self.macroscopic(), strict=True)},
                 "store": np.array(self.store)}
        if self.stochastic:  # the seed of the next step
            state["clock"] = np.array(self.clock)
        return state

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        f = np.asarray(state["f"])
        expected = (self.lattice.q, *self.shape)
        if f.shape != expected or f.dtype != self.dtype:
            raise ValueError(f"checkpoint holds f as {f.dtype}{f.shape}, this run needs "
                             f"{self.dtype}{expected}")
        check_state_store(state, self.store)
        self.clock = int(state.get("clock", 0))
        layout = str(state.get("layout", ""))
        same = str(state.get("store", self.store)) == self.store
        if "held" in state and layout.startswith(self.scheme + "/") and same:
            self._set_canonical(self.cp.asarray(f))  # sets solid nodes, tables, macroscopic
            self.phase = layout.split("/", 1)[1]
            self.buffers[0][...] = self.cp.asarray(state["held"])
            if len(self.buffers) > 1:
                self.buffers[1][...] = self.buffers[0]
            if not self.lean:
                self.rho[...] = self.cp.asarray(state["rho"])
                self.u[...] = self.cp.asarray(state["u"])
        else:
            self._set_canonical(self.cp.asarray(f))

    def macroscopic(self):
        """ρ and u of the current state: the arrays the last step wrote, or in 16-bit storage
        new arrays computed from the stored populations (kept until the next step)."""
        if not self.lean:
            return self.rho, self.u
        if self._fields is None:
            self._fields = self._fields_from_store()
        return self._fields

    def macroscopic_at(self, index: tuple):
        """ρ and u at the nodes ``index`` (a tuple of index arrays, or of ints and slices, into
        the node arrays: the probes' points, a profile's line): in 16-bit storage from the
        codes of those nodes alone, one thread a node (:func:`.fields16.fields_kernel` with
        ``points``; the values :meth:`macroscopic` gives there, bit for bit), so that a few
        probes cost a kernel (pull summed the gathered codes a population at a time, ~80 CuPy
        launches: 3.8 ms a sample of the sphere's 40 wake probes on an H200, 9 % of its run;
        AA and push decoded the whole state)."""
        slots = held_slots(self.lattice, self.scheme, self.phase)
        if not self.lean or self._fields is not None or self.nodes >= MAX_FIELDS_NODES:
            rho, u = self.macroscopic()
            return rho[index], u[(slice(None), *index)]
        flat = np.ravel_multi_index(_index_arrays(index, self.shape), self.shape)
        tags, walls = self._fields_tables(slots)
        rho, u = fields_from_codes(self._fields_kernel(slots, points=True),
                                   self.buffers[self.current], self.shape, self.lattice.d,
                                   self.cp, tags, self._listed_nodes(flat), walls)
        kinds = self.tags.kind.reshape(-1)[flat]  # host tags (decoded once): no copy back
        solid = np.flatnonzero(np.isin(kinds, [int(k) for k in SOLID_KINDS]))
        return self._finish_fields(rho, u, solid)

    def _listed_nodes(self, flat: np.ndarray):
        """``flat`` node positions as an int32 device array, copied once for the probes and
        profiles that ask at the same nodes every sample."""
        key = (flat.shape, flat.tobytes())
        if self._listed is None or self._listed[0] != key:
            self._listed = (key, self.cp.asarray(flat.astype(np.int32)))
        return self._listed[1]

    def _fields_from_store(self):
        """ρ = Σ f*_i and u = Σ c_i f*_i / ρ (− g/2 with a force; 0 at solid nodes) from the
        held populations, in one kernel (:mod:`.fields16`): where each node holds its own
        (pull, AA after an even step), and where they are streamed to the neighbours (push, AA
        after an odd step), past walls at rest (the same bits as the per-population sums) or
        moving ones (Ladd's term taken off as the step computed it; the sums take off the
        host's rounding of it). States of 2^31 nodes or more take the per-population path,
        which unstreams a population at a time (temporaries: two fp32 fields, and the
        decoding done in slabs of planes)."""
        slots = held_slots(self.lattice, self.scheme, self.phase)
        if self.nodes >= MAX_FIELDS_NODES:
            return self._fields_from(self._canonical_population, self.shape, self.solid_index)
        tags, walls = self._fields_tables(slots)
        rho, u = fields_from_codes(self._fields_kernel(slots), self.buffers[self.current],
                                   self.shape, self.lattice.d, self.cp, tags, walls=walls)
        return self._finish_fields(rho, u, self.solid_index)

    def _fields_tables(self, slots: tuple[int, ...] | None) -> tuple:
        """(tags, walls) of :func:`.fields16.fields_from_codes` for this layout: none where
        each node holds its own populations; the tag words and tile flags where they are
        streamed, and the boundary rows, edge table and periodic bits where walls move."""
        if slots is not None:
            return None, ()
        walls = (self.bc, self.edge_bc, np.int32(self.periodic)) if self.walls.moving else ()
        return (self.tag_words, self.tile_flags), walls

    def _fields_kernel(self, slots: tuple[int, ...] | None, points: bool = False):
        """The fields16 kernel of this layout (``slots`` of :func:`held_slots`; None: streamed),
        of every node or at listed ones, compiled at the first ask (samples, images, files and
        probes ask often)."""
        key = (slots if slots is not None else self.scheme, points)
        if key not in self._fields_kernels:
            self._fields_kernels[key] = fields_kernel(
                self.lattice, self.store, slots, self.scheme, self.box_walls, points,
                moving=slots is None and self.walls.moving)
        return self._fields_kernels[key]

    def _fields_from(self, population, shape: tuple, solid):
        """ρ, u of :meth:`_fields_from_store` from ``population(i)`` (f*_i, shaped
        ``shape``); ``solid``: the flat positions whose u is 0."""
        xp, lat = self.cp, self.lattice
        rho = xp.zeros(shape, dtype=self.dtype)
        u = xp.zeros((lat.d, *shape), dtype=self.dtype)
        for i in range(lat.q):
            f_i = population(i)
            rho += f_i
            for a, c in enumerate(lat.c[i].tolist()):
                if c:
                    u[a] += f_i if c > 0 else -f_i
            del f_i
        u /= rho
        return self._finish_fields(rho, u, solid)

    def _finish_fields(self, rho, u, solid):
        """ρ, u of summed populations: u less g/2 with a force, 0 at the flat positions
        ``solid``."""
        if self.params.force is not None:
            for a, g in enumerate(self.params.force):
                u[a] -= self.dtype.type(0.5 * g)
        u.reshape(self.lattice.d, -1)[:, solid] = 0
        return rho, u

    def _canonical_population(self, i: int):
        """f*_i (fp32, shape S) from the held 16-bit codes: what :func:`.layouts.from_scheme`
        gives for population i, without decoding the other populations."""
        xp, lat = self.cp, self.lattice
        held = self.buffers[self.current]
        opposite = lat.opposite
        reversed_ = self.scheme == "aa" and self.phase == "post-even"
        w = np.float32(lat.w[i])  # w_i = w_ī
        decoded = xp.empty(self.shape, dtype=self.dtype)
        source = held[opposite[i] if reversed_ else i]
        planes = max(1, INIT_SLAB_NODES // max(1, self.nodes // self.shape[0]))
        for lo in range(0, self.shape[0], planes):
            decoded[lo:lo + planes] = from_codes(self.store, source[lo:lo + planes], w, xp)
        if self.scheme == "pull" or reversed_:
            return decoded
        # push, AA after an odd step: slot i of node x + c_i holds f*_i(x); a link into a wall
        # came back as ī at x (less Ladd's term); solid nodes keep f* (AA: reversed)
        shift = tuple(-int(v) for v in lat.c[i][::-1])
        out = xp.roll(decoded, shift, axis=tuple(range(len(shift))))
        del decoded
        j = opposite[i]
        flat = out.reshape(-1)
        if j in self.walls.index:
            index = self.walls.index[j]
            back = from_codes(self.store, held[j].reshape(-1)[index], w, xp)
            term = self.walls.term[j]
            flat[index] = back if term is None else back - term
        if len(self.solid_index):
            solid = held[i if self.scheme == "push" else j].reshape(-1)[self.solid_index]
            flat[self.solid_index] = from_codes(self.store, solid, w, xp)
        return out

    def all_finite(self) -> bool:
        """Whether every held population is finite (checked a population and a slab of planes
        at a time, so that the largest domains need no full-size temporaries)."""
        xp = self.cp
        held = self.buffers[self.current]
        planes = max(1, INIT_SLAB_NODES // max(1, self.nodes // self.shape[0]))
        parts = [held[i][lo:lo + planes] for i in range(self.lattice.q)
                 for lo in range(0, self.shape[0], planes)]
        if not self.lean:
            return all(bool(xp.isfinite(part).all()) for part in parts)
        fmt = FORMATS[self.store]
        top = np.uint16(fmt.exp_max << fmt.man_bits)  # the all-ones exponent: ∞ or NaN
        return not any(bool(((part & top) == top).any()) for part in parts)

    # -- stepping ----------------------------------------------------------------------------
    def _launch(self, store: bool, advance: bool = True, rows: tuple[int, int] | None = None,
                planes: tuple[int, int] | None = None) -> None:
        """One step kernel on the current stream; ``rows``/``planes`` = (first, count) limit it
        to part of the y rows / z planes (a distributed run), ``advance`` False keeps the
        buffer parity (the caller launches the other parts of the same step)."""
        parity = ""
        if self.scheme == "aa":
            parity = "odd" if self.phase == "post-even" else "even"
        if self.lean:  # no ρ, u arrays: plain steps only; the fields are computed when asked
            store, self._fields = False, None
        kernel = self.kernels[(parity, store)]
        y0, ny = rows or (0, self.ny)
        z0, nz = planes or (0, self.nz)
        grid = ((self.nx + self.block - 1) // self.block, ny, nz)
        if self.scheme == "aa":
            buffers = {"f": self.buffers[0]}
        else:
            buffers = {"src": self.buffers[self.current], "dst": self.buffers[1 - self.current]}
        seed = seed_launch_values(self.clock, self.lattice.q) if self.stochastic else {}
        args = self.args.pack(self, **buffers, **self._outputs, y0=y0, z0=z0, **seed)
        kernel(grid, (self.block, 1, 1), args)  # on the current stream
        if self.split and self.n_wall_tiles:  # the flagged tiles, one warp each
            blocks = (int(self.n_wall_tiles) * TILE + self.block - 1) // self.block
            self.wall_kernels[(parity, store)](
                (blocks, 1, 1), (self.block, 1, 1),
                self.wall_args.pack(self, **buffers, **self._outputs, y0=y0, z0=z0, **seed))
        if not advance:
            return
        self.clock += 1
        if self.scheme == "aa":
            self.phase = "post-odd" if parity == "odd" else "post-even"
        else:
            self.current = 1 - self.current

    # -- distributed runs (thelma_py.parallel.DistributedEngine) ------------------------------
    def halo_arrays(self) -> list:
        """Arrays (Q, *S) whose ghost layers a distributed run fills before each step."""
        self._check_distributable()
        return [self.buffers[self.current]]

    def _check_distributable(self) -> None:
        if self.split:
            raise ValueError("cuda_options wall_launch='split' runs on one GPU (its tile list "
                             "covers the whole box); use wall_launch='fused'")
        if self.scheme != "pull":
            raise ValueError(
                f"streaming={self.scheme!r} cannot run distributed on GPUs: the halo exchange "
                "refreshes ghost layers read by a pull step (push and the in-place AA step "
                "write across the cut instead, where solid links would need a masked "
                "exchange); use streaming='pull'")

    def distribute(self, box) -> None:
        """Run on the grown box of ``box`` (a :class:`thelma_py.parallel.RankBox`): steps then
        update the owned layers only (never the ghost layers), and
        :meth:`step_distributed` overlaps the interior with the exchange."""
        self._check_distributable()
        self._plan_layers(box)
        lower = (*box.grown_lower, 0, 0)[:3]
        self.ox, self.oy, self.oz = (np.int32(v) for v in lower)

    def step_distributed(self, n: int, exchange, overlap: bool = True) -> None:
        """:meth:`OverlappedSteps.step_distributed`, counting the steps (its launches keep
        the parity; the seed of stochastic rounding is the step count)."""
        if not self.stochastic:  # the count seeds nothing
            super().step_distributed(n, exchange, overlap)
            return
        for _ in range(n):  # 16-bit storage stores no ρ, u: one step at a time costs nothing
            super().step_distributed(1, exchange, overlap)
            self.clock += 1

    def poison(self) -> None:
        """Testing aid: fill everything a step must write with NaN."""
        if len(self.buffers) > 1:
            nan = np.float32(np.nan) if self.store == "fp32" else np.uint16(
                encode(FORMATS[self.store], np.full(1, np.nan, np.float32))[0])
            self.buffers[1 - self.current].fill(nan)
        if not self.lean:
            self.rho.fill(np.nan)
            self.u.fill(np.nan)


def _index_arrays(index: tuple, shape: tuple) -> tuple:
    """``index`` with its slices spelled out: index arrays that pick the nodes ``a[index]``
    picks, in the same shape (ints drop their axis, slices keep theirs)."""
    if not any(isinstance(k, slice) for k in index):
        return index
    axes = [np.arange(n)[k] if isinstance(k, slice) else np.array([k])
            for k, n in zip(index, shape, strict=True)]
    kept = tuple(len(a) for a, k in zip(axes, index, strict=True) if isinstance(k, slice))
    return tuple(a.reshape(kept) for a in np.broadcast_arrays(*np.ix_(*axes)))


class _DecodedPopulations:
    """f* of a 16-bit :class:`CudaLbm`, decoded where read (:meth:`CudaLbm.population_rows`):
    ``take_flat(positions)`` gives f*_p(x) at flat positions p N + x of the (Q N) state, from
    those codes alone (pull: one gather, one decode) or from one population decoded at a time
    (push, AA)."""

    def __init__(self, engine: CudaLbm):
        self.engine = engine

    def take_flat(self, positions):
        e, cp = self.engine, self.engine.cp
        every = e.nodes
        population = positions // every
        if e.scheme == "pull":
            codes = e.buffers[e.current].reshape(-1)[positions]
            return from_codes(e.store, codes, weights(e.lattice, cp).reshape(-1)[population], cp)
        out = cp.empty(positions.shape, dtype=np.float32)
        for p in np.unique(population.get()):
            chosen = population == int(p)
            out[chosen] = e._canonical_population(int(p)).reshape(-1)[
                positions[chosen] - int(p) * every]
        return out

"""CUDA LBM on sparse storage: kernels from :mod:`.sparse_kernels`, launched through CuPy.

Step batching and CUDA-graph replay are :class:`thelma_py.cuda_steps.GraphSteps`'; the state,
the launches and the conversions to dense fields are this layout's own.
"""

from __future__ import annotations

import numpy as np

from thelma_py.backend import Backend
from thelma_py.codegen.compile import compile_module
from thelma_py.compute import ComputeEngine, check_memory
from thelma_py.cuda_steps import GraphSteps
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.boundaries import face_label
from thelma_py.modules.compute.lbm.collision import hold_uniforms
from thelma_py.modules.compute.lbm.sparse import SparseState, fluid_moments
from thelma_py.modules.compute.lbm.sparse_kernels import KERNELS, OPEN_KERNELS, step_args
from thelma_py.nodes import NodeTags
from thelma_py.store16 import (
    FORMATS,
    check_state_store,
    encode,
    from_codes,
    to_codes,
    weights,
)


def open_arrays(domain, lattice: Lattice, dtype, boundaries: tuple) -> dict[str, np.ndarray]:
    """Host arrays of the open-boundary kernel, one entry per open or interpolated node t: its
    stored index, its arm (index of its (kind, face) in ``boundaries``; len(boundaries) for
    interpolated nodes), its values (ux, uy, uz, ρ) for local rules, per direction the stored
    node a copy rule reads (−1: keep the bounced value), and its Bouzidi weights."""
    groups = domain.open_nodes(dtype).groups
    curved = domain.curved_links(dtype)
    count = sum(len(g.flat) for g in groups) + len(curved.nodes)
    size = max(count, 1)
    out = {"node": np.zeros(size, dtype=np.int32), "arm": np.zeros(size, dtype=np.int32),
           "values": np.zeros((size, 4), dtype=dtype),
           "src": np.full((lattice.q, size), -1, dtype=np.int32),
           "curved": np.zeros((size, lattice.q - 1, 3), dtype=dtype)}
    start = 0
    for g in groups:
        end = start + len(g.flat)
        out["node"][start:end] = g.flat
        out["arm"][start:end] = boundaries.index((g.kind, face_label(g.face)))
        if g.values is not None:
            out["values"][start:end] = g.values.T
        for i, _, targets, src in g.copies:
            out["src"][i, start + targets] = src
        start = end
    out["node"][start:count] = curved.nodes
    out["arm"][start:count] = len(boundaries)
    out["curved"][start:count] = curved.table
    out["count"] = count
    return out


class CudaSparseLbm(SparseState, GraphSteps, ComputeEngine):
    """Sparse-storage LBM on one GPU (pull, two buffers of (Q, N))."""

    buffer_count = 2
    kernel_names = KERNELS
    scheme = "pull"

    def __init__(self, params, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        import cupy

        self.cp = cupy
        self._setup(params, lattice, tags, backend, dtype)
        dom = self.domain
        self.phase, self.current = "post-even", 0
        self.nodes = dom.count
        check_memory(backend, dom.count, self.memory_bytes_per_node,
                     hint="memory is counted per stored (non-solid) node")
        boundaries = tuple(sorted(tags.open_kinds))
        self.source = params.kernel_source(
            lattice, self.dtype, moving_walls=bool(np.any(tags.bc_table[:, :3] != 0)),
            boundaries=boundaries, interpolated=bool(len(tags.curved_nodes)))
        self._compiled = module = compile_module(self.source)
        self.kernels = {key: module.get_function(name) for key, name in self.kernel_names.items()}
        self.block = params.tuning()["block"]
        xp = cupy
        self.nbr = xp.asarray(dom.nbr)
        self.node_index = xp.asarray(dom.nodes.astype(np.int32))
        self.bc = xp.asarray(tags.bc_table.astype(self.dtype).reshape(-1))
        opened = open_arrays(dom, lattice, self.dtype, boundaries)
        self.n_open = int(opened.pop("count"))
        self.open_kernels = ({store: module.get_function(name)
                              for store, name in OPEN_KERNELS.items()} if self.n_open else {})
        self.open = {name: xp.asarray(np.ascontiguousarray(a)) for name, a in opened.items()}
        self.store = params.store
        types = {"real_t": self.dtype, "pop_t": np.uint16}
        self.omega = self.dtype.type(params.omega)
        self.omega_minus = self.dtype.type(params.omega_minus)
        uniforms = hold_uniforms(self, params.relaxation(lattice))
        self.args = step_args(self.scheme, store=self.store, uniforms=uniforms).bind(**types)
        self.open_args = step_args("pull", open_nodes=True, store=self.store,
                                   uniforms=uniforms).bind(**types)
        pop = self.dtype if self.store == "fp32" else np.uint16
        self.buffers = [xp.empty((lattice.q, dom.count), dtype=pop)
                        for _ in range(self.buffer_count)]
        self._w = weights(lattice, xp).reshape(-1, 1)  # shifts of 16-bit storage (Q, 1)
        self.rho = xp.empty(dom.count, dtype=self.dtype)
        self.u = xp.zeros((lattice.d, dom.count), dtype=self.dtype)
        self._graphs: dict = {}
        self._stream = None

    # -- state -------------------------------------------------------------------------------
    def _set(self, f_sparse, rho=None, u=None) -> None:
        xp = self.cp
        f = xp.asarray(f_sparse)
        self._hold(f)
        if rho is None:
            rho, u = fluid_moments(self.lattice, self.params.force, f, xp)
        self.rho[...] = xp.asarray(rho)
        self.u[...] = xp.asarray(u)
        self.current, self.phase = 0, "post-even"
        self._graphs.clear()

    def _encoded(self, f, slot: slice | int = slice(None)):
        """Populations as the buffers hold them (16-bit: codes of f − w; w_i = w_ī, so a
        reversed slot takes the same shift)."""
        return f if self.store == "fp32" else to_codes(self.store, f, self._w[slot], self.cp)

    def _decoded(self, held):
        """Float populations of the buffers' contents."""
        return held if self.store == "fp32" else from_codes(self.store, held, self._w, self.cp)

    def _hold(self, f_post) -> None:
        """Put post-collision populations (Q, N) in the buffers as the scheme holds them."""
        for buffer in self.buffers:
            buffer[...] = self._encoded(f_post)

    def _slot(self, i: int) -> int:
        """Buffer slot of post-collision population i (the AA scheme reverses them)."""
        return i

    def canonical_sparse(self):
        """Post-collision populations (Q, N) on the device."""
        return self._decoded(self.buffers[self.current])

    def initialize(self, rho, u) -> None:
        xp = self.cp
        self._keep_solid_rho(self.backend.to_host(rho))
        rho = self.domain.gather(xp.asarray(rho, dtype=self.dtype), self.node_index)
        u = [self.domain.gather(xp.asarray(ua, dtype=self.dtype), self.node_index) for ua in u]
        stored = self.params.stored_velocity(u)
        usq = sum(ua * ua for ua in stored)
        for i in range(self.lattice.q):  # one population at a time: no second copy of f
            feq = self._encoded(self.lattice.equilibrium_i(i, rho, stored, usq), i)
            for buffer in self.buffers:
                buffer[self._slot(i)] = feq
        self.rho[...] = rho
        for a, ua in enumerate(u):
            self.u[a] = ua
        self.current, self.phase = 0, "post-even"
        self._graphs.clear()

    def canonical(self):
        """Dense post-collision populations (Q, *S) on the device, zero at solid nodes (for
        forces; allocated on each call)."""
        return self.domain.scatter(self.canonical_sparse(), 0.0, self.node_index, self.cp)

    def state(self) -> dict[str, np.ndarray]:
        return {"f": self.canonical_sparse().get(), "solid_rho": self.solid_rho.copy(),
                "rho": self.rho.get(), "u": self.u.get(), "store": np.array(self.store)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        check_state_store(state, self.store)
        f = self._sparse_f(state)
        same = np.asarray(state["f"]).shape == f.shape and "rho" in state
        self._set(f, *((state["rho"], state["u"]) if same else ()))

    def fluid_macroscopic(self):
        """ρ (N,) and u (D, N) at the stored nodes (device arrays, no copy)."""
        return self.rho, self.u

    def macroscopic(self):
        return self._dense_fields(self.rho, self.u, self.node_index, self.cp)

    # -- stepping ----------------------------------------------------------------------------
    def _launch(self, store: bool) -> None:
        buffers = {"src": self.buffers[self.current], "dst": self.buffers[1 - self.current]}
        block = (self.block, 1, 1)
        self.kernels[store](((self.domain.count + self.block - 1) // self.block,), block,
                            self.args.pack(self, **buffers))
        if self.n_open:  # rebuild the open-boundary nodes over what the bulk kernel wrote
            o = self.open
            self.open_kernels[store](
                ((self.n_open + self.block - 1) // self.block,), block,
                self.open_args.pack(self, **buffers, open_node=o["node"], open_arm=o["arm"],
                                    open_values=o["values"], open_src=o["src"],
                                    curved=o["curved"]))
        self.current = 1 - self.current

    def poison(self) -> None:
        """Testing aid: fill everything a step must write with NaN."""
        self.buffers[1 - self.current].fill(np.nan if self.store == "fp32" else np.uint16(
            encode(FORMATS[self.store], np.full(1, np.nan, np.float32))[0]))
        self.rho.fill(np.nan)
        self.u.fill(np.nan)

"""The NumPy LBM engine on sparse storage (:mod:`.sparse`): the reference of the sparse CUDA
engines."""

from __future__ import annotations

import numpy as np

from thelma_py.backend import Backend
from thelma_py.codegen.expr import identity_let
from thelma_py.compute import ComputeEngine, node_blocks
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import collide
from thelma_py.modules.compute.lbm.sparse import SparseState, fluid_moments
from thelma_py.nodes import NodeTags
from thelma_py.store16 import check_state_store, round_trip


class NumpySparseLbm(SparseState, ComputeEngine):
    """NumPy LBM on sparse storage: the reference for the sparse CUDA engine.

    State: post-collision populations ``f`` (Q, N) at the stored nodes. One step gathers f_i
    through the neighbour table (bounce-back entries read f*_ī of the node itself plus Ladd's
    term), overwrites interpolated links, rebuilds open-boundary populations, then collides,
    exactly as :class:`NumpyLbm`.
    """

    def __init__(self, params, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        self._setup(params, lattice, tags, backend, dtype)
        dom = self.domain
        self.relax = params.relaxation(lattice)
        self.walls = dom.wall_links(self.dtype)
        self.open = dom.open_nodes(self.dtype)
        self.open.force = params.force  # the local rules impose u − g/2 (as dense does)
        self.curved = dom.curved_links(self.dtype)
        own = np.arange(dom.count)
        # gather index per direction; bounce-back entries read anything (own node), then fixed
        self._gather = [np.where(row >= 0, row, own) for row in dom.nbr]
        self.f = np.zeros((lattice.q, dom.count), dtype=self.dtype)
        self._spare = np.empty_like(self.f)
        self.omega = self.dtype.type(params.omega)
        self.omega_minus = self.dtype.type(params.omega_minus)
        self.uniforms = self.relax.uniform_values(self.omega)  # as the CUDA engines hold them
        self._blocks = node_blocks(dom.count, lattice.q * self.dtype.itemsize)

    def initialize(self, rho, u) -> None:
        rho = np.asarray(rho, dtype=self.dtype)
        self._keep_solid_rho(rho)
        u = self.params.stored_velocity([self.domain.gather(np.asarray(ua, dtype=self.dtype))
                                         for ua in u])
        self.f = self._stored(np.array(self.lattice.equilibrium(self.domain.gather(rho), u),
                                       dtype=self.dtype))

    def _stored(self, f: np.ndarray) -> np.ndarray:
        """``f`` (Q, N) rounded through the population storage (16-bit: f − w to 16 bits)."""
        if self.params.store == "fp32":
            return f
        w = np.asarray(self.lattice.w, dtype=np.float32).reshape(-1, 1)
        return round_trip(self.params.store, f, w)

    def stream(self, f: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Pull through the neighbour table: pre-collision populations (Q, N) into ``out``."""
        out[0] = f[0]
        for i, index in enumerate(self._gather, start=1):
            np.take(f[i], index, out=out[i])
        opposite = self.lattice.opposite
        for i, (where, term) in self.walls.items():
            bounced = f[opposite[i], where]
            out[i, where] = bounced if term is None else bounced + term
        if self.curved:
            self.curved.apply(f, out)
        return out

    def step(self, n: int = 1) -> None:
        force = self.params.force
        q = self.lattice.q
        for _ in range(n):
            new = self.stream(self.f, self._spare)
            if self.open:
                self.open.apply(new)
            for block in self._blocks:
                post, _, _ = collide(self.relax, list(new[:, block]), identity_let, self.omega,
                                     self.omega_minus, force, uniforms=self.uniforms)
                for i in range(q):
                    new[i, block] = post[i]
            if self.params.store != "fp32":
                new[...] = self._stored(new)
            self.f, self._spare = new, self.f

    def fluid_macroscopic(self):
        """ρ (N,) and u (D, N) at the stored nodes."""
        return fluid_moments(self.lattice, self.params.force, self.f)

    def macroscopic(self):
        return self._dense_fields(*self.fluid_macroscopic())

    def canonical(self) -> np.ndarray:
        """Dense post-collision populations (Q, *S), zero at solid nodes (for forces)."""
        return self.domain.scatter(self.f, 0.0)

    def state(self) -> dict[str, np.ndarray]:
        return {"f": self.f.copy(), "solid_rho": self.solid_rho.copy(),
                "store": np.array(self.params.store)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        check_state_store(state, self.params.store)
        self.f = self._stored(np.array(self._sparse_f(state), dtype=self.dtype))
        self._spare = np.empty_like(self.f)

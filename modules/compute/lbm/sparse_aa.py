"""Sparse storage with the in-place AA scheme (Bailey et al. 2009): one population buffer
(the engine; its kernels are in :mod:`.sparse_kernels`).

The same neighbour table serves both directions: the upstream node of ī is the downstream node
of i (x − c_ī = x + c_i). Naming follows :mod:`.kernels`:

* ``odd`` (runs on the reversed state f*, slot ī holding f*_i): reads f_i from slot ī of the
  upstream entry j = nbr[i − 1] (j < 0: slot i of the node itself plus Ladd's term of row
  −1 − j), collides, writes f*_i to slot i of the downstream entry k = nbr[ī − 1] (k < 0: to
  slot ī of the node itself plus Ladd's term for ī). The state is then streamed, pre-collision.
* ``even``: reads the node's own slots, collides, writes f*_i to its own slot ī. No table.

Each location is read and written by one thread only, so steps are race-free in place. Open
boundaries and interpolated bodies rebuild nodes from the previous step's values in a second
kernel, which the in-place scheme has already overwritten: they need streaming='pull'.
"""

from __future__ import annotations

import numpy as np

from thelma_py.modules.compute.lbm.sparse_cuda import CudaSparseLbm
from thelma_py.modules.compute.lbm.sparse_kernels import AA_KERNELS


def aa_canonical(lattice, nbr, walls: dict, held, phase: str, xp=np):
    """Post-collision f* (Q, N) from what the AA buffer holds: per node reversed after an
    even step; streamed (pre-collision) after an odd one, undone through the neighbour table
    (``walls``: :meth:`.sparse.SparseDomain.wall_links` on the same backend)."""
    opposite = lattice.opposite
    if phase == "post-even":
        return held[opposite].copy()
    out = xp.empty_like(held)
    out[0] = held[0]
    for i in range(1, lattice.q):
        j = int(opposite[i])
        down = nbr[j - 1]  # x + c_i: population i of x arrived there
        out[i] = held[i][xp.where(down >= 0, down, 0)]
        if j in walls:  # x + c_i solid: it came back into slot ī of x with Ladd's term
            where, term = walls[j]
            back = held[j][where]
            out[i][where] = back if term is None else back - term
    return out


class CudaSparseAaLbm(CudaSparseLbm):
    """Sparse storage, in-place AA on one GPU: one buffer of (Q, N)."""

    buffer_count = 1
    kernel_names = AA_KERNELS
    scheme = "aa"

    def __init__(self, params, lattice, tags, backend, dtype):
        super().__init__(params, lattice, tags, backend, dtype)
        cp = self.cp
        self.walls = {i: (cp.asarray(where), None if term is None else cp.asarray(term))
                      for i, (where, term) in self.domain.wall_links(self.dtype).items()}

    def _hold(self, f_post) -> None:
        self.buffers[0][...] = self._encoded(f_post[self.lattice.opposite])

    def _slot(self, i: int) -> int:
        return int(self.lattice.opposite[i])

    def canonical_sparse(self):
        return aa_canonical(self.lattice, self.nbr, self.walls, self._decoded(self.buffers[0]),
                            self.phase, self.cp)

    def state(self) -> dict[str, np.ndarray]:
        return {**super().state(), "held": self.buffers[0].get(),
                "layout": np.array(f"aa/{self.phase}")}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        super().load_state(state)
        same = str(state.get("store", self.store)) == self.store
        if "held" in state and str(state.get("layout", "")).startswith("aa/") and same:
            self.buffers[0][...] = self.cp.asarray(state["held"])
            self.phase = str(state["layout"]).split("/", 1)[1]

    def _launch(self, store: bool) -> None:
        parity = "odd" if self.phase == "post-even" else "even"
        self.kernels[(parity, store)](((self.domain.count + self.block - 1) // self.block,),
                                      (self.block, 1, 1), self.args.pack(self, f=self.buffers[0]))
        self.phase = "post-odd" if parity == "odd" else "post-even"

    def poison(self) -> None:
        """Testing aid: ρ and u must be written by the last step (the buffer is in place)."""
        self.rho.fill(np.nan)
        self.u.fill(np.nan)

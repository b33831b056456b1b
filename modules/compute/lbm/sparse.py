"""Sparse storage (indirect addressing): only non-solid nodes are stored (storage="sparse").

Porous media and vessels fill a small part of their bounding box; a dense lattice spends most of
its memory and bandwidth on solid nodes. Here the stored nodes are the fluid and open-boundary
nodes of the box in its own row order (z, y, x lexicographic, x fastest), so that runs along x
stay contiguous and the pull gathers coalesce. Populations are (Q, N) structure of arrays.

The neighbour table ``nbr`` (int32, shape (Q − 1, N); the rest population needs none) gives, for
direction i = 1..Q−1 at row i − 1, the sparse index of the upstream node x − c_i (periodic wrap
applied when building it). When x − c_i is solid (a stored wall node or the virtual wall beyond a
non-periodic face) the entry is −1 − r, with r the wall's boundary row, so that the kernel needs
no other lookup: f_i(x) = f*_ī(x) + Ladd's term from row r's wall velocity.

Open-boundary nodes reuse :class:`.open_nodes.OpenNodes` with its node indices mapped to sparse
ones. This module is the layout and what the engines share (:class:`SparseState`); the engines
are :mod:`.sparse_numpy` (the reference), :mod:`.sparse_cuda` (pull) and :mod:`.sparse_aa`
(in place), chosen by :func:`.sparse_engines.create_sparse`; the kernels :mod:`.sparse_kernels`.
"""

from __future__ import annotations

import numpy as np

from thelma_py.backend import Backend
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import wall_momentum
from thelma_py.modules.compute.lbm.interpolated import CurvedLinks
from thelma_py.modules.compute.lbm.open_nodes import OpenNodes
from thelma_py.nodes import NodeTags

STORAGES = ("dense", "sparse")


def wall_row(encoded):
    """Boundary row of bounce-back entries of the neighbour table (entries < 0)."""
    return -1 - encoded


class SparseDomain:
    """The stored nodes of a geometry and their neighbour table (host arrays).

    ``nodes``: dense flat index of each stored node, ascending (row order), int64 (N,).
    ``nbr``: int32 (Q − 1, N), see the module docstring. ``index``: dense flat index → sparse
    index, −1 at solid nodes (int64, one entry per box node: host memory only).
    """

    def __init__(self, lattice: Lattice, tags: NodeTags):
        self.lattice, self.tags = lattice, tags
        shape = tags.tags.shape
        self.shape = shape
        fluid = tags.fluid.reshape(-1)
        self.nodes = np.flatnonzero(fluid)
        if len(self.nodes) >= 2**31 - 1:
            raise ValueError(f"{len(self.nodes):,} stored nodes: the int32 neighbour table "
                             "holds at most 2^31 - 2; use a smaller domain")
        self.index = np.full(fluid.size, -1, dtype=np.int64)
        self.index[self.nodes] = np.arange(len(self.nodes))
        coords = np.unravel_index(self.nodes, shape)  # array axes: (z, y, x) or (y, x)
        words = tags.tags.reshape(-1)[self.nodes]
        self.nbr = np.empty((lattice.q - 1, len(self.nodes)), dtype=np.int32)
        for i in range(1, lattice.q):
            c = lattice.c[i][::-1]  # array-axis order
            upstream = np.ravel_multi_index(
                tuple((x - int(ci)) % n for x, ci, n in zip(coords, c, shape, strict=True)),
                shape)
            entry = self.index[upstream]
            wall = tags.layout.crosses_wall(words, i)
            # the wall's row: the halo array holds every node and the virtual layer beyond
            window = tuple(slice(1 - int(ci), 1 - int(ci) + n) for ci, n in
                           zip(c, shape, strict=True))
            rows = tags.halo_bc_id[window].reshape(-1)[self.nodes[wall]].astype(np.int64)
            entry[wall] = wall_row(rows)
            if (entry[~wall] < 0).any():
                raise AssertionError(f"direction {i}: a link without a wall bit reaches a "
                                     "solid node; the tags are inconsistent")
            self.nbr[i - 1] = entry

    @property
    def count(self) -> int:
        """N, the number of stored (non-solid) nodes."""
        return len(self.nodes)

    @property
    def fluid_fraction(self) -> float:
        return self.count / self.index.size

    def wall_links(self, dtype) -> dict[int, tuple[np.ndarray, np.ndarray | None]]:
        """Per direction i: (sparse positions whose population i bounces back, Ladd's term
        there as ``dtype`` or None where every such wall is at rest), decoded from ``nbr``."""
        out = {}
        table = self.tags.bc_table
        for i in range(1, self.lattice.q):
            where = np.flatnonzero(self.nbr[i - 1] < 0)
            if not len(where):
                continue
            row = table[wall_row(self.nbr[i - 1, where])]
            term = np.asarray(wall_momentum(self.lattice, i, [row[:, a] for a in range(
                self.lattice.d)], row[:, 3]), dtype=dtype)
            out[i] = (where, term if np.any(term) else None)
        return out

    def open_nodes(self, dtype) -> OpenNodes:
        """The open-boundary groups of :class:`OpenNodes` with sparse node indices, so that
        :meth:`OpenNodes.apply` runs unchanged on (Q, N) populations."""
        nodes = OpenNodes(self.lattice, self.tags, dtype)
        for group in nodes.groups:
            group.flat = self.index[group.flat]
            group.copies = [(i, k, targets, self.index[src])
                            for i, k, targets, src in group.copies]
        return nodes

    def curved_links(self, dtype) -> CurvedLinks:
        """:class:`CurvedLinks` (interpolated bounce-back) with sparse node indices, so that
        :meth:`CurvedLinks.apply` runs unchanged on (Q, N) populations. ``nodes`` keeps the
        dense order of ``NodeTags.curved_nodes`` (the rows of ``table``)."""
        curved = CurvedLinks(self.lattice, self.tags, dtype)
        for i, (flat, nxt, weights, term) in curved.links.items():
            x, beyond = self.index[flat], self.index[nxt]
            # x + c_i solid or beyond a face: weight 0 there; read the node itself instead
            curved.links[i] = (x, np.where(beyond >= 0, beyond, x), weights, term)
        curved.nodes = self.index[curved.nodes]
        return curved

    def gather(self, dense, nodes=None):
        """Values at the stored nodes of a dense array of shape (*C, *S): shape (*C, N).
        ``nodes`` is :attr:`nodes` on the array's backend (default: the host copy)."""
        lead = dense.shape[: dense.ndim - len(self.shape)]
        return dense.reshape(*lead, -1)[..., self.nodes if nodes is None else nodes]

    def scatter(self, sparse, fill, nodes=None, xp=np):
        """Dense array (*C, *S) holding ``sparse`` (*C, N) at the stored nodes, ``fill``
        (a dense array or a number) elsewhere."""
        lead = sparse.shape[:-1]
        if np.isscalar(fill):
            out = xp.full((*lead, self.index.size), fill, dtype=sparse.dtype)
        else:
            out = xp.array(fill, dtype=sparse.dtype).reshape(*lead, -1)
        out[..., self.nodes if nodes is None else nodes] = sparse
        return out.reshape(*lead, *self.shape)


def sparse_bytes_per_node(lattice: Lattice, dtype, streaming: str = "pull",
                          store: str = "fp32") -> dict[str, int]:
    """Per stored (fluid) node: bytes one update moves (two population passes and the neighbour
    table; AA reads the table every other step only) and device bytes held (population
    buffers: two for pull, one for AA; the table, ρ and u, the node's dense index for the
    scatter to dense fields). ``store``: populations of 2 bytes in 16-bit storage."""
    real = np.dtype(dtype).itemsize
    pop = real if store == "fp32" else 2
    table = 4 * (lattice.q - 1)
    aa = streaming == "aa"
    return {"traffic": 2 * lattice.q * pop + (table // 2 if aa else table),
            "memory": (1 if aa else 2) * lattice.q * pop + table + (1 + lattice.d) * real + 4}


AA_REFUSAL = ("open boundaries and interpolated bodies rebuild nodes from the previous step's "
              "populations, which the in-place AA scheme has overwritten; use streaming='pull' "
              "with storage='sparse'")


class SparseState:
    """What both sparse engines share: the domain, sizes, and the dense-field bookkeeping.

    ρ at solid nodes is reported as the dense engines report it: the initial density there
    (kept on the host); u is zero there.
    """

    def _setup(self, params, lattice: Lattice, tags: NodeTags, backend: Backend, dtype) -> None:
        self.params, self.lattice, self.tags, self.backend, self.dtype = (
            params, lattice, tags, backend, np.dtype(dtype))
        self.domain = SparseDomain(lattice, tags)
        self.solid_rho = np.ones(tags.tags.shape, dtype=self.dtype)
        self.solid_rho[~tags.solid] = np.nan  # never shown: overwritten by the fluid values

    @property
    def _bytes(self) -> dict[str, int]:
        one = getattr(self, "buffer_count", 2) == 1  # the NumPy reference pulls
        return sparse_bytes_per_node(self.lattice, self.dtype, "aa" if one else "pull",
                                     self.params.store)

    @property
    def traffic_bytes_per_node(self) -> int:
        """Bytes per FLUID (stored) node and step: 2 Q reals plus the int32 neighbour row
        (AA: half of it on average)."""
        return self._bytes["traffic"]

    @property
    def memory_bytes_per_node(self) -> int:
        """Device bytes per FLUID (stored) node; dense ρ, u returned by :meth:`macroscopic`
        are allocated when asked for and not counted."""
        return self._bytes["memory"]

    @property
    def stored_fraction(self) -> float:
        """Stored (fluid) nodes per lattice node: turns per-fluid-node figures into
        per-lattice-node ones (the solver's MLUPS count every lattice node)."""
        return self.domain.fluid_fraction

    def _keep_solid_rho(self, rho_dense, f_dense=None) -> None:
        solid = self.tags.solid
        if f_dense is not None:
            rho_dense = np.asarray(f_dense).sum(axis=0)
        self.solid_rho[solid] = np.asarray(rho_dense, dtype=self.dtype)[solid]

    def _sparse_f(self, state: dict[str, np.ndarray]) -> np.ndarray:
        """Sparse f* (Q, N) from a checkpoint: sparse as :meth:`state` wrote it, or the dense
        canonical f* (Q, *S) of a dense engine (its solid nodes give the solid ρ)."""
        f = np.asarray(state["f"])
        q, n = self.lattice.q, self.domain.count
        if f.shape == (q, *self.domain.shape) and f.dtype == self.dtype:
            self._keep_solid_rho(None, f)
            return np.ascontiguousarray(self.domain.gather(f))
        if f.shape != (q, n) or f.dtype != self.dtype:
            raise ValueError(f"checkpoint holds f as {f.dtype}{f.shape}, this sparse run needs "
                             f"{self.dtype}{(q, n)} (or dense {(q, *self.domain.shape)})")
        if "solid_rho" in state:
            self.solid_rho[...] = state["solid_rho"]
        return f

    def _dense_fields(self, rho, u, nodes=None, xp=np):
        """Dense ρ (S) and u (D, *S) from stored-node values."""
        rho_d = self.domain.scatter(rho, xp.asarray(self.solid_rho), nodes, xp)
        u_d = self.domain.scatter(u, 0.0, nodes, xp)
        return rho_d, u_d

    def halo_arrays(self):
        raise NotImplementedError("storage='sparse' runs on one domain; distributed runs "
                                  "need storage='dense'")

    def distribute(self, box) -> None:
        self.halo_arrays()


def fluid_moments(lattice: Lattice, force, f, xp=np):
    """ρ (N,) and u (D, N) from post-collision populations (Q, N), as the dense engines."""
    rho = f.sum(axis=0)
    u = xp.tensordot(xp.asarray(lattice.c.T.astype(f.dtype)), f, axes=1) / rho
    if force is not None:
        u -= xp.asarray(force, dtype=f.dtype).reshape(-1, 1) * 0.5
    return rho, u

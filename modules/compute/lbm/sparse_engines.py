"""Which engine a sparse-storage run gets (``Lbm(storage="sparse")``): NumPy, or on a GPU
pull with two buffers or AA in place. The CUDA engines are imported only when built."""

from __future__ import annotations

import numpy as np

from thelma_py.backend import Backend
from thelma_py.compute import ComputeEngine
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.sparse import AA_REFUSAL
from thelma_py.modules.compute.lbm.sparse_numpy import NumpySparseLbm
from thelma_py.nodes import NodeTags


def create_sparse(params, lattice: Lattice, tags: NodeTags, backend: Backend,
                  dtype) -> ComputeEngine:
    """The sparse engine for ``params`` (``Lbm`` with storage='sparse')."""
    if params.streaming not in ("pull", "aa"):
        raise ValueError(f"storage='sparse' streams by pull (two buffers) or AA (one); "
                         f"streaming={params.streaming!r} is not available with it")
    if params.streaming == "aa" and (tags.open_kinds or len(tags.curved_nodes)):
        raise ValueError(AA_REFUSAL)
    if backend.is_gpu and params.streaming == "aa":
        from thelma_py.modules.compute.lbm.sparse_aa import CudaSparseAaLbm

        return CudaSparseAaLbm(params, lattice, tags, backend, np.dtype(dtype))
    if backend.is_gpu:
        from thelma_py.modules.compute.lbm.sparse_cuda import CudaSparseLbm

        return CudaSparseLbm(params, lattice, tags, backend, np.dtype(dtype))
    return NumpySparseLbm(params, lattice, tags, backend, np.dtype(dtype))

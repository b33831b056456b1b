"""The compute interface every compute plug-in offers, whatever its scheme or backend.

A compute *plug-in* is a frozen attrs class of parameters (registered in the registry). Its
:meth:`create` builds an *engine* for one lattice, geometry, backend and precision. Engines own
their state and its layout; the solver only ever calls the methods of :class:`ComputeEngine`,
which is what makes LBM and LW-ACM swappable by one word in a config script.
"""

from __future__ import annotations

import abc
from typing import Protocol, runtime_checkable

import numpy as np

from thelma_py.backend import Backend
from thelma_py.lattice import Lattice
from thelma_py.memory import MARGIN
from thelma_py.nodes import NodeTags


class ComputeEngine(abc.ABC):
    """State and time stepping of one compute plug-in on one backend."""

    lattice: Lattice
    tags: NodeTags
    backend: Backend
    dtype: np.dtype
    halo_fields: bool = False
    """Distributed runs exchange whole nodes of :meth:`halo_arrays` (every component), not
    only the populations that cross a face (see :class:`DistributableEngine`)."""
    stored_fraction: float = 1
    """Stored nodes per lattice node: below 1 for sparse engines, which count their
    ``*_bytes_per_node`` per stored node."""

    @abc.abstractmethod
    def initialize(self, rho, u) -> None:
        """Set the state from density (shape S) and velocity (shape (D, *S)), backend arrays."""

    @abc.abstractmethod
    def step(self, n: int = 1) -> None:
        """Advance ``n`` time steps."""

    @abc.abstractmethod
    def macroscopic(self):
        """(ρ, u) at the current step as backend arrays; solid nodes have u = 0."""

    @abc.abstractmethod
    def state(self) -> dict[str, np.ndarray]:
        """Everything needed to continue bit for bit, as host arrays (for checkpoints)."""

    @abc.abstractmethod
    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`state` returned."""

    @property
    @abc.abstractmethod
    def traffic_bytes_per_node(self) -> int:
        """Bytes one node update must move through device memory at the least."""

    @property
    @abc.abstractmethod
    def memory_bytes_per_node(self) -> int:
        """Device bytes held per node (state, tags, buffers)."""

    def describe(self) -> str:
        return f"{type(self).__name__}({self.lattice.name}, {self.dtype.name}, {self.backend.name})"


@runtime_checkable
class ComputePlugin(Protocol):
    """The parameters of a scheme (a registered compute plug-in): they build its engine."""

    def create(self, lattice: Lattice, tags: NodeTags, backend: Backend,
               dtype: np.dtype) -> ComputeEngine: ...


@runtime_checkable
class DistributableEngine(Protocol):
    """An engine that runs on one rank's grown box (:class:`thelma_py.parallel.RankBox`).

    Before each step the exchange fills the ghost layers of :meth:`halo_arrays`: populations
    (Q, *S), of which those crossing a face travel, or whole nodes when the engine sets
    ``halo_fields``. GPU engines also offer ``distribute(box)``, which refuses what they
    cannot run exactly."""

    def halo_arrays(self) -> list: ...


@runtime_checkable
class OverlappingEngine(DistributableEngine, Protocol):
    """A distributable engine that steps its interior while the halos travel."""

    def step_distributed(self, n: int, exchange, overlap: bool = True) -> None: ...


BLOCK_BYTES = 1 << 20
"""Bytes of state per block of nodes in the NumPy engines (tuned on a 2-core CPU)."""


def node_blocks(nodes: int, bytes_per_node: int) -> list[slice]:
    """Slices of at most :data:`BLOCK_BYTES` of state over ``nodes`` nodes: NumPy engines
    collide block by block so that the temporaries stay in cache (elementwise arithmetic
    makes the result independent of the blocking)."""
    block = max(1, BLOCK_BYTES // bytes_per_node)
    return [slice(a, min(a + block, nodes)) for a in range(0, nodes, block)]


def check_memory(backend: Backend, nodes: int, bytes_per_node: int, hint: str = "") -> None:
    """Refuse to allocate more than the device has free, with the numbers and what to try."""
    memory = backend.memory()
    if memory is None:
        return
    free, total = memory
    need = nodes * bytes_per_node
    if need > MARGIN * free:
        raise MemoryError(
            f"the domain needs {need / 2**30:.2f} GiB of device memory ({nodes:,} nodes x "
            f"{bytes_per_node} B) but only {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is "
            f"free; use a smaller domain{', ' + hint if hint else ''}")

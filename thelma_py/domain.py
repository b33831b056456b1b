"""What the solver needs of a geometry: the typed contract between the core and geometry
plug-ins (``tp.geometry.Geometry`` is the built-in one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from thelma_py.lattice import Lattice
from thelma_py.nodes import NodeTags


@runtime_checkable
class Domain(Protocol):
    """A box of ``shape`` nodes (nx, ny[, nz]) that tags any sub-box of itself."""

    shape: tuple[int, ...]
    periodic: tuple[bool, ...]

    @property
    def dim(self) -> int: ...

    @property
    def node_count(self) -> int: ...

    def evaluate(self, lattice: Lattice, lower: Sequence[int] | None = None,
                 shape: Sequence[int] | None = None, ghost: bool = False) -> NodeTags:
        """Node tags of the sub-box at ``lower`` with ``shape`` nodes (default: all); with
        ``ghost`` it may reach one node beyond the box (a distributed run's ghost layer)."""
        ...

    def coordinates(self, lower: Sequence[int] | None = None,
                    shape: Sequence[int] | None = None) -> tuple[np.ndarray, ...]:
        """Global coordinates (x, y[, z]) of a sub-box's nodes, as broadcastable arrays."""
        ...

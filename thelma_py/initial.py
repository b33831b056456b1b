"""The init contract: initial density and velocity on the nodes of a sub-box."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from thelma_py.registry import create


@runtime_checkable
class InitPlugin(Protocol):
    """Gives host arrays (ρ of ``shape``, u of (D, *shape)) for nodes at ``coords``."""

    def fields(self, coords: tuple[np.ndarray, ...], shape: tuple[int, ...],
               window: tuple[slice, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``coords``: global (x, y[, z]), broadcastable; ``window``: this sub-box's slices of
        global arrays (None for one domain)."""
        ...


def default_init() -> InitPlugin:
    """The initial state when none is given: the ``equilibrium`` init plug-in (at rest, ρ = 1),
    looked up by name so that the core imports no plug-in."""
    return create("init", "equilibrium")

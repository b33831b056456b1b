"""Memory estimate of a domain before anything large is allocated.

The solver holds, per lattice node: the tag word (host), the initial fields ρ and u in float64
while the engine is initialised (host), and the engine's state (host on the CPU, device on a
GPU) as its compute plug-in states it (``memory_bytes_per_node(lattice, dtype, backend)``;
plug-ins without it, or storage that depends on the geometry, count nothing there). The sum is
a lower bound: a domain whose lower bound does not fit is refused at once, with the memory it
would need and the largest domain of the same proportions that fits, instead of a MemoryError
(or the OOM killer) after seconds of allocation.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import attrs
import numpy as np

from thelma_py.backend import Backend
from thelma_py.lattice import Lattice
from thelma_py.tags import TagLayout

MARGIN = 0.95
"""Fraction of the available memory a domain may take."""


def host_available() -> int | None:
    """Bytes of host memory available to a new allocation (Linux: MemAvailable), or None
    where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


@attrs.frozen
class Estimate:
    """Bytes per lattice node by where they live and what they hold."""

    host: dict[str, int]
    device: dict[str, int]

    @classmethod
    def of(cls, lattice: Lattice, compute: object, backend: Backend, dtype) -> Estimate:
        per_node = getattr(compute, "memory_bytes_per_node", None)
        state = per_node(lattice, np.dtype(dtype), backend) if callable(per_node) else None
        tags = TagLayout(lattice).dtype.itemsize
        host = {"tags": tags, "initial fields": (1 + lattice.d) * 8}
        device = {}
        if state and backend.is_gpu:  # the engine's figure counts its device copy of the tags
            device["compute state"] = int(state)
        elif state:  # on the host it shares the solver's tags
            host["compute state"] = int(state) - tags
        return cls(host, device)


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.2f} GiB" if nbytes < 2**40 else f"{nbytes / 2**40:,.2f} TiB"


def largest_fitting(shape: Sequence[int], bytes_per_node: int, budget: float) -> tuple[int, ...]:
    """The largest shape of the same proportions whose nodes take at most ``budget`` bytes."""
    nodes = math.prod(shape)
    scale = (budget / (nodes * bytes_per_node)) ** (1.0 / len(shape))
    return tuple(max(1, int(n * scale)) for n in shape)


def _refusal(where: str, shape: Sequence[int], parts: dict[str, int], available: int) -> str:
    per_node = sum(parts.values())
    nodes = math.prod(shape)
    detail = ", ".join(f"{name} {value}" for name, value in parts.items())
    largest = " x ".join(f"{n:,}" for n in largest_fitting(shape, per_node, MARGIN * available))
    return (f"a {' x '.join(map(str, shape))} domain ({nodes:,} nodes) needs at least "
            f"{_gib(nodes * per_node)} of {where} memory ({per_node} B per node: {detail}) but "
            f"{_gib(available)} is available; the largest domain of these proportions that fits "
            f"is about {largest}")


def check_fits(lattice: Lattice, shape: Sequence[int], compute: object, backend: Backend,
               dtype) -> Estimate:
    """Raise MemoryError before any allocation when the domain ``shape`` cannot fit in the host
    memory, or in the free memory of the GPU, naming what it needs and the largest that fits;
    return the estimate otherwise."""
    estimate = Estimate.of(lattice, compute, backend, dtype)
    nodes = math.prod(shape)
    memory = backend.memory() if estimate.device else None
    for where, parts, available in (("host", estimate.host, host_available()),
                                    ("GPU", estimate.device, memory and memory[0])):
        if parts and available and nodes * sum(parts.values()) > MARGIN * available:
            raise MemoryError(_refusal(where, shape, parts, available))
    return estimate

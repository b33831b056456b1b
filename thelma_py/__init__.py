"""thelma-py: TheLMA-style lattice Boltzmann and LW-ACM solvers for GPUs, with a NumPy reference.

A config script composes four kinds of plug-in (init, geometry, compute, results) into a
:class:`Solver`::

    import thelma_py as tp
    geo = tp.geometry.cavity((128, 128), lid_velocity=(0.05, 0.0))
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.064, collision="mrt"))
    solver.run(10_000)
"""

import importlib

from thelma_py import lattice, units
from thelma_py.lattice import D2Q9, D3Q19, D3Q27
from thelma_py.registry import available, create, register
from thelma_py.results import Results
from thelma_py.schedule import Every
from thelma_py.solver import DivergenceError, RunInterrupted, Solver, compose

__version__ = "0.1.0"


def __getattr__(name: str):
    """``tp.geometry``: the built-in geometry plug-ins, imported on first use (the core
    imports no plug-in; see docs/DESIGN.md, "Layers and contracts")."""
    if name == "geometry":
        return importlib.import_module("thelma_py.geometry")
    raise AttributeError(f"module 'thelma_py' has no attribute {name!r}")


def plugin(kind: str, name: str, **params):
    """Create a registered plug-in by kind and name (see ``thelma list``)."""
    return create(kind, name, **params)


__all__ = ["D2Q9", "D3Q19", "D3Q27", "DivergenceError", "Every", "Results", "RunInterrupted",
           "Solver", "available", "compose", "create", "geometry", "lattice", "plugin", "register",
           "units"]

"""Runnable flow recipes, installed as :mod:`thelma_py.cases` (``thelma run cases/NAME.py``).

Each case reads top to bottom: ``build(..., results=(), device=..., precision=...)`` (geometry,
parameters, plug-ins), the measures of that flow and ``report(solver)``; run as a script, it
calls :func:`run`. Cases import the core, the plug-ins and :mod:`thelma_py.cases.reference`,
never the tools: the command line and the validation sweeps import them.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Sequence
from types import ModuleType

import thelma_py as tp


def run(case: ModuleType, argv: Sequence[str] | None = None) -> tp.Solver:
    """``python cases/NAME.py [key=value ...]``: build the case with those parameters (Python
    literals, else text; ``steps=N`` replaces its ``DEFAULT_STEPS``), print the solver, run it
    and print its report; returns the solver. ``thelma run`` adds output files, checkpoints
    and values checked against the parameter types."""
    params = {}
    for text in sys.argv[1:] if argv is None else argv:
        key, _, value = text.partition("=")
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[key] = value
    steps = params.pop("steps", case.DEFAULT_STEPS)
    solver = case.build(**params)
    print(solver, flush=True)
    summary = solver.run(steps)
    stopped = f" ({summary['stopped']})" if summary["stopped"] else ""
    mlups = "n/a" if summary["mlups"] is None else f"{summary['mlups']:.2f}"
    print(f"steps      {summary['steps']}{stopped}\nMLUPS      {mlups}", flush=True)
    bound = inspect.signature(case.build).bind(**params)
    bound.apply_defaults()
    print(f"report     {case.report(solver, **bound.arguments)}")
    return solver

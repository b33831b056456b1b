"""Runnable flow recipes, installed as :mod:`thelma_py.cases` (``thelma run cases/NAME.py``).

Each case reads top to bottom: ``build(..., results=(), device=..., precision=...)`` (geometry,
parameters, plug-ins), the measures of that flow, ``report(solver)`` and ``main()``. Cases import
the core, the plug-ins and :mod:`thelma_py.tools.reference`; the validation sweeps import them.
"""

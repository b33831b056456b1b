"""Tooling around the core: the ``thelma`` command line, benchmarks, the validation report.

Nothing in the core (:mod:`thelma_py` outside this package) imports from here.
"""

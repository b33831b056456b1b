"""The compile cache of generated CUDA: one CuPy ``RawModule`` per source text.

Sources are deterministic, so the text is the key; CuPy also caches the binaries on disk. CuPy
is imported on first use (the host stand-in of the tests, ``tests/host_cupy.py``, takes its
place in ``sys.modules``; it then calls :func:`compile_module.cache_clear`).
"""

from __future__ import annotations

import functools

COMPILE_OPTIONS = ("-std=c++17",)


@functools.lru_cache(maxsize=64)
def compile_module(source: str):
    """The compiled ``cupy.RawModule`` of ``source`` (cached by text)."""
    import cupy

    return cupy.RawModule(code=source, options=COMPILE_OPTIONS)

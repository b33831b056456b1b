"""Compile generated CUDA with the machine's nvcc for Hopper (tests marked `nvcc`).

nvcc takes seconds a kernel and the suite compiles hundreds, while the rest of the suite runs
on one core. A test marked ``@pytest.mark.nvcc(sources=build)`` names a function of its
parameters that gives the source(s) it will compile (strings, or ``(source, options)``
pairs); after collection (:func:`prefetch`, called by conftest for the selected tests only)
the sources are generated on the main thread and compiled in the background, two nvcc at a
time at low priority, in test order. :func:`compile_cubin` then answers from the compile of
the byte-identical text and options, or compiles itself when there is none (a source that
differs is never served another's result), so a test asserts on exactly what nvcc said of
its own source.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import build_cache

FLAGS = ("-arch=sm_90", "--cubin", "-std=c++17")
QUICK_ASSEMBLY = ("-Xptxas", "-O0")
"""Added to every compile that does not ask nvcc for ``--resource-usage``: nvcc's front end and
NVVM run as on the device, then ptxas without its optimizer, which still assembles every
instruction and checks every resource (registers, shared memory, stack) but takes half the
time of ``-O3`` on the largest kernels (D3Q27 open-boundary pull in double: 13.5 s against
25.8 s). A test that reads register counts gets the optimizing assembler, as on the device."""


def flags(options: tuple[str, ...]) -> tuple[str, ...]:
    """nvcc's flags before ``options`` (:data:`FLAGS`, :data:`QUICK_ASSEMBLY` unless the
    compile reports its resources)."""
    return FLAGS if "--resource-usage" in options else FLAGS + QUICK_ASSEMBLY

_pool: ThreadPoolExecutor | None = None
_jobs: dict[str, Future] = {}
served = {"prefetched": 0, "compiled here": 0}
"""How :func:`compile_cubin` answered this session."""


def _key(source: str, options: tuple[str, ...]) -> str:
    return build_cache.key(*flags(options), source, *options)


EXEC_TRIES = 4
"""Starting nvcc is tried this often: CI once saw the exec of a compile fail with an OSError
in ``fork_exec`` (the report was cut before its errno), a failure of the machine, not of the
source, which a later try does not meet."""


def _run(source: str, folder: Path, name: str, options: tuple[str, ...],
         nice: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    path = folder / f"{name}.cu"
    path.write_text(source)
    command = [*nice, shutil.which("nvcc"), *flags(options), *options, "-o",
               str(folder / f"{name}.cubin"), str(path)]
    for attempt in range(EXEC_TRIES):
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=300)
        except OSError as error:
            if attempt == EXEC_TRIES - 1:
                raise OSError(f"could not start nvcc {EXEC_TRIES} times: {error!r}") from error
            time.sleep(0.5 * 2 ** attempt)
    raise AssertionError("unreachable")


def compile_cubin(source: str, folder: Path, name: str, options: Iterable[str] = ()
                  ) -> subprocess.CompletedProcess:
    """``nvcc -arch=sm_90 --cubin -std=c++17 [options]`` of ``source`` written to
    ``folder/name.cu``, the cubin beside it (taken from a background compile of the same text
    and options where :func:`prefetch` started one)."""
    options = tuple(options)
    key = _key(source, options)
    job = _jobs.get(key)
    if job is None:
        served["compiled here"] += 1
        result, cubin = _shared_compile(source, options, key)
    else:
        served["prefetched"] += 1
        result, cubin = job.result()  # the prefetch's own _shared_compile, at low priority
    (folder / f"{name}.cu").write_text(source)
    if cubin.exists():
        shutil.copyfile(cubin, folder / f"{name}.cubin")
    return result


def _shared_compile(source: str, options: tuple[str, ...], key: str,
                    nice: tuple[str, ...] = ()):
    """(result, cubin) of one compile per pytest session (:mod:`tests.build_cache`: another
    xdist worker, or the prefetch, may have made it or be making it)."""

    def compile_into(folder: Path) -> None:
        done = _run(source, folder, "kernel", options, nice)
        (folder / "result.json").write_text(json.dumps(
            {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}))

    folder = build_cache.shared(f"nvcc_{key}", compile_into)
    result = subprocess.CompletedProcess(["nvcc"], **json.loads(
        (folder / "result.json").read_text()))
    return result, folder / "kernel.cubin"


def assert_compiles(source: str, folder: Path, name: str, options: Iterable[str] = ()) -> None:
    """:func:`compile_cubin`, then fail with the end of nvcc's message on an error or a
    warning."""
    result = compile_cubin(source, folder, name, options)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr.lower(), result.stderr[-3000:]


def assert_all_compile(sources: Iterable[str], folder: Path, stem: str) -> None:
    """:func:`assert_compiles` of each source (named ``stem_0``, ``stem_1``, ...); skip the
    test where nvcc is not on PATH."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    for k, source in enumerate(sources):
        assert_compiles(source, folder, f"{stem}_{k}")


def _background(source: str, options: tuple[str, ...], key: str):
    """At low priority: the tests on the main thread keep their core, the compiles take what
    is left (both cores while a test waits for one)."""
    nice = (shutil.which("nice"), "-n", "15") if shutil.which("nice") else ()
    return _shared_compile(source, options, key, nice)


def _sources(build: Callable, params: dict) -> list[tuple[str, tuple[str, ...]]]:
    wanted = inspect.signature(build).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in wanted.values()):
        params = {k: v for k, v in params.items() if k in wanted}
    made = build(**params)
    made = [made] if isinstance(made, str) else list(made)
    return [(s, ()) if isinstance(s, str) else (s[0], tuple(s[1])) for s in made]


def prefetch(items: Iterable) -> int:
    """Start background compiles of the sources that the selected ``nvcc(sources=...)``
    tests will ask for, in their order; the number started."""
    global _pool
    started = 0
    for item in items:
        marker = item.get_closest_marker("nvcc")
        build = marker.kwargs.get("sources") if marker is not None else None
        if build is None:
            continue
        callspec = getattr(item, "callspec", None)
        try:
            sources = _sources(build, callspec.params if callspec else {})
        except Exception as error:  # the test compiles (and fails) on its own
            warnings.warn(f"{item.nodeid}: no nvcc prefetch ({error!r})", stacklevel=1)
            continue
        for source, options in sources:
            key = _key(source, options)
            if key in _jobs:
                continue
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1)),
                                           thread_name_prefix="nvcc")
            _jobs[key] = _pool.submit(_background, source, options, key)
            started += 1
    return started


def shutdown() -> None:
    """Drop the compiles no test asked for (a failed or interrupted session); their folders go
    with the session's (conftest)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None
    _jobs.clear()

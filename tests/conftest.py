"""Hardware gating: tests marked ``gpu`` need a usable CUDA device, ``gpus(n)`` n of them,
``nvcc`` the CUDA compiler.

Without the hardware they are skipped visibly (``-ra`` lists the reason). On the GPU CI job
``THELMA_REQUIRE_GPU=1`` turns a missing device into an error, and a test that needs more
devices than are visible (or MPI to start its ranks) into a failure, so a broken runner cannot
pass by skipping (:mod:`tests.hardware`). The selected ``nvcc`` tests' compiles start in the
background once collection is done (:mod:`tests.nvcc`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

from tests import build_cache, hardware, nvcc

_OWN_BUILDS = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """The session's folder of compiled artifacts, made by the controlling process (pytest-xdist
    workers inherit its name: :mod:`tests.build_cache`)."""
    if not hasattr(config, "workerinput") and build_cache.ENV not in os.environ:
        os.environ[build_cache.ENV] = tempfile.mkdtemp(prefix="thelma_builds_")
        config.stash[_OWN_BUILDS] = os.environ[build_cache.ENV]


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_OWN_BUILDS, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(build_cache.ENV, None)


@pytest.hookimpl(trylast=True)  # after `-m` deselection: only selected gpu tests count
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and hardware.visible_gpus() == 0:
        if hardware.required():
            raise pytest.UsageError(
                f"{hardware.REQUIRE}=1 but no CUDA device is usable (cupy missing or no "
                f"device): {len(gpu_items)} gpu test(s) would be skipped")
        skip = pytest.mark.skip(reason="no usable CUDA device (cupy missing or no GPU)")
        for item in gpu_items:
            item.add_marker(skip)
    if shutil.which("nvcc") is None:
        skip = pytest.mark.skip(reason="nvcc is not on PATH")
        for item in items:
            if "nvcc" in item.keywords:
                item.add_marker(skip)
    elif not config.option.collectonly and not hasattr(config, "workerinput"):
        # under pytest-xdist every worker collects every test: a prefetch there would compile
        # each kernel once per worker, so the workers compile their own tests' kernels
        nvcc.prefetch(item for item in items if item.get_closest_marker("skip") is None)


def pytest_sessionfinish(session: pytest.Session) -> None:
    nvcc.shutdown()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``gpus(n)``: at least n visible devices, else skip (or fail when required)."""
    marker = item.get_closest_marker("gpus")
    if marker is not None:
        needed, visible = int(marker.args[0]), hardware.visible_gpus()
        if visible < needed:
            hardware.require_or_skip(f"needs {needed} GPUs, {visible} visible")


@pytest.fixture
def host_gpu(monkeypatch):
    """The CUDA engines on the CPU: cupy replaced by tests/host_cupy.py's stand-in, whose
    backend the fixture gives."""
    from tests import host_cupy
    from thelma_py.codegen.compile import compile_module

    monkeypatch.setitem(sys.modules, "cupy", host_cupy.module())
    compile_module.cache_clear()  # compiled modules are cached by source text: keep them apart
    yield host_cupy.HostBackend()
    compile_module.cache_clear()

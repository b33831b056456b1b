"""What a test needs from the machine: how many CUDA devices are visible, and what to do when
something is missing. Without it a test is skipped, visibly; with ``THELMA_REQUIRE_GPU=1``
(the GPU CI job) it fails instead, so a runner short of GPUs, MPI or NCCL cannot pass by
skipping."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

from thelma_py.backend import gpu_available

REQUIRE = "THELMA_REQUIRE_GPU"


def required() -> bool:
    """Is this a run that must execute every GPU test it selects?"""
    return os.environ.get(REQUIRE) == "1"


def visible_gpus() -> int:
    """CUDA devices this process can use (0 without cupy or a driver)."""
    if not gpu_available():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def require_or_skip(reason: str) -> NoReturn:
    """Skip the running test for ``reason``, or fail it when GPU tests are required."""
    if required():
        pytest.fail(f"{REQUIRE}=1 but {reason}", pytrace=False)
    pytest.skip(reason)

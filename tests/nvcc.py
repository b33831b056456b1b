"""Compile generated CUDA with the machine's nvcc for Hopper (tests marked `nvcc`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def compile_cubin(source: str, folder: Path, name: str) -> subprocess.CompletedProcess:
    """``nvcc -arch=sm_90 --cubin`` of ``source`` written to ``folder/name.cu``."""
    path = folder / f"{name}.cu"
    path.write_text(source)
    return subprocess.run([shutil.which("nvcc"), "-arch=sm_90", "--cubin", "-std=c++17", "-o",
                           str(folder / f"{name}.cubin"), str(path)],
                          capture_output=True, text=True, timeout=300)

"""The file helpers of results plug-ins live in the core (:mod:`thelma_py.files`), which the
checkpoint format uses too; this module keeps their old import path."""

from thelma_py.files import (
    OutputDirectoryError,
    atomic_path,
    atomic_write_text,
    ensure_writable_dir,
)

__all__ = ["OutputDirectoryError", "atomic_path", "atomic_write_text", "ensure_writable_dir"]

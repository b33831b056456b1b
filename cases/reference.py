"""Published reference tables: where they are and how to read them.

The tables (with their sources: ``thelma_py/reference/README.md``) are installed with the
package; ``$THELMA_REFERENCE`` names another folder holding the same files. The cavity case
compares with Ghia's tables and ``thelma validate`` with the 3D Taylor-Green dissipation; the
lookup sits with the cases, which import no tooling, and the tools import it from here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import thelma_py

PACKAGED_REFERENCE = Path(thelma_py.__file__).resolve().parent / "reference"
"""The reference tables installed with the package (package data of ``thelma_py``)."""
REFERENCE = Path(os.environ.get("THELMA_REFERENCE") or PACKAGED_REFERENCE)
"""Directory of the reference tables (Ghia profiles, 3D TGV dissipation): ``$THELMA_REFERENCE``
when set, else :data:`PACKAGED_REFERENCE`."""
TGV_REFERENCE = "tgv_re1600_spectral512_dissipation.csv"


def reference_file(name: str, reference: Path | None = None) -> Path:
    """Path of the reference table ``name`` in ``reference`` (default :data:`REFERENCE`);
    FileNotFoundError saying where it was looked for if it is not there."""
    folder = Path(reference) if reference is not None else REFERENCE
    path = folder / name
    if not path.is_file():
        named = " (THELMA_REFERENCE)" if reference is None and folder != PACKAGED_REFERENCE else ""
        raise FileNotFoundError(f"reference table {name} is not in {folder}{named}; thelma-py "
                                f"installs the tables in {PACKAGED_REFERENCE}")
    return path


def load_ghia(reynolds: int, reference: Path | None = None) -> dict[str, np.ndarray]:
    """Ghia's centre-line tables: {'y', 'u', 'x', 'v'}, wall rows removed (they are the
    boundary conditions, not computed values)."""
    u = np.loadtxt(reference_file(f"ghia1982_re{reynolds}_u.csv", reference), delimiter=",",
                   skiprows=2)
    v = np.loadtxt(reference_file(f"ghia1982_re{reynolds}_v.csv", reference), delimiter=",",
                   skiprows=2)
    return {"y": u[1:-1, 0], "u": u[1:-1, 1], "x": v[1:-1, 0], "v": v[1:-1, 1]}


def load_tgv_reference(reference: Path | None = None) -> dict[str, np.ndarray]:
    """The spectral Re = 1600 curves: t, E_k, minus_dEk_dt, enstrophy."""
    data = np.loadtxt(reference_file(TGV_REFERENCE, reference), delimiter=",", skiprows=4)
    return {"t": data[:, 0], "E_k": data[:, 1], "minus_dEk_dt": data[:, 2],
            "enstrophy": data[:, 3]}

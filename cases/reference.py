"""Published reference tables: where they are and how to read them.

Read from ``$THELMA_REFERENCE`` or ``shared/reference`` next to the repository. The cavity case
compares with Ghia's tables and ``thelma validate`` with the 3D Taylor-Green dissipation; the
lookup sits with the cases, which import no tooling, and the tools import it from here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

REFERENCE = Path(os.environ.get("THELMA_REFERENCE",
                                Path(__file__).resolve().parents[2] / "shared" / "reference"))
"""Directory of the reference tables (Ghia profiles, 3D TGV dissipation)."""
TGV_REFERENCE = "tgv_re1600_spectral512_dissipation.csv"


def load_ghia(reynolds: int, reference: Path = REFERENCE) -> dict[str, np.ndarray]:
    """Ghia's centre-line tables: {'y', 'u', 'x', 'v'}, wall rows removed (they are the
    boundary conditions, not computed values)."""
    u = np.loadtxt(reference / f"ghia1982_re{reynolds}_u.csv", delimiter=",", skiprows=2)
    v = np.loadtxt(reference / f"ghia1982_re{reynolds}_v.csv", delimiter=",", skiprows=2)
    return {"y": u[1:-1, 0], "u": u[1:-1, 1], "x": v[1:-1, 0], "v": v[1:-1, 1]}


def load_tgv_reference(reference: Path = REFERENCE) -> dict[str, np.ndarray]:
    """The spectral Re = 1600 curves: t, E_k, minus_dEk_dt, enstrophy."""
    data = np.loadtxt(reference / TGV_REFERENCE, delimiter=",", skiprows=4)
    return {"t": data[:, 0], "E_k": data[:, 1], "minus_dEk_dt": data[:, 2],
            "enstrophy": data[:, 3]}

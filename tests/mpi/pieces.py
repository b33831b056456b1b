"""What a decomposed-run script compares: one rank's fields against the same window of the
single-domain run (imported by the scripts in this folder, which run as files under mpiexec)."""

from __future__ import annotations

import numpy as np

STORED = ("f", "j")
"""State arrays compared on fluid nodes: f (LBM), f* and the momentum j (two-step LW-ACM)."""


def stored(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The :data:`STORED` arrays of an engine state (none for the single-step LW-ACM)."""
    return {key: state[key] for key in STORED if key in state}


def piece_checks(rho, u, arrays, lower, shape, rho_part, u_part, arrays_part, fluid, piece,
                 rho_piece) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (expected from the whole domain, got from the rank): ρ and u of the owned box,
    ρ of the output piece (its seam layer included), and the :func:`stored` state arrays
    (``arrays`` of the whole domain, ``arrays_part`` of the rank) on fluid nodes."""
    window = tuple(slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(shape),
                                                       strict=True))
    seam = tuple(slice(lo, lo + n) for lo, n in zip(reversed(piece[0]), reversed(piece[1]),
                                                     strict=True))
    checks = {"rho": (rho[window], rho_part), "u": (u[(slice(None), *window)], u_part),
              "rho of the output piece": (rho[seam], rho_piece)}
    for key, value in arrays.items():
        checks[key] = (value[(slice(None), *window)][:, fluid], arrays_part[key][:, fluid])
    return checks

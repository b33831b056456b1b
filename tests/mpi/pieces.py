"""What a decomposed-run script compares: one rank's fields against the same window of the
single-domain run (imported by the scripts in this folder, which run as files under mpiexec)."""

from __future__ import annotations

import numpy as np


def piece_checks(rho, u, f, lower, shape, rho_part, u_part, f_part, fluid, piece,
                 rho_piece) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (expected from the whole domain, got from the rank): ρ and u of the owned box,
    ρ of the output piece (its seam layer included), and f* on fluid nodes where the scheme
    stores it (``f`` None: the single-step LW-ACM)."""
    window = tuple(slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(shape),
                                                       strict=True))
    seam = tuple(slice(lo, lo + n) for lo, n in zip(reversed(piece[0]), reversed(piece[1]),
                                                     strict=True))
    checks = {"rho": (rho[window], rho_part), "u": (u[(slice(None), *window)], u_part),
              "rho of the output piece": (rho[seam], rho_piece)}
    if f is not None:
        checks["f"] = (f[(slice(None), *window)][:, fluid], f_part[:, fluid])
    return checks

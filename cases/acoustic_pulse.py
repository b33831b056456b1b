"""A sound pulse meets an inlet: how much of it comes back (docs/validation/flows.md, section 3,
session 13; the sphere's box rang between reflecting faces).

A Gaussian density pulse at rest in a uniform flow u splits into two halves running at
c_s = 1/√3. The channel is ``n`` nodes long, periodic across, with an inlet of kind ``inlet``
at −x and an equilibrium outlet at +x; the pulse starts ``x0`` nodes from the inlet, so after
:data:`DEFAULT_STEPS` (the time out to the inlet and back, 2 x0 √3) the half that met the
inlet is back near x0 and the other half is still on its way to the outlet. A velocity inlet
('equilibrium', 'zou-he') is a closed end for sound and returns the pulse whole (R ≈ 1); a
'characteristic' inlet lets it out (R → 0).

Run::

    thelma run cases/acoustic_pulse.py --device cpu --set inlet=equilibrium
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run

X0 = 60
"""Nodes from the inlet to the pulse's centre."""
DEFAULT_STEPS = round(2 * X0 * math.sqrt(3))
"""Out to the inlet and back at c_s."""

__all__ = ["DEFAULT_STEPS", "X0", "build", "measured_reflection", "reflection", "report"]


def build(*, n: int = 300, width: float = 4.0, amplitude: float = 1e-3, u: float = 0.05,
          tau: float = 0.51, inlet: str = "characteristic", lattice: str = "D2Q9",
          results: Sequence = (), device: str = "auto",
          precision: str = "float64") -> tp.Solver:
    """The channel of the module docstring: ``n`` nodes along x (4 across, periodic), a pulse
    of ``amplitude`` in ρ and Gaussian ``width`` (nodes) at :data:`X0`, flow ``u`` from an
    inlet of kind ``inlet``, BGK at relaxation time ``tau``."""
    d = 2 if lattice == "D2Q9" else 3
    geometry = tp.geometry.Geometry((n,) + (4,) * (d - 1), periodic=(False,) + (True,) * (d - 1))
    velocity = (u,) + (0.0,) * (d - 1)
    geometry.inlet("-x", velocity=velocity, kind=inlet)
    geometry.outlet("+x", rho=1.0, kind="equilibrium")
    init = tp.plugin("init", "equilibrium", u=velocity,
                     rho=lambda x, *_: 1.0 + amplitude * np.exp(-0.5 * ((x - X0) / width) ** 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Zou-He faces below their τ limit warn
        return tp.compose(lattice, geometry, tp.plugin("compute", "lbm", nu=(tau - 0.5) / 3),
                          init=init, results=list(results), device=device,
                          precision=precision)


def reflection(solver: tp.Solver) -> float:
    """The largest |ρ − 1| in the inlet's half of the channel over that in the outlet's half
    (the other half of the pulse, damped alike): the reflection coefficient of the inlet after
    :data:`DEFAULT_STEPS`."""
    line = np.abs(solver.density() - 1.0)
    line = line.reshape(-1, line.shape[-1]).max(axis=0)
    half = len(line) // 2
    return float(line[:half].max() / line[half:].max())


def measured_reflection(**params) -> float:
    """:func:`build` with ``params``, run for :data:`DEFAULT_STEPS`, then :func:`reflection`."""
    solver = build(**params)
    solver.run(DEFAULT_STEPS)
    return reflection(solver)


def report(solver: tp.Solver, *, inlet: str = "characteristic", **_) -> str:
    return f"{inlet} inlet: the pulse comes back with {reflection(solver):.3f} of its amplitude"


if __name__ == "__main__":
    run(sys.modules[__name__])

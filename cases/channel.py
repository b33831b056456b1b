"""Turbulent plane channel at Re_τ ≈ 180, driven by a constant body force, against the DNS of
Moser, Kim & Mansour (1999).

The box is 2πh × 2h × πh nodes (x streamwise, y wall-normal, z spanwise; h = half-height in
nodes), periodic in x and z. The walls lie beyond the ±y faces: with halfway bounce-back each
wall is half a spacing outside the last node, so the node j sits at η = j + ½ from the lower
wall and the channel is exactly 2h wide. The force g = u_τ² / h (the input u_τ = Re_τ ν / h)
balances the mean wall stress. MKM's box was 4πh × 2h × 4πh/3: the default box has half its
length and three quarters of its width to save nodes (``length=4, width=4/3`` is MKM's; the
effect of the shorter box on U⁺ is not measured here).

Start: Reichardt's mean profile plus the near-wall streaks and spanwise meander of de Villiers
(2006, PhD thesis, Imperial College, the OpenFOAM ``perturbU`` utility): streamwise streaks
spaced 100 wall units in z and a spanwise velocity varying in x over 500 wall units, both
divergence free, plus a seeded random noise of 1 % of the centreline speed.

Measures: :class:`ChannelAverage` averages u_x over x, z, time and the two walls into U(η);
:func:`wall_units` turns it into U⁺(y⁺) and the measured Re_τ = u_τ h / ν with
u_τ² = ν U(η₁) / η₁ at the first node (η₁ = ½): the wall stress of the mean profile, not the
force (which is the input). The mean momentum balance gives ν U'' = −g at the wall, so this
one-sided slope is low by 1/(4h) in u_τ² (0.4 % of Re_τ at h = 32), exactly so for the laminar
parabola (the test of this measure); the y⁺⁴ term of the sublayer adds less than 1 % at y⁺ ≤ 3.

Run::

    thelma run cases/channel.py --device cuda --set h=32 --set les=smagorinsky
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.cases.reference import reference_file

MKM_PROFILE = "channel_retau180_mkm1999_mean.csv"
CENTRELINE_U_PLUS = 18.3
"""MKM's U⁺ at the centre line (Re_τ = 178): u_c ≈ 18.3 u_τ sets the Mach number."""
DEFAULT_STEPS = 20_000

__all__ = ["CENTRELINE_U_PLUS", "DEFAULT_STEPS", "ChannelAverage", "ShearStressAverage", "build",
           "compare_mkm", "eddy_turnover", "load_mkm", "parameters", "reichardt", "report",
           "total_stress_re_tau", "wall_units"]


def parameters(h: int, re_tau: float, u_tau: float) -> dict[str, float]:
    """Lattice ν = u_τ h / Re_τ, force g = u_τ² / h and the eddy turnover h / u_τ (steps)."""
    return {"nu": u_tau * h / re_tau, "force": u_tau**2 / h, "turnover": h / u_tau}


def eddy_turnover(h: int, u_tau: float) -> float:
    """Steps per eddy turnover time h / u_τ."""
    return h / u_tau


def reichardt(y_plus: np.ndarray, kappa: float = 0.41) -> np.ndarray:
    """Reichardt's (1951) law of the wall U⁺(y⁺), continuous from the sublayer to the log law."""
    return (np.log1p(kappa * y_plus) / kappa
            + 7.8 * (1 - np.exp(-y_plus / 11) - y_plus / 11 * np.exp(-y_plus / 3)))


def initial_velocity(h: int, re_tau: float, u_tau: float, amplitude: float, seed: int):
    """(x, y, z) -> u of the start: Reichardt's profile and de Villiers' perturbation."""
    rng = np.random.default_rng(seed)
    scale = re_tau / h  # wall units per node

    def velocity(x, y, z):
        eta = np.minimum(y + 0.5, 2 * h - y - 0.5)  # distance to the nearer wall
        sign = np.where(y + 0.5 < h, 1.0, -1.0)  # the upper wall's streaks mirror
        yp, xp, zp = eta * scale, x * scale, z * scale
        mean = u_tau * reichardt(yp)
        streak = (amplitude * CENTRELINE_U_PLUS * u_tau / 2 * (yp / 40)
                  * np.exp(-0.00055 * yp**2 + 0.5) * np.cos(2 * np.pi / 100 * zp))
        meander = (amplitude * CENTRELINE_U_PLUS * u_tau / 200 * sign * yp
                   * np.exp(-0.00055 * yp**2) * np.sin(2 * np.pi / 500 * xp))
        shape = np.broadcast(x, y, z).shape
        noise = 0.01 * amplitude * CENTRELINE_U_PLUS * u_tau
        ux = mean + streak + noise * rng.standard_normal(shape)
        uy = noise * rng.standard_normal(shape)
        uz = meander + noise * rng.standard_normal(shape)
        return [np.broadcast_to(c, shape) for c in (ux, uy, uz)]

    return velocity


def build(*, h: int = 16, re_tau: float = 180.0, u_tau: float = 0.005, length: float = 2.0,
          width: float = 1.0, collision: str = "mrt", les: str | dict | None = None,
          compute: str = "lbm", lattice: str = "D3Q19", amplitude: float = 1.0, seed: int = 1,
          results: Sequence = (), device: str = "auto", precision: str = "float64") -> tp.Solver:
    """Channel of ``length`` π h × 2 h × ``width`` π h nodes at ``re_tau`` (input u_τ in
    lattice units; u_c ≈ 18.3 u_τ), driven by g = u_τ² / h. ``collision``, ``les`` (None,
    'smagorinsky' or a dict) and ``compute``/``lattice`` go to the compute plug-in as given;
    ``amplitude`` scales the perturbation (0: Reichardt's mean profile only)."""
    if h < 2:
        raise ValueError(f"h must be at least 2 nodes, got {h}")
    p = parameters(h, re_tau, u_tau)
    tp.units.check_mach(u_tau * float(reichardt(np.array(re_tau))))  # the start's centre
    tp.units.check_tau(tp.units.tau_from_viscosity(p["nu"]))
    shape = (round(length * math.pi * h), 2 * h, round(width * math.pi * h))
    geometry = tp.geometry.channel(shape, flow_axis=0, wall_axis=1)
    extra = {"collision": collision} if compute == "lbm" else {}
    if les is not None:
        extra["les"] = les
    plugin = tp.plugin("compute", compute, nu=p["nu"], force=(p["force"], 0.0, 0.0), **extra)
    init = tp.plugin("init", "equilibrium",
                     u=initial_velocity(h, re_tau, u_tau, amplitude, seed))
    return tp.compose(lattice, geometry, plugin, init=init, results=list(results),
                      device=device, precision=precision)


# -- measures ----------------------------------------------------------------------------------
class _WallFolded:
    """Running mean of a plane-averaged profile over all 2h nodes, folded over the two walls
    (``fold`` = +1: the upper half mirrored and added, −1: subtracted, for quantities whose
    sign follows the wall-normal direction)."""

    fold = 1.0

    def __init__(self) -> None:
        self.total: np.ndarray | None = None
        self.samples = 0

    def add(self, profile: np.ndarray) -> None:
        """Add one plane-averaged profile over all 2h nodes."""
        self.total = profile.copy() if self.total is None else self.total + profile
        self.samples += 1

    def profile(self) -> np.ndarray:
        """The folded mean at η = ½ … h − ½ from the lower wall."""
        if self.total is None:
            raise ValueError("no samples yet")
        mean = self.total / self.samples
        h = len(mean) // 2
        return 0.5 * (mean[:h] + self.fold * mean[::-1][:h])


class ChannelAverage(_WallFolded):
    """Running mean of u_x over x, z and the samples, folded over the two walls: U(η) at
    η = j + ½, j = 0 … h − 1 (float64; the plane means are taken where the field lives)."""

    def sample(self, solver: tp.Solver) -> None:
        u = solver.engine.macroscopic()[1]
        profile = np.asarray(solver.backend.to_host(u[0].mean(axis=(0, 2))), dtype=np.float64)
        self.add(profile)


class ShearStressAverage(_WallFolded):
    """Running mean of the plane covariance ⟨u′v′⟩(y) (u_x u_y less the product of the plane
    means, per sample), folded over the two walls (the upper one's v points into the wall):
    the Reynolds shear stress at η = j + ½ for the lower wall, negative in a turbulent
    channel."""

    fold = -1.0

    def sample(self, solver: tp.Solver) -> None:
        u = solver.engine.macroscopic()[1]
        means = [u[0].mean(axis=(0, 2)), u[1].mean(axis=(0, 2)), (u[0] * u[1]).mean(axis=(0, 2))]
        ux, uy, uxuy = (np.asarray(solver.backend.to_host(m), dtype=np.float64) for m in means)
        self.add(uxuy - ux * uy)


def total_stress_re_tau(profile: np.ndarray, uv: np.ndarray, nu: float) -> float:
    """Re_τ from the total stress at the first node, u_τ² ≈ ν U(η₁)/η₁ − ⟨u′v′⟩(η₁): where the
    grid lets turbulence reach the first node, the slope alone misses the part of the wall
    stress that ⟨u′v′⟩ carries there (an estimate: the slope is the mean over [0, η₁], the
    covariance is at η₁; in the laminar channel it equals the slope measure)."""
    h = len(profile)
    u_tau2 = nu * profile[0] / 0.5 - uv[0]
    return math.sqrt(u_tau2) * h / nu if u_tau2 > 0 else math.nan


def wall_units(profile: np.ndarray, nu: float) -> dict[str, np.ndarray | float]:
    """y⁺, U⁺ and Re_τ of a folded mean profile U(η), η = j + ½ (h = its length), from the
    wall stress of the profile: u_τ² = ν U(η₁) / η₁."""
    h = len(profile)
    eta = np.arange(h) + 0.5
    u_tau = math.sqrt(nu * profile[0] / eta[0]) if profile[0] > 0 else math.nan
    return {"y_plus": eta * u_tau / nu, "U_plus": profile / u_tau, "u_tau": u_tau,
            "re_tau": u_tau * h / nu}


def load_mkm() -> dict[str, np.ndarray]:
    """MKM (1999) Re_τ = 178 mean profile: y/h, y⁺, U⁺."""
    data = np.loadtxt(reference_file(MKM_PROFILE), delimiter=",", comments="#", skiprows=3)
    return {"y": data[:, 0], "y_plus": data[:, 1], "U_plus": data[:, 2]}


def compare_mkm(y_plus: np.ndarray, u_plus: np.ndarray, split: float = 30.0) -> dict[str, float]:
    """Largest relative deviation of U⁺ from MKM, interpolated at the same y⁺, below and at or
    above ``split`` wall units (points beyond the DNS's last y⁺ left out)."""
    ref = load_mkm()
    inside = y_plus <= ref["y_plus"][-1]
    expected = np.interp(y_plus[inside], ref["y_plus"], ref["U_plus"])
    error = np.abs(u_plus[inside] / expected - 1)
    low, high = y_plus[inside] < split, y_plus[inside] >= split
    return {"below": float(error[low].max()) if low.any() else math.nan,
            "above": float(error[high].max()) if high.any() else math.nan}


def report(solver: tp.Solver, *, h: int, re_tau: float, u_tau: float, **_) -> str:
    """Re_τ and U⁺ from the current field (one sample: use ChannelAverage for statistics)."""
    average = ChannelAverage()
    average.sample(solver)
    w = wall_units(average.profile(), parameters(h, re_tau, u_tau)["nu"])
    c = compare_mkm(w["y_plus"], w["U_plus"])
    return (f"instantaneous Re_tau = {w['re_tau']:.1f} (input {re_tau:g}); U+ against MKM: "
            f"{c['below']:.3f} below y+ = 30, {c['above']:.3f} above")


if __name__ == "__main__":
    run(sys.modules[__name__])

"""Units: lattice parameters from physical numbers, with stability and Mach checks.

Lattice units throughout: dx = dt = 1, c_s = 1/√3.

>>> p = from_reynolds(reynolds=100, length_nodes=64, lattice_velocity=0.05)
>>> round(p.nu, 6), round(p.tau, 6)
(0.032, 0.596)
"""

from __future__ import annotations

import math
import warnings

import attrs

CS = 1.0 / math.sqrt(3.0)
MACH_WARN = 0.1
MACH_LIMIT = 0.3


STABILITY_ADVICE = "lower the lattice velocity or raise the resolution"
"""What helps any scheme that goes unstable; compute plug-ins add their own
(``stability_advice()``)."""


class UnstableParameters(ValueError):
    """The requested lattice parameters cannot give a stable or meaningful run."""


def tau_from_viscosity(nu: float) -> float:
    """Relaxation time for lattice viscosity ``nu``.

    >>> tau_from_viscosity(1 / 6)
    1.0
    """
    return 3.0 * nu + 0.5


def viscosity_from_tau(tau: float) -> float:
    return (tau - 0.5) / 3.0


class RelaxationTime:
    """Mixin for parameter classes with a lattice viscosity ``nu``: τ and ω derived from it."""

    nu: float

    @property
    def tau(self) -> float:
        return tau_from_viscosity(self.nu)

    @property
    def omega(self) -> float:
        return 1.0 / self.tau

    def stability_advice(self) -> str:
        """What to change when a run with these parameters goes unstable (for messages)."""
        return STABILITY_ADVICE


@attrs.frozen
class LatticeParameters(RelaxationTime):
    """A consistent set: viscosity, lattice velocity, characteristic length (nodes), Reynolds."""

    nu: float
    velocity: float
    length: float
    reynolds: float

    @property
    def mach(self) -> float:
        return abs(self.velocity) / CS

    def steps_for(self, convective_times: float) -> int:
        """Time steps covering ``convective_times`` × L / U."""
        return int(math.ceil(convective_times * self.length / abs(self.velocity)))


def check_mach(velocity: float) -> float:
    """Refuse Ma > 0.3 and warn above 0.1 (compressibility error grows as Ma²)."""
    mach = abs(velocity) / CS
    if mach > MACH_LIMIT:
        raise UnstableParameters(
            f"lattice velocity {velocity} is Mach {mach:.3f} (u / c_s, c_s = 1/sqrt(3)); the "
            f"limit is {MACH_LIMIT} (u <= {MACH_LIMIT * CS:.3f}). Lower the lattice velocity and "
            "raise the resolution or the number of steps instead.")
    if mach > MACH_WARN:
        warnings.warn(f"lattice velocity {velocity} is Mach {mach:.3f} > {MACH_WARN}: expect "
                      "compressibility errors of order Ma^2", stacklevel=3)
    return mach


def check_tau(tau: float) -> None:
    if not tau > 0.5:
        raise UnstableParameters(
            f"relaxation time tau = {tau:.6g} must exceed 0.5 (viscosity must be positive): "
            "raise the resolution or the lattice velocity, or lower the Reynolds number")
    if tau < 0.502:  # the scheme is not known here: advice that holds for every one
        warnings.warn(f"tau = {tau:.5f} is very close to 0.5: the run may go unstable; a finer "
                      "lattice (tau grows with it at a fixed Reynolds number and lattice "
                      "velocity) or a lower Reynolds number moves tau away", stacklevel=3)


def from_reynolds(reynolds: float, length_nodes: float, lattice_velocity: float = 0.05
                  ) -> LatticeParameters:
    """ν = U L / Re for a characteristic length of ``length_nodes`` and velocity U (lattice)."""
    if not reynolds > 0:
        raise ValueError(f"reynolds must be positive, got {reynolds}")
    if not length_nodes > 0:
        raise ValueError(f"length_nodes must be positive, got {length_nodes}")
    check_mach(lattice_velocity)
    nu = abs(lattice_velocity) * length_nodes / reynolds
    check_tau(tau_from_viscosity(nu))
    return LatticeParameters(nu=nu, velocity=lattice_velocity, length=length_nodes,
                             reynolds=reynolds)


def from_tau(reynolds: float, length_nodes: float, tau: float) -> LatticeParameters:
    """Lattice velocity from Re, L and a chosen τ (diffusive scaling keeps τ fixed)."""
    check_tau(tau)
    nu = viscosity_from_tau(tau)
    velocity = reynolds * nu / length_nodes
    check_mach(velocity)
    return LatticeParameters(nu=nu, velocity=velocity, length=length_nodes, reynolds=reynolds)

"""Validators and converters shared by the parameter classes of compute plug-ins (attrs fields).

>>> force_tuple([1e-5, 0])
(1e-05, 0.0)
"""

from __future__ import annotations

import math


def check_nu(instance, attribute, value) -> None:
    """attrs validator: ``nu`` is a finite positive lattice viscosity (the upper limits of each
    scheme are checked when its engine is built, after the memory check)."""
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"nu must be a positive kinematic viscosity in lattice units, got "
                         f"{value!r} (tau = 3 nu + 1/2 must exceed 1/2)")


def force_tuple(value) -> tuple[float, ...] | None:
    """attrs converter: a body force as a tuple of floats (None stays None)."""
    return None if value is None else tuple(float(v) for v in value)

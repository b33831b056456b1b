"""Unit conversion and the stability/Mach guards (exact arithmetic up to 1e-15 relative)."""

from __future__ import annotations

import math
import warnings

import pytest

import thelma_py as tp
from thelma_py.units import (
    CS,
    UnstableParameters,
    check_mach,
    check_tau,
    from_reynolds,
    from_tau,
    tau_from_viscosity,
    viscosity_from_tau,
)


def test_from_reynolds():
    p = from_reynolds(reynolds=100, length_nodes=64, lattice_velocity=0.05)
    assert p.nu == pytest.approx(0.05 * 64 / 100, rel=1e-15)
    assert p.tau == pytest.approx(3 * 0.032 + 0.5, rel=1e-15)
    assert p.omega == pytest.approx(1 / 0.596, rel=1e-15)
    assert p.mach == pytest.approx(0.05 * math.sqrt(3), rel=1e-15)
    assert p.reynolds == 100 and p.length == 64 and p.velocity == 0.05
    # L / U = 1280 steps per convective time
    assert p.steps_for(2.5) == 3200
    # Re is recovered from the lattice numbers
    assert p.velocity * p.length / p.nu == pytest.approx(100, rel=1e-14)


def test_from_tau_is_the_inverse():
    p = from_tau(reynolds=400, length_nodes=256, tau=0.56)
    assert p.nu == pytest.approx(0.02, rel=1e-14)
    assert p.velocity == pytest.approx(400 * 0.02 / 256, rel=1e-14)
    assert p.tau == pytest.approx(0.56, rel=1e-14)


def test_tau_viscosity_round_trip():
    assert tau_from_viscosity(1 / 6) == 1.0
    for tau in (0.51, 0.8, 1.0, 1.9):
        assert tau_from_viscosity(viscosity_from_tau(tau)) == pytest.approx(tau, rel=1e-15)


@pytest.mark.parametrize("tau", [0.5, 0.45, 0.0, -1.0])
def test_tau_at_or_below_half_is_refused(tau):
    with pytest.raises(UnstableParameters, match=r"must exceed 0\.5"):
        check_tau(tau)
    with pytest.raises(UnstableParameters, match="viscosity must be positive"):
        from_tau(100, 64, tau)


def test_from_reynolds_refuses_tau_that_rounds_to_half():
    # ν = 3.2e-20: τ = 0.5 + 1e-19 is exactly 0.5 in double precision
    with pytest.raises(UnstableParameters, match="tau = 0.5 must exceed 0.5"):
        from_reynolds(1e18, 64, 0.05)


def test_tau_close_to_half_warns():
    with pytest.warns(UserWarning, match="very close to 0.5"):
        check_tau(0.501)


def test_invalid_reynolds_and_length():
    with pytest.raises(ValueError, match="reynolds must be positive"):
        from_reynolds(0, 64, 0.05)
    with pytest.raises(ValueError, match="length_nodes must be positive"):
        from_reynolds(100, -1, 0.05)


def test_mach_thresholds():
    # Ma = u / c_s; warn above 0.1, refuse above 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_mach(0.05) == pytest.approx(0.05 / CS)
        assert check_mach(0.0577) < 0.1  # just below the warning
    with pytest.warns(UserWarning, match=r"Mach 0\.173 > 0\.1"):
        check_mach(0.1)
    with pytest.warns(UserWarning, match="Mach"):
        from_reynolds(100, 64, 0.1)
    with pytest.raises(UnstableParameters, match=r"Mach 0\.346.*limit is 0\.3"):
        check_mach(0.2)
    with pytest.raises(UnstableParameters, match="Mach"):
        from_reynolds(100, 64, -0.2)  # the sign does not matter
    with pytest.raises(UnstableParameters, match="Mach"):
        from_tau(reynolds=1000, length_nodes=10, tau=0.6)  # u = 1000 * 0.0333 / 10


def test_compute_plugin_refuses_nonpositive_viscosity():
    with pytest.raises(ValueError, match="tau = 3 nu"):
        tp.plugin("compute", "lbm", nu=0.0)
    too_viscous = tp.plugin("compute", "lbm", nu=20.0)  # refused where the engine is built
    with pytest.raises(ValueError, match="above 50"):
        tp.compose("D2Q9", tp.geometry.periodic_box((4, 4)), too_viscous, device="cpu")

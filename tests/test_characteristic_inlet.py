"""The characteristic inlet lets sound leave (issue #17 item 5: the sphere's box rang at its
quarter-wave modes between an equilibrium inlet and outlet, docs/validation/flows.md).

The answer comes from acoustics, not from the rule: a density pulse at rest splits into two
halves running at c_s = 1/√3; the half that meets a velocity inlet comes back whole (a closed
end reflects pressure with R = +1), and through an inlet that holds only the incoming
characteristic it should leave, R → 0."""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.cases import acoustic_pulse
from thelma_py.lattice import D2Q9, D3Q19
from thelma_py.modules.compute.lbm.boundaries import characteristic_rule


def reflection(inlet: str, u: float, tau: float, lattice: str = "D2Q9") -> float:
    """The pulse of :mod:`thelma_py.cases.acoustic_pulse` (σ = 4 nodes, 10⁻³, 60 nodes from the
    inlet of a 300-node channel) after its way out and back: reflected over incident."""
    return acoustic_pulse.measured_reflection(inlet=inlet, u=u, tau=tau, lattice=lattice,
                                              device="cpu")


@pytest.mark.parametrize(("u", "tau"), [(0.05, 0.51), (0.0, 0.5005), (0.1, 0.6)])
def test_a_pressure_pulse_leaves_through_the_characteristic_inlet(u, tau):
    """Measured (D2Q9): the equilibrium inlet reflects 0.97–1.03 of the pulse, the
    characteristic one 0.027–0.046 (the rest: the linearised, one-dimensional condition on a
    pulse 4 nodes wide; D3Q19 0.040). Bars: above 0.8 and below 0.08."""
    assert reflection("equilibrium", u, tau) > 0.8
    assert reflection("characteristic", u, tau) < 0.08


def test_the_pulse_leaves_in_3d_too():
    assert reflection("characteristic", 0.05, 0.51, "D3Q19") < 0.08


@pytest.mark.parametrize("lattice", [D2Q9, D3Q19])
def test_the_prescribed_state_is_kept_and_the_outgoing_wave_passes(lattice):
    """At the prescribed state the rule returns its equilibrium exactly; a small outgoing
    acoustic wave at the node (δu_n = c_s δρ) passes unchanged: the rule returns the
    equilibrium of the wave's own ρ and u."""
    d, cs = lattice.d, np.sqrt(lattice.cs2)
    normal = np.array([-1] + [0] * (d - 1))
    value = [0.04, 0.01, 0.0][:d] + [0.0] * (3 - d) + [1.0]

    def state(rho, u):
        return np.array(lattice.equilibrium(np.array(rho), [np.array(v) for v in u]))

    keep = characteristic_rule(lattice, normal, state(1.0, value[:d]), lambda v: v, value)
    np.testing.assert_allclose(np.array(keep), state(1.0, value[:d]), atol=1e-15)
    drho = 1e-4
    wave = list(value[:d])
    wave[0] -= cs * drho  # u_n = −u_x rises by c_s δρ: a wave leaving through the −x face
    out = characteristic_rule(lattice, normal, state(1.0 + drho, wave), lambda v: v, value)
    np.testing.assert_allclose(np.array(out), state(1.0 + drho, wave), atol=1e-9)


def test_lw_acm_refuses_the_characteristic_inlet():
    geometry = tp.geometry.Geometry((12, 6), periodic=(False, True))
    geometry.inlet("-x", velocity=(0.01, 0.0), kind="characteristic")
    geometry.outlet("+x", kind="equilibrium")
    with pytest.raises(ValueError, match=r"CHARACTERISTIC_VELOCITY.*use compute 'lbm'"):
        tp.compose("D2Q9", geometry, tp.plugin("compute", "lwacm-fused", nu=0.01), device="cpu")

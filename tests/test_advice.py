"""Advice in errors and warnings is right for the scheme in use and moves the parameter the
right way (ν = U N / Re: a smaller lattice velocity U or fewer nodes N lower ν)."""

from __future__ import annotations

import warnings

import pytest

import thelma_py as tp
from thelma_py.units import check_tau


@pytest.mark.parametrize(("compute", "nu"), [("lbm", 20.0), ("lwacm", 0.2), ("lwacm-fused", 0.2)])
def test_a_too_large_viscosity_is_lowered_by_a_smaller_velocity_or_fewer_nodes(compute, nu):
    with pytest.raises(ValueError) as error:  # LBM's tau limit is checked in compose
        tp.compose("D2Q9", tp.geometry.periodic_box((4, 4)), tp.plugin("compute", compute, nu=nu),
                   device="cpu")
    message = str(error.value)
    assert "smaller lattice velocity" in message and "fewer nodes" in message
    assert "larger lattice velocity" not in message and "finer lattice" not in message


def test_tau_near_half_warning_does_not_prescribe_a_collision_model():
    with pytest.warns(UserWarning, match="very close to 0.5") as record:
        check_tau(0.501)
    message = str(record[0].message)
    assert "finer lattice" in message and "collision" not in message


@pytest.mark.parametrize(
    ("compute", "params", "suggests"),
    [
        ("lbm", {"collision": "bgk"}, "collision='mrt'"),
        ("lbm", {"collision": "trt"}, "collision='mrt'"),
        ("lbm", {"collision": "mrt"}, None),
        ("lwacm", {}, "compute 'lbm' with collision='mrt'"),
        ("lwacm-fused", {}, "compute 'lbm' with collision='mrt'"),
    ],
)
def test_stability_advice_fits_the_scheme(compute, params, suggests):
    advice = tp.plugin("compute", compute, nu=0.01, **params).stability_advice()
    assert advice.startswith("lower the lattice velocity or raise the resolution")
    if suggests is None:
        assert "collision" not in advice
    else:
        assert suggests in advice


@pytest.mark.parametrize(("collision", "suggests"), [("mrt", False), ("bgk", True)])
def test_the_divergence_message_advises_for_the_scheme_in_use(collision, suggests):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver = tp.compose("D2Q9", tp.geometry.cavity((8, 8), lid_velocity=(0.05, 0.0)),
                            tp.plugin("compute", "lbm", nu=0.01, collision=collision),
                            device="cpu")
    rho, u = solver.engine.macroscopic()
    rho = rho.copy()
    rho[3, 2] = float("nan")
    solver.engine.initialize(rho, u)
    with pytest.raises(tp.DivergenceError, match=r"node \(x, y\) = \(2, 3\)") as error:
        solver.check_finite()
    assert ("collision='mrt'" in str(error.value)) is suggests

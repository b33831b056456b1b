"""The subgrid model parameter: conversion, refusals, and the Smagorinsky relaxation time."""

import math

import numpy as np
import pytest

from thelma_py.codegen.expr import Expr
from thelma_py.subgrid import Smagorinsky, subgrid_model


def test_specs_convert():
    assert subgrid_model(None) is None
    assert subgrid_model("smagorinsky") == Smagorinsky()
    assert subgrid_model({"name": "smagorinsky", "c_s": 0.1}).c_s == 0.1
    model = Smagorinsky(c_s=0.12)
    assert subgrid_model(model.as_dict()) == model


@pytest.mark.parametrize("spec, words", [
    ("wale", "valid: None"),
    ({"name": "smagorinsky", "cs": 0.1}, "valid: c_s"),
    ({"name": "smagorinsky", "c_s": -0.1}, "[0, 1]"),
    ({"name": "smagorinsky", "c_s": float("nan")}, "[0, 1]"),
])
def test_bad_specs_say_what_is_allowed(spec, words):
    with pytest.raises(ValueError, match=None) as err:
        subgrid_model(spec)
    assert words in str(err.value)


def test_stress_form_solves_the_implicit_relation():
    """τ = τ₀ + 3 C² |S| with |S| = √2 |Π| / (2 ρ c_s² τ): check the root by substitution."""
    model = Smagorinsky(c_s=0.17)
    tau0, rho, stress = 0.5003, 1.02, np.array([0.0, 1e-4, 3e-3])
    tau = model.tau_from_stress(tau0, stress, rho)
    strain = math.sqrt(2.0) * stress / (2.0 * rho * tau / 3.0)
    np.testing.assert_allclose(tau, model.tau_from_strain(tau0, strain), rtol=1e-14)
    assert tau[0] == tau0


def test_traced_form_emits_sqrt():
    tau = Smagorinsky().tau_from_stress(Expr("tau0", atom=True), Expr("pn", atom=True),
                                        Expr("rho", atom=True))
    assert "sqrt(" in str(tau)

"""The table of collision models: lookup by name, parameters owned by each model, errors that
list the valid choices, and the record checkpoints keep."""

from __future__ import annotations

import re

import attrs
import pytest

import thelma_py as tp
from tests.lbm_setups import COLLISIONS
from thelma_py.checkpoint_meta import differences
from thelma_py.lattice import D2Q9, D3Q19, D3Q27
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.collision import (
    CollisionModel,
    Relaxation,
    collision_model,
    collision_models,
    register_collision,
)
from thelma_py.modules.compute.lbm.collisions import Mrt, Trt


def test_models_are_found_by_name_with_default_parameters():
    assert {"bgk", "trt", "mrt", "regularized"} <= set(collision_models())
    assert Lbm(nu=0.1).collision == collision_model("bgk")
    assert Lbm(nu=0.1, collision="trt").collision == Trt()
    assert Lbm(nu=0.1, collision={"name": "trt", "magic": 0.25}).collision == Trt(magic=0.25)
    model = Mrt(rates={"e": 1.1}, odd="magic")
    assert Lbm(nu=0.1, collision=model).collision is model


def test_each_model_owns_its_parameters():
    assert Lbm(nu=1 / 6, collision=Trt(magic=0.25)).omega_minus == pytest.approx(1.0)
    assert Lbm(nu=1 / 6, collision="bgk").omega_minus == Lbm(nu=1 / 6).omega
    with pytest.raises(ValueError, match="magic"):
        Trt(magic=-1.0)
    with pytest.raises(ValueError, match="odd"):
        Mrt(odd="tuned")
    with pytest.raises(ValueError, match="unknown MRT moment name.*valid names"):
        Lbm(nu=0.1, collision=Mrt(rates={"shear": 1.0})).check(D3Q19)


def test_errors_list_the_valid_choices():
    with pytest.raises(ValueError, match="unknown collision model 'lbgk'; valid: bgk, cumul"):
        Lbm(nu=0.1, collision="lbgk")
    with pytest.raises(ValueError, match=r"takes no parameter\(s\) \['magick'\]; valid: magic"):
        Lbm(nu=0.1, collision={"name": "trt", "magick": 0.25})
    with pytest.raises(ValueError, match="MRT is available for D2Q9 and D3Q19, not D3Q27"):
        Relaxation(D3Q27, "mrt")
    with pytest.raises(TypeError, match="model name"):
        Lbm(nu=0.1, collision=3)


def test_a_model_must_be_registered_once():
    @attrs.frozen(kw_only=True)
    class Unregistered(CollisionModel):
        def relax(self, lattice, g, let, omega, omega_minus):
            return [omega * gi for gi in g]

    with pytest.raises(TypeError, match="register_collision"):
        Unregistered()
    with pytest.raises(ValueError, match="already registered"):
        register_collision("trt")(Unregistered)


def test_the_checkpoint_record_names_the_model_and_its_parameters():
    record = attrs.asdict(Lbm(nu=0.1, collision=Trt(magic=0.25)))
    assert record["collision"] == {"name": "trt", "magic": 0.25}
    assert collision_model(record["collision"]) == Trt(magic=0.25)  # and reads back
    other = attrs.asdict(Lbm(nu=0.1, collision="regularized"))
    assert "collision.name differs: checkpoint trt, run regularized" in differences(
        {"compute": record}, {"compute": other})


@pytest.mark.parametrize("name", COLLISIONS)
@pytest.mark.parametrize("lattice", [D2Q9, D3Q19, D3Q27], ids=lambda lat: lat.name)
def test_a_model_refuses_a_lattice_it_cannot_run_on_when_the_solver_is_built(name, lattice):
    """The (lattice, model) pairs the table-driven tests leave out are refused, with the
    model's own reason, when the engine is built (MRT has no D3Q27 basis)."""
    reason = collision_model(name).unsupported(lattice)
    shape = (4,) * lattice.d
    build = lambda: tp.compose(lattice.name, tp.geometry.periodic_box(shape),  # noqa: E731
                               tp.plugin("compute", "lbm", nu=0.1, collision=name),
                               device="cpu")
    if reason is None:
        assert build().time_step == 0
    else:
        with pytest.raises(ValueError, match=re.escape(reason)):
            build()
    refused = {("mrt", "D3Q27"), ("cumulant", "D2Q9"), ("cumulant", "D3Q19")}
    assert (reason is None) == ((name, lattice.name) not in refused)


def test_a_model_lists_its_own_parameters_only():
    """The registered name is derived, never given: not a constructor argument, not in the
    listing a solver prints (what users read back as the model they chose)."""
    assert repr(Trt()) == "Trt(magic=0.1875)"
    assert Trt().name == "trt" and Mrt().name == "mrt"
    with pytest.raises(TypeError):
        Trt(name="bgk")


def test_default_parameters_are_the_published_choices():
    """Λ = 3/16 puts halfway walls exactly for Poiseuille (Ginzburg & d'Humières 2003); it is
    TRT's default and the ω⁻ of MRT's 'magic' odd rates."""
    assert Trt().magic == 3 / 16 and Mrt().magic == 3 / 16
    assert Mrt().rates == {} and Mrt().odd == "published"


@pytest.mark.parametrize("model", [Trt, Mrt])
@pytest.mark.parametrize("magic", [0.0, -0.1])
def test_a_magic_parameter_that_is_not_positive_is_refused(model, magic):
    with pytest.raises(ValueError, match="magic"):
        model(magic=magic)


@pytest.mark.parametrize("rates", [{"e": "fast"}, {"e": float("nan")}, {1: 1.2},
                                   {"eps": float("inf")}])
def test_mrt_refuses_rates_that_are_not_finite_numbers_by_name(rates):
    with pytest.raises(ValueError, match="MRT rates are numbers by moment name"):
        Mrt(rates=rates)


@pytest.mark.parametrize("name", COLLISIONS)
def test_model_parameters_are_given_by_keyword(name):
    """A model's parameters are named (``Trt(magic=0.25)``): a positional value is refused, so
    a new parameter can never shift the meaning of an old call."""
    with pytest.raises(TypeError):
        collision_models()[name](0.25)

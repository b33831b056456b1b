"""Every compute scheme restarts bit for bit from its checkpoint (NumPy engines, and the CUDA
ones on a GPU): each collision model of the table on every lattice it runs on, the three
streaming patterns, the 16-bit stores (stochastic rounding: the step count seeds it), LES,
and both LW-ACM schemes with each kind of record. A lid-driven cavity (walls at rest and a
moving one) gives a state that changes at every node; the run is saved after an odd number
of steps (AA's odd phase), then stepped on from the file."""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from tests.lbm_setups import LATTICES
from thelma_py.modules.compute.lbm.collision import collision_models

SHAPES = {2: (14, 11), 3: (9, 7, 6)}
LES = {"name": "smagorinsky", "c_s": 0.17}


def _models() -> list:
    cases = []
    for name, model in collision_models().items():
        for lattice in ("D2Q9", "D3Q19", "D3Q27"):
            if model().unsupported(LATTICES[lattice]) is None:
                cases.append(pytest.param(lattice, "lbm", {"collision": name}, "float64",
                                          id=f"{name}-{lattice}"))
    return cases


CASES = [
    *_models(),
    pytest.param("D2Q9", "lbm", {"streaming": "aa"}, "float64", id="bgk-aa"),
    pytest.param("D3Q19", "lbm", {"streaming": "push", "collision": "mrt"}, "float64",
                 id="mrt-push"),
    pytest.param("D3Q27", "lbm", {"streaming": "aa", "collision": "cumulant"}, "float32",
                 id="cumulant-aa"),
    pytest.param("D3Q19", "lbm", {"les": LES}, "float64", id="bgk-les"),
    pytest.param("D3Q19", "lbm", {"store": "fp16s"}, "float32", id="bgk-fp16s"),
    pytest.param("D3Q19", "lbm", {"store": "fp16c", "streaming": "aa"}, "float32",
                 id="bgk-fp16c-aa"),
    pytest.param("D2Q9", "lbm", {"store": "fp16s", "rounding": "stochastic"}, "float32",
                 id="bgk-fp16s-stochastic"),
    pytest.param("D2Q9", "lwacm", {}, "float64", id="lwacm"),
    pytest.param("D3Q19", "lwacm", {"les": LES}, "float32", id="lwacm-les"),
    pytest.param("D3Q19", "lwacm-fused", {}, "float64", id="fused"),
    pytest.param("D3Q19", "lwacm-fused", {"les": LES}, "float64", id="fused-les-shifted"),
    pytest.param("D2Q9", "lwacm-fused", {"les": LES, "density": "absolute"}, "float32",
                 id="fused-les-absolute"),
    pytest.param("D3Q19", "lwacm-fused", {"store": "fp16s"}, "float32", id="fused-fp16s"),
    pytest.param("D3Q19", "lwacm-fused", {"store": "fp16s", "rounding": "stochastic"},
                 "float32", id="fused-fp16s-stochastic"),
]


def _solver(lattice: str, compute: str, params: dict, precision: str, device: str) -> tp.Solver:
    d = LATTICES[lattice].d
    lid = (0.08, 0.0) if d == 2 else (0.08, 0.0, 0.0)
    return tp.compose(lattice, tp.geometry.cavity(SHAPES[d], lid_velocity=lid),
                      tp.plugin("compute", compute, nu=0.004, **params), device=device,
                      precision=precision)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize(("lattice", "compute", "params", "precision"), CASES)
def test_every_scheme_restarts_bit_for_bit(tmp_path, lattice, compute, params, precision,
                                           device):
    first = _solver(lattice, compute, params, precision, device)
    first.run(9)
    path = first.save_checkpoint(tmp_path / "ck")
    first.run(6)
    again = _solver(lattice, compute, params, precision, device)
    assert again.load_checkpoint(path) == 9
    again.run(6)
    assert np.abs(first.velocity()).max() > 1e-3  # the lid has set the box moving
    np.testing.assert_array_equal(again.density(), first.density())
    np.testing.assert_array_equal(again.velocity(), first.velocity())
    for key, value in first.engine.state().items():
        np.testing.assert_array_equal(again.engine.state()[key], value, err_msg=key)

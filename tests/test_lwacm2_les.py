"""Smagorinsky LES in the two-step LW-ACM scheme (``lwacm``, ``les=...``): the strain estimate of
the pulled f* against a Taylor expansion, the physics against a profile solved outside the code,
the CUDA kernel (host stand-in) against the NumPy reference, cut domains bit for bit,
checkpoints, kernel text and nvcc."""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from tests.lbm_setups import LATTICES
from tests.test_lwacm_les import smagorinsky_channel
from tests.test_parallel_host_cuda import (
    STEPS,
    assert_ranks_equal_whole,
    decomposed,
    geometry,
    initialize,
    step_together,
)
from thelma_py.backend import select_backend
from thelma_py.codegen.expr import identity_let
from thelma_py.modules.compute.lbm import layouts
from thelma_py.modules.compute.lwacm import Lwacm, rule
from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate


@pytest.mark.parametrize("lat", ["D2Q9", "D3Q19"])
def test_pulled_second_moment_is_the_strain_times_one_minus_kappa(lat):
    """Q = Σ c c f*(x − c) − ρ' I/3 − j j/ρ' of a smooth field, f* = f^(e) − κ f^(e,o) with no
    eddy part, against the Taylor result −(1 − κ)/3 (∂_a j_b + ∂_b j_a) from the exact
    derivatives of u_x = A sin(k y) + B sin(k x), ρ = 1 (a shear and a normal strain). Error
    terms: Δx² k²/6 = 0.6 % of the derivative (N = 32) and ½ ∂∂ of the equilibrium's ρ u u
    fourth moment, about 1.5 u k / (1 − κ) = 0.2 % of it at u = 1e-3 (2.4 % at u = 1e-2: this
    term grows with the grid Reynolds number, DESIGN.md); tolerance 2 % of max |Q|.
    Planted bug seen failing: j j / ρ' left out of Q (12 % of max |Q| at u = 1e-3)."""
    lattice = LATTICES[lat]
    n, amp_y, amp_x, nu = 32, 0.001, 0.0004, 0.02
    shape = (n,) * lattice.d
    geo = tp.geometry.periodic_box(shape)
    engine = Lwacm(nu=nu).create(lattice, geo.evaluate(lattice), select_backend("cpu"),
                                 np.float64)
    coords = np.meshgrid(*[np.arange(n, dtype=float)] * lattice.d, indexing="ij")[::-1]
    k = 2 * np.pi / n
    u = np.zeros((lattice.d, *shape))
    u[0] = amp_y * np.sin(k * coords[1]) + amp_x * np.sin(k * coords[0])
    engine.initialize(np.ones(shape), u)
    f_in = list(layouts.stream(lattice, engine.walls, engine.f))
    rho = sum(f_in)
    q = rule.pulled_stress(lattice, f_in, list(engine.j), rho, identity_let)
    grad = np.zeros((lattice.d, lattice.d, *shape))  # grad[a, b] = ∂_b j_a
    grad[0, 1] = amp_y * k * np.cos(k * coords[1])
    grad[0, 0] = amp_x * k * np.cos(k * coords[0])
    factor = (1.0 - Lwacm(nu=nu).kappa) / 3.0
    scale = factor * amp_y * k
    for (a, b), value in q.items():
        expected = -factor * (grad[a, b] + grad[b, a])
        assert np.abs(value - expected).max() < 0.02 * scale, (a, b)


def channel(n, nu0, c_s, g):
    compute = tp.plugin("compute", "lwacm", nu=nu0, force=(g, 0.0),
                        les=None if c_s is None else {"name": "smagorinsky", "c_s": c_s})
    return tp.compose("D2Q9", tp.geometry.channel((4, n), flow_axis=0, wall_axis=1), compute,
                      device="cpu")


def test_two_step_les_channel_follows_the_smagorinsky_momentum_balance():
    """The single step's channel test (n = 16, ν0 = 0.01, C_s = 0.5, g = 1.6e-5; the balance
    (ν0 + C_s²|u'|) u' = −g (y − n/2) solved by quadrature, 15 % below laminar at the centre)
    for the two-step scheme: within 2 % of the maximum after 12 000 steps (6 s). Measured:
    0.58 %. Planted bugs seen failing: no LES 17 %; κ per node from |S| instead of the eddy
    stress in f* (the viscous term ∇²(ν u), centre velocity back near laminar) 13 %; the
    stress share 1 − (1 − κ)/τ' replaced by 1 − τ₀/τ' diverges (deviation 7.7)."""
    n, nu0, c_s, g = 16, 0.01, 0.5, 1.6e-5
    solver = channel(n, nu0, c_s, g)
    solver.step(12_000)
    profile = solver.velocity()[0].mean(axis=1)
    exact = smagorinsky_channel(n, nu0, c_s, g)
    deviation = np.abs(profile - exact).max() / exact.max()
    assert deviation < 0.02, deviation


def test_two_step_les_conserves_mass_and_momentum_in_a_periodic_box():
    """The eddy part of f* has no mass and no momentum, so a periodic box keeps Σρ and Σj to
    rounding (1e-12 relative, fp64) with LES acting on a Taylor-Green flow."""
    init = tp.plugin("init", "taylor-green", u0=0.05, size=(16, 16))
    plain, les = (tp.compose("D2Q9", tp.geometry.periodic_box((16, 16)),
                             tp.plugin("compute", "lwacm", nu=0.002, les=model), init=init,
                             device="cpu") for model in (None, {"name": "smagorinsky",
                                                                "c_s": 0.3}))
    mass0 = les.engine.macroscopic()[0].sum()
    j0 = les.engine.j.sum(axis=(1, 2))
    plain.step(50)
    les.step(50)
    assert abs(les.engine.macroscopic()[0].sum() / mass0 - 1) < 1e-12
    np.testing.assert_allclose(les.engine.j.sum(axis=(1, 2)), j0, rtol=0, atol=1e-12)
    # and it dissipates: less kinetic energy than without LES
    assert (les.velocity() ** 2).sum() < 0.99 * (plain.velocity() ** 2).sum()


def test_two_step_les_changes_nothing_without_strain():
    """A uniform flow has Q = 0 up to rounding: with LES the step is the plain one."""
    results = []
    for les in (None, "smagorinsky"):
        init = tp.plugin("init", "equilibrium", u=(0.03, -0.01))
        solver = tp.compose("D2Q9", tp.geometry.periodic_box((8, 8)),
                            tp.plugin("compute", "lwacm", nu=0.01, les=les), init=init,
                            device="cpu")
        solver.step(5)
        results.append(solver.velocity())
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize(("case", "dims", "precision"), [
    ("lid", (1, 1, 3), "float64"), ("2d", (1, 3), "float32"), ("zperiodic", (1, 2, 1),
                                                                "float32")])
def test_host_cuda_two_step_les_equals_numpy_and_ranks_bit_for_bit(host_gpu, case, dims,
                                                                    precision):
    """The generated two-step LES kernel (host stand-in, walls and a moving lid) against the
    NumPy reference (1e-13 fp64, 1e-5 fp32), and a cut domain (f* exchanged, as without LES)
    against one domain bit for bit."""
    lattice = LATTICES["D3Q19" if len(dims) == 3 else "D2Q9"]
    geo = geometry(case)
    params = Lwacm(nu=0.003, les={"name": "smagorinsky", "c_s": 0.3})
    dtype = np.dtype(precision)
    boxes, ranks, plans, whole = decomposed(params, lattice, geo, dims, dtype, host_gpu)
    assert "tau_t" in whole.source and "sqrt(" in whole.source
    rho, u = step_together(ranks, plans, whole, STEPS)
    assert_ranks_equal_whole(boxes, ranks, u)
    cpu = select_backend("cpu")
    tolerance = 1e-13 if precision == "float64" else 1e-5
    results = []
    for model in (params, Lwacm(nu=0.003)):
        reference = model.create(lattice, geo.evaluate(lattice), cpu, dtype)
        initialize(reference, geo, (0,) * geo.dim, geo.shape)
        reference.step(STEPS)
        results.append(reference.macroscopic())
    np.testing.assert_allclose(u, results[0][1], rtol=0, atol=tolerance)
    np.testing.assert_allclose(rho, results[0][0], rtol=0, atol=tolerance)
    assert np.abs(u - results[1][1]).max() > 10 * tolerance  # LES acted


@pytest.mark.parametrize("lat", ["D2Q9", "D3Q19"])
def test_two_step_les_kernel_text(lat):
    plain = LwacmKernelConfig(LATTICES[lat], "float", "two-step", moving_walls=True)
    les = LwacmKernelConfig(LATTICES[lat], "float", "two-step", moving_walls=True,
                            les=tp.subgrid.Smagorinsky(c_s=0.1))
    assert "tau_t" not in generate(plain)
    assert "tau_t" in generate(les) and "pt_trace" in generate(les)


def les_config(lat, real):
    return LwacmKernelConfig(LATTICES[lat], real, "two-step", moving_walls=True,
                             les=tp.subgrid.Smagorinsky())


@pytest.mark.nvcc(sources=lambda lat, real: generate(les_config(lat, real)))
@pytest.mark.parametrize(("lat", "real"), [("D3Q19", "float"), ("D2Q9", "double"),
                                           ("D3Q27", "float")])
def test_two_step_les_kernel_compiles_with_nvcc(tmp_path, lat, real):
    from tests.nvcc import compile_cubin

    cfg = les_config(lat, real)
    result = compile_cubin(generate(cfg), tmp_path, cfg.name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr.lower(), result.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19"])
def test_gpu_two_step_les_matches_numpy(lattice_name, dtype):
    """GPU ≡ NumPy for the two-step scheme with LES: random f* and j, walls and a moving wall,
    120 steps (graph batches and a remainder); tolerances of tests/test_gpu_lwacm.py."""
    from tests.lbm_setups import random_state, walled_geometry
    from tests.test_gpu_lwacm import STEPS as GPU_STEPS
    from tests.test_gpu_lwacm import TOLERANCE, random_fields, relative_l2

    lattice = LATTICES[lattice_name]
    tags = walled_geometry(lattice).evaluate(lattice)
    params = Lwacm(nu=0.04, les={"name": "smagorinsky", "c_s": 0.17})
    cpu = params.create(lattice, tags, select_backend("cpu"), np.dtype(dtype))
    gpu = params.create(lattice, tags, select_backend("cuda"), np.dtype(dtype))
    rho, u = random_fields(lattice, tags.tags.shape, dtype)
    state = {"f": random_state(lattice, tags.tags.shape, dtype), "j": (rho * u).astype(dtype)}
    for engine in (cpu, gpu):
        engine.load_state(state)
    gpu.poison()
    cpu.step(GPU_STEPS)
    gpu.step(GPU_STEPS)
    fluid = tags.fluid
    state_cpu, state_gpu = cpu.state(), gpu.state()
    for key in state_cpu:
        a, b = state_gpu[key][..., fluid], state_cpu[key][..., fluid]
        assert np.isfinite(a).all(), key
        assert relative_l2(a, b) < TOLERANCE[dtype], key


def test_two_step_bad_les_input_gives_one_line_errors():
    with pytest.raises(ValueError, match="unknown les model"):
        Lwacm(nu=0.01, les="wale")
    with pytest.raises(ValueError, match="c_s must be"):
        Lwacm(nu=0.01, les={"name": "smagorinsky", "c_s": 2.0})

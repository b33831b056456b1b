"""Every CUDA LW-ACM configuration against the NumPy reference (skipped without a GPU).

The walled geometry of tests/lbm_setups.py (periodic x, walls beyond the other faces, a moving
lid, a moving sphere, a ragged x size) from random non-equilibrium states: random ρ, u for the
single-step scheme; random f* and a random momentum j (not in equilibrium with each other) for
the two-step one. Tolerances as for LBM
(tests/test_gpu_lbm.py): both sides evaluate the same expression trees (kernels.py traces
rule.py) and differ only by fused multiply-adds, ~1e-7 relative in fp32 and ~1e-15 in fp64
after 120 steps; a wrong link or halo cell shows as O(1e-2) or NaN.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.lbm_setups import LATTICES, random_state, walled_geometry
from thelma_py.backend import select_backend

pytestmark = pytest.mark.gpu

TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}
STEPS = 120  # > 2 graph batches of 32 steps, plus a remainder
SCHEMES = ("lwacm", "lwacm-fused")


def relative_l2(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def random_fields(lattice, shape, dtype, seed=1):
    rng = np.random.default_rng(seed)
    rho = (1.0 + 0.05 * rng.standard_normal(shape)).astype(dtype)
    u = (0.04 * rng.standard_normal((lattice.d, *shape))).astype(dtype)
    return rho, u


def assert_gpu_matches_numpy(params, lattice, tags, dtype, tolerance: float, marker: str):
    """CUDA and NumPy engines of ``params`` from one random state (velocities halved), STEPS
    steps: ρ within ``tolerance`` (relative ℓ²), u within 10 × that (relative ℓ² and largest
    difference); the CUDA source holds ``marker``. Returns (cpu, gpu) for further checks."""
    cpu = params.create(lattice, tags, select_backend("cpu"), np.dtype(dtype))
    gpu = params.create(lattice, tags, select_backend("cuda"), np.dtype(dtype))
    assert marker in gpu.source
    rho, u = random_fields(lattice, tags.tags.shape, dtype)
    u *= 0.5
    for engine in (cpu, gpu):
        engine.initialize(rho, list(u))
    cpu.step(STEPS)
    gpu.step(STEPS)
    rho_c, u_c = (np.asarray(a) for a in cpu.macroscopic())
    rho_g, u_g = (np.asarray(a.get()) for a in gpu.macroscopic())
    assert np.isfinite(u_g).all()
    assert relative_l2(rho_g, rho_c) < tolerance
    assert relative_l2(u_g, u_c) < tolerance * 10, relative_l2(u_g, u_c)
    assert np.abs(u_g - u_c).max() < tolerance * 10
    return cpu, gpu


def assert_steps_alike(cpu, gpu, fluid, dtype) -> None:
    """STEPS steps of both engines, then ρ and u on the ``fluid`` nodes: finite on the GPU and
    within :data:`TOLERANCE` of the NumPy reference (relative ℓ²)."""
    cpu.step(STEPS)
    gpu.step(STEPS)
    rho_c, u_c = cpu.macroscopic()
    rho_g, u_g = (a.get() for a in gpu.macroscopic())
    assert np.isfinite(u_g[:, fluid]).all()
    assert relative_l2(rho_g[fluid], rho_c[fluid]) < TOLERANCE[dtype]
    assert relative_l2(u_g[:, fluid], u_c[:, fluid]) < TOLERANCE[dtype]


def engines(lattice_name, scheme, dtype, force=None):
    from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused

    lattice = LATTICES[lattice_name]
    tags = walled_geometry(lattice).evaluate(lattice)
    params = (Lwacm if scheme == "lwacm" else LwacmFused)(nu=0.04, force=force)
    cpu = params.create(lattice, tags, select_backend("cpu"), np.dtype(dtype))
    gpu = params.create(lattice, tags, select_backend("cuda"), np.dtype(dtype))
    rho, u = random_fields(lattice, tags.tags.shape, dtype)
    state = {"rho": rho, "u": u}
    if scheme == "lwacm":  # f*, j = ρ u
        state = {"f": random_state(lattice, tags.tags.shape, dtype), "j": (rho * u).astype(dtype)}
    cpu.load_state(state)
    gpu.load_state(state)
    return cpu, gpu, tags


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19"])
@pytest.mark.parametrize("forced", [False, True], ids=["", "force"])
def test_cuda_matches_numpy(lattice_name, scheme, dtype, forced):
    force = (2e-5, -1e-5, 0.0)[: LATTICES[lattice_name].d] if forced else None
    cpu, gpu, tags = engines(lattice_name, scheme, dtype, force)
    if scheme == "lwacm":  # the fused CUDA records are 4 values even in 2D (16 B loads)
        assert gpu.memory_bytes_per_node == cpu.memory_bytes_per_node
    else:
        assert gpu.memory_bytes_per_node == 8 * np.dtype(dtype).itemsize + tags.tags.itemsize
    gpu.poison()
    cpu.step(STEPS)
    gpu.step(STEPS)
    fluid = tags.fluid
    state_cpu, state_gpu = cpu.state(), gpu.state()
    for key in state_cpu:
        a, b = state_gpu[key][..., fluid], state_cpu[key][..., fluid]
        assert np.isfinite(a).all(), f"unwritten fluid values in {key} (NaN poison)"
        assert relative_l2(a, b) < TOLERANCE[dtype], key
    rho_c, u_c = cpu.macroscopic()
    rho_g, u_g = (a.get() for a in gpu.macroscopic())
    assert np.isfinite(rho_g[fluid]).all() and np.isfinite(u_g[:, fluid]).all()
    assert relative_l2(rho_g[fluid], rho_c[fluid]) < TOLERANCE[dtype]
    assert relative_l2(u_g[:, fluid], u_c[:, fluid]) < TOLERANCE[dtype]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_cuda_steps_in_any_chunking_agree(scheme):
    """One call of 70 steps equals 70 calls of one step (graphs vs single launches)."""
    _, a, _ = engines("D3Q19", scheme, np.float64)
    _, b, _ = engines("D3Q19", scheme, np.float64)
    a.step(70)
    for _ in range(70):
        b.step(1)
    for key, value in a.state().items():
        np.testing.assert_array_equal(b.state()[key], value)
    np.testing.assert_array_equal(a.macroscopic()[1].get(), b.macroscopic()[1].get())


@pytest.mark.parametrize("scheme", SCHEMES)
def test_cuda_restart_is_bit_identical(scheme):
    _, a, _ = engines("D3Q19", scheme, np.float32)
    a.step(33)
    saved = a.state()
    a.step(40)
    _, b, _ = engines("D3Q19", scheme, np.float32)
    b.load_state(saved)
    b.step(40)
    for key, value in a.state().items():
        np.testing.assert_array_equal(b.state()[key], value)
    np.testing.assert_array_equal(a.macroscopic()[1].get(), b.macroscopic()[1].get())


@pytest.mark.parametrize("scheme", SCHEMES)
def test_cuda_solver_runs_the_cavity(scheme):
    """The config-script path: a D3Q19 cavity on the GPU gives the NumPy fields."""
    import thelma_py as tp

    def run(device):
        geometry = tp.geometry.cavity((20, 12, 9), lid_velocity=(0.05, 0.0, 0.0),
                                      lid_face="+z")
        solver = tp.compose("D3Q19", geometry, tp.plugin("compute", scheme, nu=0.02),
                            device=device, precision="float64")
        solver.run(100)
        return solver.density(), solver.velocity()

    (rho_c, u_c), (rho_g, u_g) = run("cpu"), run("cuda")
    assert relative_l2(rho_g, rho_c) < 1e-12 and relative_l2(u_g, u_c) < 1e-12


def test_3d_cavity_re100_on_64_cubed_within_2_percent_of_lbm_mrt():
    """The LW-ACM issue's criterion: the steady 3D cavity at Re = 100 on 64³, velocity within
    2% of the lid speed (L2 over the nodes) of the LBM MRT solution, for both schemes."""
    from thelma_py.tools import validation

    result = validation.cavity3d_schemes(device="cuda", n=64, reynolds=100.0)
    for scheme, measure in result["schemes"].items():
        assert measure["l2"] < 0.02, (scheme, measure)

"""Invariants of the NumPy LBM reference: conservation, fixed points, forcing, checkpoints.

Tolerances, and why:

- fp64 conservation (mass, momentum): 1e-12 relative after 200 steps. Each step loses at most
  a few ulps (2.2e-16) of each node's mass to rounding, and those errors are not coherent, so
  the drift stays far below 200 x 1e-15; a wrong bounce-back or wall term changes the mass by
  O(u) ~ 1e-2 per step.
- fp32: 2e-5 relative. The populations are stored in single precision (ε = 6e-8); a systematic
  rounding bias of one ulp per step would give 200 x 6e-8 = 1.2e-5 after 200 steps, so 2e-5 is
  the worst-case rounding bound, still three orders below a real leak.
- Fixed points and uniform flow: 1e-14 absolute (a few ulps of populations of order 0.1-1).
"""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from tests.lbm_setups import CONFIGS
from thelma_py.geometry import Box, Geometry, Sphere, periodic_box

STEPS = 200
TOL = {"float64": 1e-12, "float32": 2e-5}


def shape_of(lattice: str):
    return (12, 10) if lattice == "D2Q9" else (7, 6, 5)


def make(lattice, geometry, collision, precision="float64", nu=0.05, force=None, init=None):
    compute = tp.plugin("compute", "lbm", nu=nu, collision=collision, force=force)
    return tp.compose(lattice, geometry, compute, init=init, device="cpu", precision=precision)


def randomize(solver, seed=0, amplitude=0.05, u=0.05):
    """Equilibrium at random ρ, u times (1 + noise): far from equilibrium and from rest."""
    rng = np.random.default_rng(seed)
    lat = solver.lattice
    shape = solver.geometry.array_shape
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    vel = [u * rng.standard_normal(shape) for _ in range(lat.d)]
    noise = amplitude * rng.standard_normal((lat.q, *shape))
    f = np.array(lat.equilibrium(rho, vel)) * (1.0 + noise)
    solver.engine.load_state({"f": f.astype(solver.dtype)})


def mass(solver):
    return solver.engine.state()["f"].astype(np.float64).sum()


def momentum(solver):
    f = solver.engine.state()["f"].astype(np.float64)
    return np.tensordot(solver.lattice.c.T.astype(np.float64), f, axes=1).reshape(
        solver.lattice.d, -1).sum(axis=1)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("moving", [False, True], ids=["walls-at-rest", "moving-lid"])
@pytest.mark.parametrize(("lattice", "collision"), CONFIGS, ids=lambda v: str(v))
@pytest.mark.slow
def test_mass_is_conserved_in_a_closed_box(lattice, collision, moving, precision):
    shape = shape_of(lattice)
    geo = Geometry(shape)
    if moving:
        # lid declared last owns the corners: the Ladd terms then cancel pairwise
        geo.edge("-x")
        lid = (0.1, 0.0) if len(shape) == 2 else (0.1, 0.0, 0.0)
        geo.edge("+y" if len(shape) == 2 else "+z", velocity=lid)
    solver = make(lattice, geo, collision, precision)
    randomize(solver)
    before = mass(solver)
    solver.run(STEPS)
    after = mass(solver)
    assert np.isfinite(after)
    assert abs(after / before - 1.0) < TOL[precision]
    if moving:  # the lid did something: the flow is not just decaying noise
        assert solver.velocity()[0].mean() > 1e-4


def test_a_leaky_wall_would_be_caught():
    """The check above can fail: a lid that owns no corner injects mass every step."""
    geo = Geometry((12, 10))
    geo.edge("+y", velocity=(0.1, 0.0))
    geo.edge("-x")  # declared after the lid: the top-left corner is at rest
    solver = make("D2Q9", geo, "bgk")
    before = mass(solver)
    solver.run(50)
    assert abs(mass(solver) / before - 1.0) > 1e-6


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize(("lattice", "collision"), CONFIGS, ids=lambda v: str(v))
def test_momentum_is_conserved_in_a_periodic_box(lattice, collision, precision):
    solver = make(lattice, periodic_box(shape_of(lattice)), collision, precision)
    randomize(solver, seed=1)
    p0, m0 = momentum(solver), mass(solver)
    assert np.abs(p0).max() > 1e-3 * m0  # a non-trivial total momentum
    solver.run(STEPS)
    scale = m0 * 0.05  # Σ |ρ u| scale of the state (|u| ~ 0.05)
    np.testing.assert_allclose(momentum(solver), p0, rtol=0, atol=TOL[precision] * scale)
    assert abs(mass(solver) / m0 - 1.0) < TOL[precision]


@pytest.mark.parametrize(("lattice", "collision"), CONFIGS, ids=lambda v: str(v))
def test_rest_state_is_a_fixed_point(lattice, collision):
    shape = shape_of(lattice)
    geo = Geometry(shape, periodic=(True,) + (False,) * (len(shape) - 1))
    geo.wall(Sphere(tuple(n / 2 for n in shape), 1.6))
    solver = make(lattice, geo, collision)
    f0 = solver.engine.state()["f"]
    solver.run(50)
    np.testing.assert_allclose(solver.engine.state()["f"], f0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(solver.velocity(), 0.0, atol=1e-14)
    np.testing.assert_allclose(solver.density(), 1.0, atol=1e-14)


@pytest.mark.parametrize(("lattice", "collision"), CONFIGS, ids=lambda v: str(v))
def test_uniform_flow_stays_uniform(lattice, collision):
    shape = shape_of(lattice)
    u = (0.05, -0.02, 0.03)[: len(shape)]
    init = tp.plugin("init", "equilibrium", rho=1.02, u=u)
    solver = make(lattice, periodic_box(shape), collision, init=init)
    solver.run(100)
    vel = solver.velocity()
    for a in range(len(shape)):
        np.testing.assert_allclose(vel[a], u[a], rtol=0, atol=1e-14)
    np.testing.assert_allclose(solver.density(), 1.02, rtol=0, atol=1e-14)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize(("lattice", "collision"), CONFIGS, ids=lambda v: str(v))
def test_guo_force_adds_rho_g_momentum_per_step(lattice, collision, precision):
    """Σ_x Σ_i c_i f_i grows by exactly (Σ_x ρ) g each step, from any state."""
    shape = shape_of(lattice)
    g = (2e-5, -1e-5, 3e-5)[: len(shape)]
    solver = make(lattice, periodic_box(shape), collision, precision, force=g)
    randomize(solver, seed=2)
    total_mass = mass(solver)
    p0 = momentum(solver)
    steps = 20
    solver.run(steps)
    expected = p0 + steps * total_mass * np.asarray(g)
    # fp64: rounding of O(1) momenta summed over ~200 nodes; fp32 as for mass conservation
    atol = {"float64": 1e-12, "float32": 2e-5 * 0.05}[precision] * total_mass
    np.testing.assert_allclose(momentum(solver), expected, rtol=0, atol=atol)
    # the check can fail: the growth is well above the tolerance
    assert np.abs(steps * total_mass * np.asarray(g)).min() > 100 * atol


def test_guo_force_uniform_acceleration_of_the_velocity():
    """From a uniform state the reported velocity grows by exactly g per step."""
    g = (1e-4, -2e-4)
    solver = make("D2Q9", periodic_box((6, 5)), "trt", force=g)
    u0 = solver.velocity().copy()
    solver.run(10)
    du = solver.velocity() - u0
    for a in range(2):
        np.testing.assert_allclose(du[a], 10 * g[a], rtol=1e-12, atol=1e-16)


@pytest.mark.parametrize(("lattice", "collision"), [("D2Q9", "mrt"), ("D3Q19", "trt"),
                                                    ("D3Q27", "bgk")])
def test_state_round_trip_continues_bit_identically(lattice, collision):
    shape = shape_of(lattice)
    geo = Geometry(shape, periodic=(True,) + (False,) * (len(shape) - 1))
    geo.wall(Box((1,) * len(shape), (2,) * len(shape)), velocity=(0.0, 0.01, 0.0)[: len(shape)])
    geo.edge("+y", velocity=(0.05, 0.0, 0.0)[: len(shape)])
    a = make(lattice, geo, collision, force=(1e-5,) + (0.0,) * (len(shape) - 1))
    randomize(a, seed=3)
    a.run(10)
    saved = a.engine.state()
    a.run(15)
    b = make(lattice, geo, collision, force=(1e-5,) + (0.0,) * (len(shape) - 1))
    b.engine.load_state(saved)
    b.run(15)
    np.testing.assert_array_equal(b.engine.state()["f"], a.engine.state()["f"])
    # state() is a copy: running on does not change what was saved
    assert not np.array_equal(saved["f"], a.engine.state()["f"])


def test_load_state_refuses_a_wrong_shape_or_dtype():
    solver = make("D2Q9", periodic_box((6, 5)), "bgk")
    f = solver.engine.state()["f"]
    with pytest.raises(ValueError, match="checkpoint"):
        solver.engine.load_state({"f": f[:, :-1]})
    with pytest.raises(ValueError, match="checkpoint"):
        solver.engine.load_state({"f": f.astype(np.float32)})


def test_moving_wall_term_at_the_lid_corner():
    """The top-left node pulls c = (1, −1) from the corner beyond −x and +y; with the lid
    declared last that corner moves, so the Ladd term is 2 w ρ_w (c·u_w) / c_s² = 6 w U."""
    lid = 0.1
    solver = make("D2Q9", tp.geometry.cavity((4, 3), (lid, 0.0)), "bgk")
    ny, nx = solver.geometry.array_shape
    walls = solver.engine.walls
    lat = solver.lattice
    i = [tuple(c) for c in lat.c.tolist()].index((1, -1))
    flat = (ny - 1) * nx + 0  # node (0, ny - 1)
    index = list(np.asarray(walls.index[i]))
    assert flat in index
    assert np.asarray(walls.term[i])[index.index(flat)] == pytest.approx(6 * lat.w[i] * lid,
                                                                         rel=1e-15)


def test_streaming_moves_populations_along_their_velocity():
    """The engine's streaming pulls population i at node x from x − c_i (periodic wrap)."""
    solver = make("D3Q19", periodic_box((5, 4, 3)), "bgk")
    rng = np.random.default_rng(4)
    f = rng.random((19, 3, 4, 5))
    streamed = solver.engine.stream(f)
    for i, c in enumerate(solver.lattice.c.tolist()):
        cx, cy, cz = c
        for z, y, x in [(0, 0, 0), (2, 3, 4), (1, 2, 0)]:
            assert streamed[i, z, y, x] == f[i, (z - cz) % 3, (y - cy) % 4, (x - cx) % 5]


@pytest.mark.parametrize(("lattice", "collision"), [("D2Q9", "mrt"), ("D3Q19", "bgk"),
                                                    ("D3Q27", "trt")])
def test_collision_blocking_does_not_change_results(lattice, collision, monkeypatch):
    """The NumPy engine collides in cache-sized blocks of nodes; elementwise arithmetic makes
    the result bit-identical to one block, whatever the block boundaries."""
    import thelma_py.compute

    shape = shape_of(lattice)
    geo = Geometry(shape, periodic=(True,) + (False,) * (len(shape) - 1))
    geo.wall(Sphere(tuple(n / 2 for n in shape), 1.6))
    geo.edge("+y", velocity=(0.05, 0.0, 0.0)[: len(shape)])
    force = (1e-5,) + (0.0,) * (len(shape) - 1)
    runs = []
    for block_bytes in (1 << 30, 1000):  # one block; blocks of a few nodes, unaligned
        monkeypatch.setattr(thelma_py.compute, "BLOCK_BYTES", block_bytes)
        solver = make(lattice, geo, collision, force=force)
        assert (len(solver.engine._blocks) == 1) == (block_bytes > 1e6)
        randomize(solver, seed=5)
        solver.run(10)
        runs.append(solver.engine.state()["f"])
    assert np.array_equal(runs[0], runs[1])


def test_initial_velocity_is_reported_unchanged_with_a_body_force():
    """With Guo forcing the stored state carries u + g/2; the reported velocity is u."""
    from thelma_py.backend import select_backend
    from thelma_py.geometry import periodic_box
    from thelma_py.lattice import D2Q9
    from thelma_py.modules.compute.lbm import Lbm

    tags = periodic_box((8, 6)).evaluate(D2Q9)
    engine = Lbm(nu=0.1, force=(1e-3, -2e-3)).create(D2Q9, tags, select_backend("cpu"),
                                                     np.dtype(np.float64))
    u0 = np.stack([np.full((6, 8), 0.01), np.full((6, 8), -0.02)])
    engine.initialize(np.ones((6, 8)), u0)
    np.testing.assert_allclose(engine.macroscopic()[1], u0, rtol=0, atol=1e-15)

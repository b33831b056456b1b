"""Invariants of the NumPy LW-ACM references (two-step ``lwacm``, single-step ``lwacm-fused``).

Tolerances, and why:

- Rest state: ρ = 1, u = 0 is a fixed point of both schemes, walls at rest included (the ghost
  of a wall at rest is u_g = −0). Bound 1e-14 (fp64) / 1e-6 (fp32): the weights sum to 1 only
  to a few ulps.
- Mass and momentum: in a periodic box both are conserved exactly by the rule (Σ_x Σ_i of the
  odd-part correction vanishes, and Σ_i f*_i = ρ, Σ_i c_i f^(e)_i = ρ u). With halfway walls
  mass is still exact for walls at rest and for flat walls moving tangentially: at a wall link
  the single-step ghost (ρ, 2u_w − u) brings in, summed over the links of one node, exactly the
  mass its mirrored populations take out (the odd terms in u_w cancel between c_i and its
  mirror along the wall, and the even terms depend on u_n² only, which the ghost keeps); the
  two-step bounce-back is the LBM one. A moving body (the sphere of tests/lbm_setups.py) is
  not mass-conserving in either scheme, as for LBM with Ladd's term. fp64 bound 1e-12 relative
  after 200 steps (measured ~1e-14).
- Two-step vs single-step: the same rule in the bulk; the single step sums the moments
  directly (rule.py) and the two-step scheme takes the odd-part term from its stored momentum
  j = fl(ρ u) and reports ρ, u as Σ_i f*_i and j / ρ, so the periodic results agree to
  rounding; with walls at rest the bounce-back of f* equals the ghost rule. Bound 1e-13 / 1e-6:
  a few ulps per step over the steps of the test.
- Two-step ρ, u as reported (from f* and j) against the moments the step computed: a few ulps
  (the sums Σ_i f*_i and Σ_i g_i round differently). Measured ≤ 2 ulps of ρ, 1 ulp of max |u|;
  bound 8.
"""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.geometry import Geometry, Sphere, cavity, periodic_box
from thelma_py.lattice import D2Q9, D3Q19
from thelma_py.modules.compute.lwacm import MAX_NU, Lwacm, LwacmFused
from thelma_py.modules.compute.lwacm.reference import fused_chunk, fused_reads_per_node

SCHEMES = ("lwacm", "lwacm-fused")
LATTICES = ("D2Q9", "D3Q19")
STEPS = 200


def shape_of(lattice: str):
    return (12, 10) if lattice == "D2Q9" else (7, 6, 5)


def make(lattice, geometry, scheme, precision="float64", nu=0.05, force=None):
    compute = tp.plugin("compute", scheme, nu=nu, force=force)
    return tp.compose(lattice, geometry, compute, device="cpu", precision=precision)


def randomize(solver, seed=0, u=0.05):
    """Random ρ = 1 ± 5 %, |u| ~ 0.05: far from rest and from a smooth field."""
    rng = np.random.default_rng(seed)
    shape = solver.geometry.array_shape
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    vel = u * rng.standard_normal((solver.lattice.d, *shape))
    solver.engine.initialize(rho.astype(solver.dtype), vel.astype(solver.dtype))


def closed_box(lattice):
    geo = Geometry(shape_of(lattice))
    geo.wall(Sphere(tuple(n / 2 for n in shape_of(lattice)), 2.0))
    return geo


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("lattice", LATTICES)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_rest_state_is_a_fixed_point(scheme, lattice, precision):
    solver = make(lattice, closed_box(lattice), scheme, precision)
    solver.step(50)
    tol = 1e-14 if precision == "float64" else 1e-6
    rho, u = solver.density(), solver.velocity()
    assert rho.dtype == np.dtype(precision)
    np.testing.assert_allclose(rho, 1.0, rtol=0, atol=tol)
    np.testing.assert_allclose(u, 0.0, rtol=0, atol=tol)


@pytest.mark.parametrize("lattice", LATTICES)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_periodic_box_conserves_mass_and_momentum(scheme, lattice):
    solver = make(lattice, periodic_box(shape_of(lattice)), scheme)
    randomize(solver)

    def totals():
        rho, u = solver.density(), solver.velocity()
        return rho.sum(), (rho * u).reshape(solver.lattice.d, -1).sum(axis=1)

    mass0, momentum0 = totals()
    solver.step(STEPS)
    mass, momentum = totals()
    assert abs(mass / mass0 - 1) < 1e-12
    np.testing.assert_allclose(momentum, momentum0, rtol=0, atol=1e-12 * mass0)
    assert np.abs(momentum0).max() > 1e-4 * mass0  # a non-trivial momentum is kept


@pytest.mark.parametrize("lattice", LATTICES)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_walls_at_rest_and_a_tangential_lid_conserve_mass(scheme, lattice):
    n = 10 if lattice == "D2Q9" else 6
    lid = (0.05, 0.0) if lattice == "D2Q9" else (0.05, 0.02, 0.0)
    face = "+y" if lattice == "D2Q9" else "+z"
    solver = make(lattice, cavity((n,) * len(lid), lid_velocity=lid, lid_face=face), scheme)
    randomize(solver)
    mass0 = solver.density().sum()
    solver.step(STEPS)
    assert abs(solver.density().sum() / mass0 - 1) < 1e-12
    assert np.abs(solver.velocity()).max() > 1e-3  # the lid drives a flow


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("lattice", LATTICES)
@pytest.mark.parametrize("walls", ["periodic", "walls at rest"])
def test_two_step_and_single_step_agree_in_the_bulk(walls, lattice, precision):
    geo = periodic_box(shape_of(lattice)) if walls == "periodic" else closed_box(lattice)
    a, b = (make(lattice, geo, scheme, precision) for scheme in SCHEMES)
    randomize(a, seed=3)
    randomize(b, seed=3)
    steps = STEPS if walls == "periodic" else 20  # the small closed box comes to rest
    a.step(steps)
    b.step(steps)
    tol = 1e-13 if precision == "float64" else 1e-6
    np.testing.assert_allclose(a.density(), b.density(), rtol=0, atol=tol)
    np.testing.assert_allclose(a.velocity(), b.velocity(), rtol=0, atol=tol)
    assert np.abs(a.velocity()).max() > 1e-3


def test_single_step_follows_the_two_step_scheme_beside_a_moving_lid():
    """The 2D lid-driven cavity at Re 2000 (64², U = 0.1, τ = 0.5096), 600 steps: the single-step
    scheme stays within 0.3 % of U of the two-step one, whose moving wall is the LBM's
    bounce-back with Ladd's term (the two differ by Ladd's density only: (ρ − 1) u_w). When the
    quadratic terms of a lid link took the ghost velocity 2 u_w − u, the corner nodes were
    driven at twice the lid speed and the single-step run blew up within 500 steps."""
    from thelma_py.cases.lid_driven_cavity import build

    runs = []
    for compute in SCHEMES:
        solver = build(n=64, reynolds=2000, lid_velocity=0.1, compute=compute, device="cpu")
        solver.check_every = 0
        solver.run(600)
        runs.append(solver.engine.macroscopic()[1])
    assert np.isfinite(runs[1]).all() and np.abs(runs[0]).max() > 0.05
    assert np.abs(runs[1] - runs[0]).max() < 3e-3 * 0.1


@pytest.mark.parametrize("scheme", SCHEMES)
def test_state_round_trip_continues_bit_for_bit(scheme):
    lattice = "D3Q19"
    geo = Geometry((8, 6, 5), periodic=(True, False, False))
    geo.edge("+z", velocity=(0.05, 0.0, 0.0))
    geo.wall(Sphere((4.0, 3.0, 2.5), 1.5), velocity=(0.0, 0.01, 0.0))
    a = make(lattice, geo, scheme, force=(1e-5, 0.0, 0.0))
    randomize(a)
    a.step(7)
    saved = a.engine.state()
    a.step(11)
    b = make(lattice, geo, scheme, force=(1e-5, 0.0, 0.0))
    b.engine.load_state(saved)
    b.step(11)
    for key, value in a.engine.state().items():
        np.testing.assert_array_equal(b.engine.state()[key], value)
        assert not np.array_equal(saved[key], value)
    np.testing.assert_array_equal(b.velocity(), a.velocity())


def moving_walls(lattice: str) -> Geometry:
    """x periodic, walls beyond the other faces, a moving lid and a moving sphere."""
    if lattice == "D2Q9":
        geo = Geometry((12, 9), periodic=(True, False))
        geo.edge("+y", velocity=(0.05, 0.0))
        geo.wall(Sphere((5.0, 4.0), 1.8), velocity=(0.0, 0.01))
        return geo
    geo = Geometry((8, 6, 5), periodic=(True, False, False))
    geo.edge("+z", velocity=(0.05, 0.0, 0.0))
    geo.wall(Sphere((4.0, 3.0, 2.5), 1.5), velocity=(0.0, 0.01, 0.0))
    return geo


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("lattice", LATTICES)
def test_two_step_reports_the_moments_its_step_computed(lattice, precision):
    """The two-step engine stores f* and j = ρ u only; the ρ, u it reports (Σ_i f*_i, j / ρ)
    must be the moments of g_i = f*_i(x − c_i) + κ 3 w_i (c_i · j(x)) that the step took (plus
    the force), computed here with NumPy apart from rule.py, to a few ulps. A j that a step
    failed to update, or one taken before the force, is off by O(1e-3) or by g."""
    from thelma_py.modules.compute.lbm import layouts

    d = 2 if lattice == "D2Q9" else 3
    force = (2e-5, -1e-5, 0.0)[:d]
    solver = make(lattice, moving_walls(lattice), "lwacm", precision, force=force)
    randomize(solver)
    solver.step(3)
    engine, lat = solver.engine, solver.lattice
    dtype = np.dtype(precision)
    before = engine.state()
    streamed = layouts.stream(lat, engine.walls, before["f"])
    odd = np.einsum("ia,a...->i...", lat.c.astype(dtype), before["j"])
    weights = (3 * lat.w).astype(dtype).reshape(-1, *(1,) * d)
    g = streamed + engine.kappa * (weights * odd)
    rho = g.sum(axis=0)
    u = np.einsum("ia,i...->a...", lat.c.astype(dtype), g) / rho
    u += np.array(force, dtype=dtype).reshape(-1, *(1,) * d)
    solver.step(1)
    got_rho, got_u = solver.density(), solver.velocity()
    fluid = solver.tags.fluid
    eps = np.finfo(dtype).eps
    assert got_rho.dtype == dtype and got_u.dtype == dtype
    np.testing.assert_allclose(got_rho[fluid], rho[fluid], rtol=8 * eps, atol=0)
    np.testing.assert_allclose(got_u[:, fluid], u[:, fluid], rtol=0,
                               atol=8 * eps * np.abs(u[:, fluid]).max())
    np.testing.assert_array_equal(engine.state()["j"], engine.j)
    assert np.abs(got_u[:, fluid] - (before["j"] / rho)[:, fluid]).max() > 1e3 * eps
    assert (got_u[:, ~fluid] == 0).all() and (~fluid).any()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_load_state_refuses_a_wrong_shape_or_dtype(scheme):
    solver = make("D2Q9", periodic_box((6, 5)), scheme)
    state = solver.engine.state()
    field, vector = ("f", "j") if scheme == "lwacm" else ("rho", "u")
    assert sorted(state) == sorted({field, vector})
    with pytest.raises(ValueError, match=f"checkpoint holds {field}"):
        solver.engine.load_state({**state, field: state[field][..., :-1]})
    with pytest.raises(ValueError, match=f"checkpoint holds {vector}"):
        solver.engine.load_state({**state, vector: state[vector].astype(np.float32)})
    with pytest.raises(ValueError, match=f"has no '{vector}'"):
        solver.engine.load_state({key: v for key, v in state.items() if key != vector})


def test_two_step_refuses_a_checkpoint_of_f_rho_u():
    """The two-step state was f*, ρ, u before it became f*, j: such a checkpoint is refused
    with the missing array named, not restarted from a wrong momentum."""
    solver = make("D2Q9", periodic_box((6, 5)), "lwacm")
    randomize(solver)
    rho, u = solver.density(), solver.velocity()
    old = {"f": solver.engine.state()["f"], "rho": rho, "u": u}
    with pytest.raises(ValueError, match=r"checkpoint has no 'j'; an LW-ACM state holds "
                                         r"\['f', 'j'\]"):
        solver.engine.load_state(old)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_initial_fields_are_reported_with_zero_velocity_in_solids(scheme):
    geo = closed_box("D2Q9")
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", scheme, nu=0.05), device="cpu",
                        init=tp.plugin("init", "equilibrium", rho=1.01, u=(0.02, -0.01)))
    rho, u = solver.density(), solver.velocity()
    fluid = solver.tags.fluid
    if scheme == "lwacm":  # ρ = Σ_i f*_i(1.01, u): 1.01 to a few ulps
        np.testing.assert_allclose(rho, 1.01, rtol=4 * np.finfo(rho.dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(rho, 1.01)
    np.testing.assert_array_equal(u[0][fluid], 0.02)
    assert (u[:, ~fluid] == 0).all() and (~fluid).any()


def test_body_force_accelerates_uniformly():
    """u(t+1) = Σ c f / ρ + g: a uniform state gains g per step, in both schemes."""
    for scheme in SCHEMES:
        solver = make("D2Q9", periodic_box((6, 5)), scheme, force=(1e-4, -2e-4))
        solver.step(10)
        np.testing.assert_allclose(solver.velocity()[0], 1e-3, rtol=1e-10)
        np.testing.assert_allclose(solver.velocity()[1], -2e-3, rtol=1e-10)


def test_parameters_are_validated():
    assert Lwacm(nu=0.05).kappa == pytest.approx(2 * (1 - (3 * 0.05 + 0.5)))
    assert LwacmFused(nu=MAX_NU).kappa == pytest.approx(0.0, abs=1e-15)
    for bad in (0.0, -0.1, float("nan"), 0.2):
        with pytest.raises(ValueError, match="nu"):
            Lwacm(nu=bad)
    with pytest.raises(ValueError, match="force needs 2 components"):
        make("D2Q9", periodic_box((4, 4)), "lwacm", force=(1e-5, 0.0, 0.0))
    with pytest.raises(TypeError):
        tp.plugin("compute", "lwacm", nu=0.05, collision="bgk")
    with pytest.raises(Exception, match="nu"):
        tp.plugin("compute", "lwacm-fused")


def test_both_schemes_are_registered_by_one_word():
    from thelma_py.registry import available

    compute = available("compute")
    assert compute["lwacm"] is Lwacm and compute["lwacm-fused"] is LwacmFused


def test_traffic_and_memory_per_node():
    """Two-step: f* read and written (2Q) plus j = ρ u read and written (2D); two f* buffers,
    j and the tag stored. Single step: one 4-value record written, and the records a marching
    block reads: (32 + 2) x (8 + 2) per plane for 32 x 8 nodes in 3D, 130 per plane for 128
    nodes in 2D, chunk + 2 planes for chunk planes of nodes (32 for the NumPy reference)."""
    assert fused_reads_per_node(D3Q19, 32) == 340 * 34 / (256 * 32)
    assert fused_reads_per_node(D2Q9, 32) == 130 * 34 / (128 * 32)
    assert fused_reads_per_node(D3Q19, 4) == 340 * 6 / (256 * 4)
    expected = {("lwacm", "D3Q19", "float32"): (176, 4 * 41 + 4),
                ("lwacm", "D3Q19", "float64"): (352, 8 * 41 + 4),
                ("lwacm", "D2Q9", "float32"): (88, 4 * 20 + 4),
                ("lwacm-fused", "D3Q19", "float32"): (43, 4 * 8 + 4),
                ("lwacm-fused", "D3Q19", "float64"): (96, 8 * 8 + 4),
                ("lwacm-fused", "D2Q9", "float32"): (36, 4 * 6 + 4)}
    for (scheme, lattice, precision), (traffic, memory) in expected.items():
        shape = (4, 4) if lattice == "D2Q9" else (4, 4, 4)
        engine = make(lattice, periodic_box(shape), scheme, precision).engine
        assert engine.traffic_bytes_per_node == traffic, (scheme, lattice, precision)
        assert engine.memory_bytes_per_node == memory, (scheme, lattice, precision)


def test_interpolated_bodies_with_16_bit_records_are_refused_with_the_alternative():
    """Curved walls (tests/test_lwacm_curved.py) are not combined with 16-bit single-step
    records: refused, not silently taken as a staircase."""
    from thelma_py.backend import select_backend
    from thelma_py.geometry import Geometry, Sphere
    from thelma_py.lattice import D2Q9
    from thelma_py.registry import create

    geo = Geometry((12, 8), periodic=(True, False))
    geo.body(Sphere((6.0, 4.0), 2.0), interpolated=True)
    tags = geo.evaluate(D2Q9)
    with pytest.raises(ValueError, match="interpolated bodies.*store='fp32'"):
        create("compute", "lwacm-fused", nu=0.05, store="fp16c").create(
            D2Q9, tags, select_backend("cpu"), np.float32)


def test_fused_chunk_is_eight_planes_unless_the_gpu_would_idle():
    """256³ on a 132-SM GPU: 8 x 32 columns of 32 x 8 threads, 32 chunks of 8 planes (8192
    blocks). 64³ has only 16 columns: 2 planes give 512 blocks, still fewer than 8 per SM, and
    shorter chunks than the domain is deep are never taken."""
    assert fused_chunk(D3Q19, (256, 256, 256), 132) == 8
    assert fused_chunk(D3Q19, (512, 512, 512), 132) == 8
    assert fused_chunk(D3Q19, (128, 128, 128), 132) == 4
    assert fused_chunk(D3Q19, (64, 64, 64), 132) == 2
    assert fused_chunk(D3Q19, (1, 64, 64), 132) == 1
    assert fused_chunk(D2Q9, (4096, 4096), 132) == 8

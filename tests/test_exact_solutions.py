"""Boundary kinds and collision models against answers that do not come from the code under
test: the density a pressure face is told to impose, the Navier-Stokes solutions of the flows
they drive (plane Poiseuille, square duct, plane and circular Couette, a half channel), and the
shear stress on a Couette wall. Every set-up is written here from the public API (geometry
builders, ``tp.compose`` with plug-in names, solver fields), and every expected value is a
formula of the imposed values, never a quantity measured in the run.

Where a scheme is exact for a flow (linear velocity with halfway or linear interpolated
bounce-back; the parabola with TRT's Λ = 3/16), the bound is round-off: 1e-12 of the velocity
scale, for errors measured at 3e-14 to 1.4e-13 (a few hundred steps of sums of O(0.1)
populations). Runs start at rest and last 4 H²/ν steps, which damps the slowest start-up mode,
exp(−π² ν t / H²), by e^−39 ≈ 1e-17: far below the bound. Other bounds are stated per test.
"""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.cases.pressure_poiseuille import duct_series
from thelma_py.geometry import Box, Cylinder, Geometry, Shape
from thelma_py.modules.compute.lbm.forces import forces

CS2 = 1.0 / 3.0
ROUND_OFF = 1e-12


def lbm(nu: float, collision: str = "trt", **params):
    return tp.plugin("compute", "lbm", nu=nu, collision=collision, **params)


def compute(scheme: str, nu: float, **params):
    """An LBM collision model by name, or an LW-ACM scheme ('lwacm', 'lwacm-fused')."""
    if scheme.startswith("lwacm"):
        return tp.plugin("compute", scheme, nu=nu)
    return lbm(nu, scheme, **params)


def steady_steps(width: float, nu: float) -> int:
    """4 H²/ν: the slowest start-up mode decays by e^(−4π²) (module docstring)."""
    return int(4 * width**2 / nu)


# -- pressure faces ------------------------------------------------------------------------------
def pressure_channel(lattice: str, n: int, length: int, drop: float, kind: str = "zou-he",
                     nu: float = 0.1, outlet=None, **params) -> tp.Solver:
    """A channel (D2Q9: n rows; 3D: an n x n duct) between pressure faces: ρ_in = 1 + drop/2 on
    −x, ρ_out = 1 − drop/2 (or ``outlet``, a function of the coordinates) on +x; walls at rest
    beyond the other faces; at rest with a linear density at the start."""
    dim = 2 if lattice == "D2Q9" else 3
    geo = Geometry((length, n) if dim == 2 else (length, n, n))
    geo.outlet("-x", rho=1.0 + 0.5 * drop, kind=kind)
    geo.outlet("+x", rho=outlet or 1.0 - 0.5 * drop, kind=kind)
    init = tp.plugin("init", "equilibrium",
                     rho=lambda x, *rest: 1.0 + drop * (0.5 - x / (length - 1)) + 0 * rest[0])
    return tp.compose(lattice, geo, lbm(nu, **params), init=init, device="cpu")


@pytest.mark.parametrize("kind", ["zou-he", "equilibrium"])
@pytest.mark.parametrize("lattice", ["D2Q9", "D3Q19", "D3Q27"])
def test_pressure_faces_hold_the_density_they_are_given(lattice, kind):
    """Both rules rebuild the missing populations so that Σ f = ρ_imposed, and the collision
    conserves mass: after any step the face nodes hold the imposed density (here varying
    across the outlet) to rounding of a sum of Q values near 1/Q, 1e-14. An outlet imposing
    1 + 1.5 (ρ − 1) instead is off by 3e-3."""
    n, length = 5, 6

    def outlet(x, y, *z):
        return 0.997 + 0.001 * np.cos(y) + (0.0005 * z[0] if z else 0.0)

    solver = pressure_channel(lattice, n, length, drop=0.006, kind=kind, outlet=outlet)
    solver.run(12)
    rho = solver.density()
    coords = np.meshgrid(*[np.arange(m, dtype=float) for m in reversed(rho.shape[:-1])],
                         indexing="xy")  # y[, z] of the face nodes, array order
    expected = outlet(length - 1.0, *coords)
    np.testing.assert_allclose(rho[..., 0], 1.003, rtol=0, atol=1e-14)
    np.testing.assert_allclose(rho[..., -1], expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize(("lattice", "shape", "face"), [
    ("D2Q9", (5, 6), "+y"), ("D3Q19", (6, 5, 4), "+x"), ("D3Q19", (5, 4, 6), "-y"),
    ("D3Q19", (4, 5, 6), "+z")])
def test_pressure_faces_of_every_orientation_hold_their_density(lattice, shape, face):
    """A pressure face on each axis with a density that varies across the face (both
    tangential axes, of different lengths in 3D): each node holds its own imposed value after
    a few steps, to 1e-14 as above; walls elsewhere."""
    geo = Geometry(shape)

    def rho(*coords):
        return 1.0 + 0.001 * sum((a + 1) * np.cos(x + a) for a, x in enumerate(coords))

    geo.outlet(face, rho=rho)
    solver = tp.compose(lattice, geo, lbm(0.1), device="cpu")
    solver.run(5)
    axis = "xyz".index(face[1])
    layer = 0 if face[0] == "-" else shape[axis] - 1
    coords = np.meshgrid(*[np.arange(n, dtype=float) for n in reversed(shape)],
                         indexing="ij")[::-1]  # x, y[, z] in array order
    on_face = coords[axis] == layer
    np.testing.assert_allclose(solver.density()[on_face], rho(*coords)[on_face], rtol=0,
                               atol=1e-14)


def imposed_gradient(drop: float, length: int) -> float:
    """−dp/dx of the imposed densities: p = c_s² ρ, faces (length − 1) spacings apart."""
    return CS2 * drop / (length - 1)


@pytest.mark.parametrize(("kind", "storage", "bound"), [
    ("zou-he", "dense", 2e-4), ("zou-he", "sparse", 2e-4), ("equilibrium", "dense", 5e-2)])
def test_pressure_driven_channel_has_the_parabola_of_the_imposed_drop(kind, storage, bound):
    """D2Q9 TRT (Λ = 3/16: halfway walls exactly at the half spacing), n = 8, length 16,
    Δρ for u_max = 0.02. Expected: u = G y (n − y) / (2ν) with G = c_s² Δρ / (L − 1), from the
    imposed densities alone. Measured relative L2 error on the middle column: Zou-He 7.5e-5
    (what is left is compressibility: ρ varies by 1.1 % along the channel), equilibrium faces
    3.4e-2 (they impose f_eq, dropping the non-equilibrium part that carries the stress at the
    faces). An outlet imposing 1 + 1.5 (ρ − 1) gives 0.45 to 0.50 in both."""
    n, length, nu, u_max = 8, 16, 0.1, 0.02
    drop = 8 * nu * u_max / n**2 * (length - 1) / CS2
    solver = pressure_channel("D2Q9", n, length, drop, kind=kind, nu=nu, storage=storage)
    solver.run(steady_steps(n, nu) // 4)  # the density field starts linear: n²/ν suffices
    y = np.arange(n) + 0.5
    exact = imposed_gradient(drop, length) / (2 * nu) * y * (n - y)
    got = solver.velocity()[0][:, length // 2]
    assert np.linalg.norm(got - exact) / np.linalg.norm(exact) < bound


@pytest.mark.parametrize("kind", ["zou-he", "equilibrium"])
def test_channel_walls_carry_the_imposed_pressure_drop(kind):
    """Force balance on the fluid between the two faces' node planes in the steady channel of
    the test above: the walls hold back the pressure force, F_x = c_s² Δρ n, and feel no net
    normal force. Momentum exchange leaves out the links that cross the open faces (the rules
    rebuild those populations); counting one would add about 2 f ≈ 0.05, against 0.03.
    Measured 6e-4 relative (ρ u varies with ρ along the channel); asserted 2e-3."""
    n, length, nu, u_max = 8, 16, 0.1, 0.02
    drop = 8 * nu * u_max / n**2 * (length - 1) / CS2
    solver = pressure_channel("D2Q9", n, length, drop, kind=kind, nu=nu)
    solver.run(steady_steps(n, nu) // 4)
    force = forces(solver.engine)[0]  # walls at rest beyond ±y (the region beyond the faces)
    expected = CS2 * drop * n
    assert force[0] == pytest.approx(expected, rel=2e-3)
    assert abs(force[1]) < 1e-12 * expected


def test_pressure_driven_duct_matches_the_series_of_the_imposed_drop():
    """D3Q19 TRT, 6 x 6 duct of length 12: u = G / ν · series(y, z) (White, eq. 3-48) with
    G = c_s² Δρ / (L − 1). Measured relative L2 error on the middle section 0.66 % (halfway
    walls are exact for the plane parabola only; the duct corners give a second-order error,
    0.36 % at n = 8); asserted below 1 %. A 1.5 x density error at the faces gives 49 %."""
    n, length, nu = 6, 12, 0.1
    centre = np.array(n / 2)
    drop = 0.02 * nu / float(duct_series(centre, centre, n)) * (length - 1) / CS2
    solver = pressure_channel("D3Q19", n, length, drop, nu=nu)
    solver.run(steady_steps(n, nu) // 4)
    side = np.arange(n) + 0.5
    exact = imposed_gradient(drop, length) / nu * duct_series(side[None, :], side[:, None], n)
    got = solver.velocity()[0][:, :, length // 2]
    assert np.linalg.norm(got - exact) / np.linalg.norm(exact) < 0.01


# -- moving walls: plane Couette -----------------------------------------------------------------
U_LO, U_HI = -0.01, 0.03


def couette(walls: str, scheme: str, ny: int = 6, nu: float = 0.1, storage: str = "dense"):
    """Plane Couette flow along x between walls moving at U_LO (below) and U_HI (above):
    'faces' are the walls beyond ±y (Geometry.edge), 'bodies' solid rows stored in a periodic
    box. Both are halfway walls, half a spacing from the outer fluid nodes, H = ny apart.
    Returns (solver, y of the fluid rows, exact u_x there, the walls' boundary ids)."""
    params = {} if scheme.startswith("lwacm") else {"storage": storage}
    if walls == "faces":
        geo = Geometry((2, ny), periodic=(True, False))
        ids = (geo.edge("-y", velocity=(U_LO, 0.0)), geo.edge("+y", velocity=(U_HI, 0.0)))
        rows, lo = slice(None), -0.5
    else:
        geo = Geometry((2, ny + 2), periodic=(True, True))
        ids = (geo.body(Box((-1, -1), (2, 0)), velocity=(U_LO, 0.0)),
               geo.body(Box((-1, ny + 1), (2, ny + 2)), velocity=(U_HI, 0.0)))
        rows, lo = slice(1, -1), 0.5
    solver = tp.compose("D2Q9", geo, compute(scheme, nu, **params), device="cpu")
    solver.run(steady_steps(ny, nu))
    y = np.arange(ny) + lo + 0.5
    return solver, solver.velocity()[:, rows], U_LO + (U_HI - U_LO) * (y - lo) / ny, ids


@pytest.mark.parametrize(("walls", "scheme", "storage", "bound"), [
    ("faces", "bgk", "dense", ROUND_OFF), ("faces", "trt", "sparse", ROUND_OFF),
    ("faces", "mrt", "dense", 1e-5), ("bodies", "bgk", "dense", ROUND_OFF),
    ("bodies", "trt", "sparse", ROUND_OFF), ("faces", "lwacm", "dense", ROUND_OFF),
    ("faces", "lwacm-fused", "dense", ROUND_OFF), ("bodies", "lwacm", "dense", ROUND_OFF)])
def test_couette_between_moving_halfway_walls_is_linear(walls, scheme, storage, bound):
    """Halfway bounce-back with Ladd's term (LBM) and the extrapolated wall ghost (LW-ACM) are
    exact for a linear profile: max |u_x − exact| / ΔU at round-off, u_y = 0. MRT is not exact
    here: its energy moments relax at 1.64 and 1.54 ≠ ω while their equilibrium holds |u|²,
    quadratic in y; measured 1.0e-6, asserted below 1e-5."""
    solver, u, exact, _ = couette(walls, scheme, storage=storage)
    assert np.abs(u[0] - exact[:, None]).max() / (U_HI - U_LO) < bound
    assert np.abs(u[1]).max() < ROUND_OFF * (U_HI - U_LO)


@pytest.mark.parametrize("walls", ["faces", "bodies"])
def test_couette_walls_feel_the_newtonian_shear_stress(walls):
    """Momentum exchange on each wall of length 2 (two columns): tangential force
    ±ρ ν ΔU / H · 2 (the fluid drags the slow wall forward and holds the fast one back) and
    normal force ∓ρ c_s² · 2 (the pressure), with ρ = 1 (mass is conserved from ρ = 1).
    Rounding only (sums of a dozen O(0.1) exchanges): 1e-12 relative."""
    nu, ny = 0.1, 6
    solver, _, _, (lo, hi) = couette(walls, "trt", ny=ny, nu=nu)
    got = forces(solver.engine)
    shear = nu * (U_HI - U_LO) / ny * 2
    np.testing.assert_allclose(got[lo], [shear, -2 * CS2], rtol=1e-12)
    np.testing.assert_allclose(got[hi], [-shear, 2 * CS2], rtol=1e-12)


def test_couette_walls_of_a_3d_box_feel_the_newtonian_shear_stress():
    """D3Q19 TRT, walls beyond ±z moving at U_LO and U_HI along x, 2 x 2 columns: on each wall
    tangential force ±ρ ν ΔU / H · 4 and normal force ∓ρ c_s² · 4, to rounding (1e-12)."""
    nu, nz = 0.1, 6
    geo = Geometry((2, 2, nz), periodic=(True, True, False))
    lo = geo.edge("-z", velocity=(U_LO, 0.0, 0.0))
    hi = geo.edge("+z", velocity=(U_HI, 0.0, 0.0))
    solver = tp.compose("D3Q19", geo, lbm(nu), device="cpu")
    solver.run(steady_steps(nz, nu))
    got = forces(solver.engine)
    shear = nu * (U_HI - U_LO) / nz * 4
    np.testing.assert_allclose(got[lo], [shear, 0.0, -4 * CS2], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[hi], [-shear, 0.0, 4 * CS2], rtol=1e-12, atol=1e-14)


# -- moving curved walls: interpolated bounce-back -----------------------------------------------
@pytest.mark.parametrize(("normal", "collision", "q_lo", "q_hi"), [
    ("y", "bgk", 0.2, 0.8), ("y", "trt", 0.2, 0.8), ("y", "bgk", 0.45, 0.5),
    ("y", "trt", 0.45, 0.5), ("y", "bgk", 0.7, 0.3), ("y", "trt", 0.7, 0.3),
    ("x", "trt", 0.3, 0.6)])
def test_couette_between_off_lattice_moving_walls_is_exact(normal, collision, q_lo, q_hi):
    """Interpolated bodies (Box bodies: their wall distances come from bisection to 2^-40)
    a fraction q_lo and q_hi of a link beyond the outer fluid nodes, moving at U_LO and U_HI
    along the walls, which are normal to y (or to x: other links cross them); τ = 0.8. The
    linear scheme (Bouzidi et al. 2001) with its moving-wall term is exact for the linear
    profile at every q: measured below 1.5e-13 of ΔU. Without the (1 − 2q) share of the wall
    term for q < ½ the error is 0.04 (q = 0.45) to 0.3."""
    n, nu = 7, 0.1
    lo, hi = 1.0 - q_lo, n - 2 + q_hi
    along, across = (0, 1) if normal == "y" else (1, 0)

    def box(a, b):  # the slab a <= coordinate across the walls <= b, velocity along them
        lower, upper = [-1.0, -1.0], [1.0, 1.0]
        lower[across], upper[across] = a, b
        return Box(lower, upper)

    def velocity(u):
        return (u, 0.0) if along == 0 else (0.0, u)

    geo = Geometry((1, n) if normal == "y" else (n, 1), periodic=(True, True))
    geo.body(box(-1, lo), velocity=velocity(U_LO), interpolated=True)
    geo.body(box(hi, n), velocity=velocity(U_HI), interpolated=True)
    solver = tp.compose("D2Q9", geo, lbm(nu, collision), device="cpu")
    solver.run(steady_steps(hi - lo, nu))
    s = np.arange(1, n - 1)
    exact = U_LO + (U_HI - U_LO) * (s - lo) / (hi - lo)
    u = solver.velocity().reshape(2, -1)[:, 1:-1]
    assert np.abs(u[along] - exact).max() / (U_HI - U_LO) < ROUND_OFF
    assert np.abs(u[across]).max() < ROUND_OFF * (U_HI - U_LO)


class _Outside(Shape):
    """The region outside a circle (fluid inside), with the exact exit distance of a link."""

    def __init__(self, centre, radius):
        self.centre, self.radius = np.asarray(centre, dtype=float), float(radius)

    def contains(self, coords):
        x, y = coords[0] - self.centre[0], coords[1] - self.centre[1]
        return x * x + y * y >= self.radius**2

    def link_distance(self, points, direction):
        p = np.asarray(points, dtype=float) - self.centre
        d = np.asarray(direction, dtype=float)
        a, b, c = d @ d, 2 * p @ d, (p * p).sum(axis=1) - self.radius**2
        t = (-b + np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))) / (2 * a)
        return np.where((c < 0) & (t <= 1.0), t, np.nan)


class _SolidNode(Shape):
    """One solid node of ``body``, with the body's exact wall distances: a body per node gives
    each node a velocity of its own."""

    def __init__(self, node, body):
        self.node, self.body = node, body

    def contains(self, coords):
        return ((np.rint(coords[0]) == self.node[0]) & (np.rint(coords[1]) == self.node[1])
                & self.body.contains(coords))

    def link_distance(self, points, direction):
        return self.body.link_distance(points, direction)


def taylor_couette_error(scale: int, nu: float = 0.1) -> float:
    """Relative L2 error of u against u_θ = A r + B / r between an inner cylinder of radius
    4·scale turning at Ω (Ω R₁ = 0.02) and an outer one of radius 8·scale at rest, both
    interpolated, centre off the lattice; BGK τ = 0.8.

    A body's velocity is one translation, so each solid node next to the fluid is a body of its
    own, moving at Ω × r of the node. Every link into that node is then given the exact wall
    term: Ladd's term needs c_i · u_w, and for a rigid rotation c_i · (Ω × r) is the same at
    every point r of the line through the link (c_i · (Ω × c_i) = 0), the wall point
    included."""
    r1, r2 = 4.0 * scale, 8.0 * scale
    n = int(2 * r2) + 3
    centre = (n / 2 - 0.4, n / 2 + 0.27)
    omega = 0.02 / r1
    geo = Geometry((n, n), periodic=(True, True))
    geo.body(_Outside(centre, r2), interpolated=True)
    inner = Cylinder(centre, r1)
    geo.body(inner, interpolated=True)
    x, y = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float))
    rx, ry = x - centre[0], y - centre[1]
    r = np.hypot(rx, ry)
    for i, j in zip(x[r <= r1], y[r <= r1], strict=True):
        if any(np.hypot(i + a - centre[0], j + b - centre[1]) > r1
               for a in (-1, 0, 1) for b in (-1, 0, 1)):
            geo.body(_SolidNode((i, j), inner), interpolated=True,
                     velocity=(-omega * (j - centre[1]), omega * (i - centre[0])))
    solver = tp.compose("D2Q9", geo, lbm(nu, "bgk"), device="cpu")
    solver.run(steady_steps(r2 - r1, nu))
    a = -omega * r1**2 / (r2**2 - r1**2)
    b = omega * r1**2 * r2**2 / (r2**2 - r1**2)
    fluid = (r > r1) & (r < r2)
    u_theta = a * r[fluid] + b / r[fluid]
    exact = np.stack([-u_theta * ry[fluid], u_theta * rx[fluid]]) / r[fluid]
    return float(np.linalg.norm(solver.velocity()[:, fluid] - exact) / np.linalg.norm(exact))


def test_taylor_couette_with_a_turning_interpolated_cylinder_is_second_order():
    """Curvature makes the linear scheme second order, not exact. Measured: 1.98e-2 and
    4.7e-3 at R₁ = 4 and 8 (ratio 4.2); asserted: ratio above 3.5 (order > 1.8) and 0.7 % at
    R₁ = 8. Without the (1 − 2q) share of the wall term the error is 0.27 to 0.31."""
    coarse, fine = taylor_couette_error(1), taylor_couette_error(2)
    assert coarse / fine > 3.5, (coarse, fine)
    assert fine < 0.007


# -- free slip -----------------------------------------------------------------------------------
def test_free_slip_plane_is_the_centre_line_of_a_channel():
    """A wall at rest beyond −y and free slip on +y (n = 4 rows, body force g, TRT): the mirror
    plane half a spacing beyond the last row is the centre line of a channel of width 2n, so
    u = g y (2n − y) / (2ν), exact with Λ = 3/16: round-off of u_max."""
    n, nu, u_max = 4, 0.5, 0.02
    width = 2 * n
    g = 8 * nu * u_max / width**2
    geo = Geometry((2, n), periodic=(True, False))
    geo.free_slip("+y")
    solver = tp.compose("D2Q9", geo, lbm(nu, force=(g, 0.0)), device="cpu")
    solver.run(steady_steps(width, nu))
    y = np.arange(n) + 0.5
    exact = g / (2 * nu) * y * (width - y)
    assert np.abs(solver.velocity()[0] - exact[:, None]).max() < ROUND_OFF * u_max

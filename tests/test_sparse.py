"""Sparse storage (indirect addressing): the neighbour table, and the sparse NumPy engine against
the dense one.

Both engines evaluate the same elementwise arithmetic on the same values (the gather copies
what the dense slices copy; the collision is the same code), so populations agree bit for bit;
ρ and u go through a matrix product whose blocking may differ, hence a 1e-13 bound there.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from tests.lbm_setups import (
    COLLISIONS,
    LATTICES,
    config,
    open_geometry,
    random_state,
    relative_l2,
    supported,
    walled_geometry,
)
from thelma_py.backend import select_backend
from thelma_py.geometry import Box, Geometry, Sphere
from thelma_py.geometry.porous import random_spheres
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.layouts import WallLinks
from thelma_py.modules.compute.lbm.sparse import (
    SparseDomain,
    sparse_bytes_per_node,
    wall_row,
)

STEPS = 100
CPU = select_backend("cpu")


def porous_geometry(lattice):
    shape = (24, 20) if lattice.d == 2 else (14, 12, 10)
    return random_spheres(shape, 0.5, radius=2.5, seed=3)


def curved_geometry(lattice):
    """Periodic along x, a moving lid, and a moving sphere with interpolated bounce-back."""
    if lattice.d == 2:
        geo = Geometry((29, 20), periodic=(True, False))
        geo.edge("+y", velocity=(0.05, 0.0))
        geo.body(Sphere((10.3, 9.6), 4.3), velocity=(0.0, 0.01), interpolated=True)
    else:
        geo = Geometry((21, 12, 11), periodic=(True, False, False))
        geo.edge("+z", velocity=(0.04, 0.01, 0.0))
        geo.body(Sphere((8.3, 5.6, 5.2), 3.3), velocity=(0.0, 0.01, -0.01), interpolated=True)
    return geo


def gap_geometry(lattice):
    """A moving interpolated slab 0.3 above the bottom row (walls beyond the bottom face, a
    lid on top): the bottom row's nodes have plain wall links and cut links whose x + c_i is
    beyond the face (halfway fallback) side by side."""
    if lattice.d == 2:
        geo = Geometry((37, 8), periodic=(True, False))
        geo.edge("+y", velocity=(0.04, 0.0))
        geo.body(Box((-1, 0.3), (37, 2.6)), velocity=(0.01, 0.0), interpolated=True)
    else:
        geo = Geometry((21, 6, 8), periodic=(True, True, False))
        geo.edge("+z", velocity=(0.04, 0.01, 0.0))
        geo.body(Box((-1, -1, 0.3), (21, 6, 2.6)), velocity=(0.01, 0.0, 0.0),
                 interpolated=True)
    return geo


GEOMETRIES = {"porous": porous_geometry, "walled": walled_geometry, "curved": curved_geometry,
              "gap": gap_geometry,
              "zou-he": lambda lat: open_geometry(lat, "zou-he"),
              "equilibrium": lambda lat: open_geometry(lat, "equilibrium"),
              "characteristic": lambda lat: open_geometry(lat, "characteristic"),
              "neighbour": lambda lat: open_geometry(lat, "neighbour")}


def dense_and_sparse(lattice, geo, dtype=np.float64, **params):
    tags = geo.evaluate(lattice)
    f = random_state(lattice, tags.tags.shape, dtype)
    out = []
    for storage in ("dense", "sparse"):
        engine = Lbm(nu=0.04, storage=storage, **params).create(lattice, tags, CPU,
                                                                np.dtype(dtype))
        engine.load_state({"f": f})
        out.append(engine)
    return (*out, tags)


def assert_same(dense, sparse, tags):
    fluid = tags.fluid
    np.testing.assert_array_equal(sparse.f, dense.f[:, fluid])
    for a, b in zip(sparse.macroscopic(), dense.macroscopic(), strict=True):
        assert a.shape == b.shape
        assert relative_l2(a, b) < 1e-13
    np.testing.assert_array_equal(sparse.macroscopic()[1][:, tags.solid], 0.0)


CASES = [config("D2Q9", coll, geo) for coll in COLLISIONS for geo in GEOMETRIES
         if supported("D2Q9", coll)]
CASES += [config("D3Q19", coll, geo) for coll in COLLISIONS
          for geo in ("porous", "walled", "zou-he", "curved") if supported("D3Q19", coll)]
CASES += [("D3Q19", "trt", "neighbour"), ("D3Q19", "mrt", "equilibrium"),
          ("D3Q27", "trt", "porous"), ("D3Q27", "bgk", "walled"), ("D3Q27", "trt", "zou-he"),
          ("D3Q27", "cumulant", "walled")]


@pytest.mark.parametrize(("lattice_name", "collision", "geometry"), CASES)
def test_sparse_equals_dense(lattice_name, collision, geometry):
    lattice = LATTICES[lattice_name]
    force = (2e-5, -1e-5, 1e-5)[: lattice.d] if collision == "trt" else None
    dense, sparse, tags = dense_and_sparse(lattice, GEOMETRIES[geometry](lattice),
                                           collision=collision, force=force)
    dense.step(STEPS)
    sparse.step(STEPS)
    assert_same(dense, sparse, tags)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_initialize_matches_dense(dtype):
    lattice = LATTICES["D2Q9"]
    tags = walled_geometry(lattice).evaluate(lattice)
    rng = np.random.default_rng(5)
    rho = (1 + 0.01 * rng.standard_normal(tags.tags.shape)).astype(dtype)
    u = (0.02 * rng.standard_normal((2, *tags.tags.shape))).astype(dtype)
    engines = [Lbm(nu=0.1, storage=s, force=(1e-5, 0.0)).create(lattice, tags, CPU,
                                                                 np.dtype(dtype))
               for s in ("dense", "sparse")]
    for engine in engines:
        engine.initialize(rho, u)
        engine.step(3)
    dense, sparse = engines
    np.testing.assert_array_equal(sparse.f, dense.f[:, tags.fluid])
    rho_s, rho_d = sparse.macroscopic()[0], dense.macroscopic()[0]
    np.testing.assert_allclose(rho_s[tags.solid], rho[tags.solid])  # as the dense engines
    assert relative_l2(rho_s, rho_d) < 1e-6


def test_neighbour_table_order_and_periodic_wrap():
    lattice = LATTICES["D2Q9"]
    geo = Geometry((6, 5), periodic=(True, True))
    geo.wall(Sphere((3.0, 2.0), 0.5))  # the single node (3, 2)
    tags = geo.evaluate(lattice)
    dom = SparseDomain(lattice, tags)
    assert dom.count == 29 and dom.nbr.shape == (8, 29) and dom.nbr.dtype == np.int32
    np.testing.assert_array_equal(dom.nodes, np.flatnonzero(tags.fluid))  # row order
    assert np.all(np.diff(dom.nodes) > 0)

    def sparse(x, y):
        return dom.index[x + 6 * y]

    east = [i for i in range(9) if tuple(lattice.c[i]) == (1, 0)][0]
    north_east = [i for i in range(9) if tuple(lattice.c[i]) == (1, 1)][0]
    # pull: entry = node x - c_i, wrapped
    assert dom.nbr[east - 1, sparse(0, 1)] == sparse(5, 1)
    assert dom.nbr[north_east - 1, sparse(0, 0)] == sparse(5, 4)
    assert dom.nbr[east - 1, sparse(2, 2)] == sparse(1, 2)
    # the solid node: links from it bounce back, row 0 (wall at rest)
    assert dom.nbr[east - 1, sparse(4, 2)] == wall_row(0) == -1
    assert (dom.nbr < 0).sum() == 8  # its eight neighbours, one link each


@pytest.mark.parametrize("lattice_name", ["D2Q9", "D3Q19", "D3Q27"])
def test_bounce_back_entries_match_the_wall_links(lattice_name):
    """Negative entries mark exactly the dense engine's wall links, and decode to rows whose
    Ladd terms are the dense engine's (moving lid beyond a face, moving sphere inside)."""
    lattice = LATTICES[lattice_name]
    tags = walled_geometry(lattice).evaluate(lattice)
    dom = SparseDomain(lattice, tags)
    walls = WallLinks(lattice, tags, np.dtype(np.float64))
    links = dom.wall_links(np.dtype(np.float64))
    assert set(links) == set(walls.index)
    rows = set()
    for i, (where, term) in links.items():
        np.testing.assert_array_equal(dom.nodes[where], walls.index[i])
        if walls.term[i] is None:
            assert term is None
        else:
            np.testing.assert_array_equal(term, walls.term[i])
        rows |= set(wall_row(dom.nbr[i - 1, where]).tolist())
    lid = tags.face_bc_ids["+z" if lattice.d == 3 else "+y"]
    assert lid == 1 and rows == {0, 1, 2}  # walls at rest, the lid, the moving sphere


def test_memory_at_30_percent_fluid_is_at_most_half_of_dense():
    lattice = LATTICES["D3Q19"]
    tags = random_spheres((32, 32, 32), 0.3, seed=1).evaluate(lattice)
    fluid = int(tags.fluid.sum())
    assert 0.27 < fluid / tags.fluid.size < 0.33
    dtype = np.dtype(np.float32)
    sparse = Lbm(nu=0.1, storage="sparse").create(lattice, tags, CPU, dtype)
    dense = Lbm(nu=0.1).create(lattice, tags, CPU, dtype)
    assert sparse.memory_bytes_per_node == 2 * 19 * 4 + 4 * 18 + 4 * 4 + 4
    assert sparse.traffic_bytes_per_node == 2 * 19 * 4 + 4 * 18
    # in place (AA): one buffer, the table read every other step
    assert sparse_bytes_per_node(lattice, dtype, "aa") == {"traffic": 152 + 36, "memory": 168}
    assert sparse.memory_bytes_per_node * fluid <= 0.5 * dense.memory_bytes_per_node * (
        tags.fluid.size)


def test_checkpoint_round_trip_is_bit_identical():
    lattice = LATTICES["D2Q9"]
    _, a, tags = dense_and_sparse(lattice, porous_geometry(lattice), collision="mrt")
    a.step(7)
    saved = a.state()
    a.step(9)
    b = Lbm(nu=0.04, storage="sparse", collision="mrt").create(lattice, tags, CPU,
                                                               np.dtype(np.float64))
    b.load_state(saved)
    b.step(9)
    np.testing.assert_array_equal(a.f, b.f)
    np.testing.assert_array_equal(a.macroscopic()[0], b.macroscopic()[0])
    with pytest.raises(ValueError, match="sparse run needs"):
        b.load_state({"f": saved["f"][:, :-1]})


def test_sparse_refuses_other_streaming_schemes():
    lattice = LATTICES["D2Q9"]
    tags = porous_geometry(lattice).evaluate(lattice)
    with pytest.raises(ValueError, match="pull"):
        Lbm(nu=0.1, storage="sparse", streaming="push").create(lattice, tags, CPU,
                                                               np.dtype(np.float64))
    open_tags = open_geometry(lattice, "zou-he").evaluate(lattice)
    with pytest.raises(ValueError, match="in-place AA"):
        Lbm(nu=0.1, storage="sparse", streaming="aa").create(lattice, open_tags, CPU,
                                                             np.dtype(np.float64))
    with pytest.raises(ValueError, match="storage"):
        Lbm(nu=0.1, storage="compressed")
    engine = Lbm(nu=0.1, storage="sparse").create(lattice, tags, CPU, np.dtype(np.float64))
    with pytest.raises(NotImplementedError, match="one domain"):
        engine.distribute(None)


def test_cylinder_case_runs_sparse_with_the_same_forces():
    """Schäfer-Turek 2D-1 (velocity inlet, pressure outlet, walls, cylinder): same fields and
    the same momentum-exchange force on the cylinder as the dense engine."""
    from thelma_py.cases.cylinder import CYLINDER_ID, build
    from thelma_py.modules.compute.lbm.forces import forces

    solver = build(device="cpu", n=10)
    sparse = attrs.evolve(solver.compute, storage="sparse").create(
        solver.lattice, solver.tags, solver.backend, solver.dtype)
    sparse.load_state(solver.engine.state())  # the dense initial state, gathered
    solver.engine.step(STEPS)
    sparse.step(STEPS)
    assert_same(solver.engine, sparse, solver.tags)
    np.testing.assert_allclose(forces(sparse, [CYLINDER_ID])[CYLINDER_ID],
                               forces(solver.engine, [CYLINDER_ID])[CYLINDER_ID], rtol=1e-12)


def test_probes_and_vtk_work_unchanged_with_sparse_storage(tmp_path):
    import thelma_py as tp

    def run(storage):
        geo = porous_geometry(LATTICES["D2Q9"])
        probes = tp.plugin("results", "probes", points=[(1, 1), (20, 10)],
                           path=tmp_path / storage / "probes.csv", every=10)
        vtk = tp.plugin("results", "vtk", path=tmp_path / storage / "flow", every=20)
        solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05,
                                                   storage=storage,
                                                   force=(1e-5, 0.0)),
                            results=[probes, vtk], device="cpu")
        solver.run(steps=40)
        return (tmp_path / storage / "probes.csv").read_text(), sorted(
            p.name for p in (tmp_path / storage).iterdir())

    dense, sparse = run("dense"), run("sparse")
    assert sparse == dense


def test_solver_summary_gives_bytes_per_lattice_node_like_its_mlups():
    import thelma_py as tp

    geo = porous_geometry(LATTICES["D2Q9"])
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05, storage="sparse"),
                        device="cpu")
    solver.run(steps=3)
    fraction = solver.tags.fluid.mean()
    assert 0.3 < fraction < 0.7
    assert np.isclose(solver.summary()["bytes_per_node"],
                      solver.engine.traffic_bytes_per_node * fraction)

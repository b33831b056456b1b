"""The CUDA LW-ACM engines (and the overlapped steps of the dense LBM one) decomposed, without a
GPU: each rank's engine runs the generated kernels compiled for the host (tests/host_cupy.py)
on its grown box, and an in-process transport follows :func:`thelma_py.parallel.halo_plan`
message by message, as MPI and NCCL do. The owned nodes then equal a single-domain run of the
same host kernels bit for bit: the kernels on grown boxes (ghost nodes stepped from stale
values, walls beyond a face in a ghost layer through the edge table, a lid on the cut axis),
the engines' halo arrays, the field plan of the single-step records and the overlapped
schedule are checked on every CPU run. What needs a GPU (NCCL, CUDA's own arithmetic, shared
memory between real threads) is in tests/test_gpu_parallel.py."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.lbm_setups import LATTICES
from tests.test_gpu_parallel import box_of
from thelma_py.backend import select_backend
from thelma_py.geometry import Geometry, Sphere
from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused
from thelma_py.parallel import halo_plan

pytestmark = [pytest.mark.slow,  # compiles the kernels with g++
              pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")]

STEPS = 12


def geometry(case: str) -> Geometry:
    """'lid': walls beyond y and z, a lid on +z; 'zperiodic': x, z periodic, a lid on +y;
    '2d': x periodic, a lid on +y. A moving sphere in each, across the cuts."""
    if case == "2d":
        geo = Geometry((20, 12), periodic=(True, False))
        geo.edge("+y", velocity=(0.06, 0.0))
        geo.wall(Sphere((7.5, 6.2), 2.7), velocity=(0.0, 0.01))
        return geo
    geo = Geometry((13, 6, 10), periodic=(True, False, case == "zperiodic"))
    geo.edge("+z" if case == "lid" else "+y", velocity=(0.05, 0.01, 0.0))
    geo.wall(Sphere((6.3, 3.1, 4.6), 1.9), velocity=(0.0, 0.02, -0.01))
    return geo


def initialize(engine, geo: Geometry, lower, shape) -> None:
    coords = geo.coordinates(lower, shape)
    zero = sum(0 * c for c in coords)
    u = [0.02 * np.sin(coords[0] / 3.0) + zero, 0.01 * np.cos(coords[1] / 2.0) + zero]
    if geo.dim == 3:
        u.append(0.01 * np.sin(coords[2] / 2.5) + zero)
    engine.initialize(1.0 + 0.01 * np.cos(coords[0] / 4.0) + zero, u)


def exchange(arrays: list, plans: list) -> None:
    """One exchange among in-process ranks: message k of every rank's plan is sent, then
    received (MPI Sendrecv and NCCL groups pair them so)."""
    for k in range(len(plans[0])):
        sent = [np.array(a[p[k].index(p[k].send_layer)]) for a, p in zip(arrays, plans,
                                                                        strict=True)]
        for rank, (array, plan) in enumerate(zip(arrays, plans, strict=True)):
            t = plan[k]
            if t.frm >= 0:
                assert plans[t.frm][k].to == rank
                array[t.index(t.recv_layer)] = sent[t.frm]


def step_together(ranks: list, plans: list, whole, steps: int):
    """``steps`` steps of the ranks (an exchange before each) and of the whole domain; the
    whole domain's (ρ, u) as host arrays, checked finite and moving."""
    for _ in range(steps):
        exchange([engine.halo_arrays()[0] for engine in ranks], plans)
        for engine in ranks:
            engine.step(1)
        whole.step(1)
    rho, u = (np.array(a) for a in whole.macroscopic())
    assert np.isfinite(rho).all() and np.abs(u).max() > 1e-3
    return rho, u


def assert_ranks_equal_whole(boxes: list, ranks: list, u: np.ndarray) -> None:
    """Each rank's owned u equals the whole domain's in its window, bit for bit."""
    for box, engine in zip(boxes, ranks, strict=True):
        window = tuple(slice(lo, lo + n)
                       for lo, n in zip(reversed(box.lower), reversed(box.shape), strict=True))
        part_u = np.array(engine.macroscopic()[1])
        np.testing.assert_array_equal(part_u[(slice(None), *box.inner)],
                                      u[(slice(None), *window)])


def decomposed(params, lattice, geo: Geometry, dims, dtype, backend):
    """Rank engines on the grown boxes of a one-axis cut (distributed and initialised), their
    halo plans, and one engine on the whole domain, initialised alike."""
    axis = next(a for a, d in enumerate(dims) if d > 1)
    boxes = [box_of(geo.shape, dims, r, geo.periodic[axis]) for r in range(max(dims))]
    ranks = []
    for box in boxes:
        tags = geo.evaluate(lattice, box.grown_lower, box.grown_shape, ghost=True)
        engine = params.create(lattice, tags, backend, dtype)
        engine.distribute(box)
        initialize(engine, geo, box.grown_lower, box.grown_shape)
        ranks.append(engine)
    plans = [halo_plan(lattice, box, fields=getattr(engine, "halo_fields", False))
             for box, engine in zip(boxes, ranks, strict=True)]
    whole = params.create(lattice, geo.evaluate(lattice), backend, dtype)
    initialize(whole, geo, (0,) * geo.dim, geo.shape)
    return boxes, ranks, plans, whole


def assert_ranks_match_numpy(params, lattice, geo: Geometry, dims, precision: str, backend,
                             tolerance: float):
    """Ranks cut ``dims`` and the whole domain on ``backend`` stepped together STEPS steps:
    ρ, u within ``tolerance`` of the NumPy reference, and every rank's window equal to the
    whole domain's bit for bit. Returns the whole-domain engine."""
    dtype = np.dtype(precision)
    boxes, ranks, plans, whole = decomposed(params, lattice, geo, dims, dtype, backend)
    rho, u = step_together(ranks, plans, whole, STEPS)
    reference = params.create(lattice, geo.evaluate(lattice), select_backend("cpu"), dtype)
    initialize(reference, geo, (0,) * geo.dim, geo.shape)
    reference.step(STEPS)
    np.testing.assert_allclose(u, reference.macroscopic()[1], rtol=0, atol=tolerance)
    np.testing.assert_allclose(rho, reference.macroscopic()[0], rtol=0, atol=tolerance)
    assert_ranks_equal_whole(boxes, ranks, u)
    return whole


@pytest.mark.parametrize(("case", "dims", "fused", "precision"), [
    ("lid", (1, 1, 2), False, "float64"),      # the lid beyond the top rank's ghost layer
    ("lid", (1, 1, 3), True, "float64"),       # an inner rank with two neighbours
    ("zperiodic", (1, 2, 1), True, "float64"),  # a y cut, the lid on the cut axis
    ("zperiodic", (1, 1, 2), False, "float32"),  # periodic cut: one neighbour both ways
    ("2d", (1, 2), False, "float64"),
    ("2d", (1, 3), True, "float32"),
])
def test_host_cuda_lwacm_ranks_equal_one_domain_bit_for_bit(host_gpu, case, dims, fused,
                                                            precision):
    lattice = LATTICES["D3Q19" if len(dims) == 3 else "D2Q9"]
    geo = geometry(case)
    params = (LwacmFused if fused else Lwacm)(nu=0.03)
    dtype = np.dtype(precision)
    boxes, ranks, plans, whole = decomposed(params, lattice, geo, dims, dtype, host_gpu)
    assert type(ranks[0]).__name__ == ("CudaLwacmFused" if fused else "CudaLwacm")
    assert all(not t.populations for t in plans[0]) == fused
    rho, u = step_together(ranks, plans, whole, STEPS)
    reference = params.create(lattice, geo.evaluate(lattice), select_backend("cpu"), dtype)
    initialize(reference, geo, (0,) * geo.dim, geo.shape)
    reference.step(STEPS)  # the host kernels run the rule of the NumPy reference
    tolerance = 1e-13 if precision == "float64" else 1e-5
    np.testing.assert_allclose(rho, reference.macroscopic()[0], rtol=0, atol=tolerance)
    np.testing.assert_allclose(u, reference.macroscopic()[1], rtol=0, atol=tolerance)
    state = whole.state()
    for box, engine in zip(boxes, ranks, strict=True):
        window = tuple(slice(lo, lo + n)
                       for lo, n in zip(reversed(box.lower), reversed(box.shape), strict=True))
        part_rho, part_u = (np.array(a) for a in engine.macroscopic())
        np.testing.assert_array_equal(part_rho[box.inner], rho[window])
        np.testing.assert_array_equal(part_u[(slice(None), *box.inner)],
                                      u[(slice(None), *window)])
        if not fused:  # f*, j on fluid nodes (solid ones keep their initial values)
            fluid = ~geo.evaluate(lattice, box.lower, box.shape).solid
            for key in ("f", "j"):
                part = engine.state()[key][(slice(None), *box.inner)]
                np.testing.assert_array_equal(part[:, fluid],
                                              state[key][(slice(None), *window)][:, fluid])


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_host_cuda_two_step_state_is_f_and_j(host_gpu, precision):
    """CudaLwacm holds f* and j = ρ u: initialize (one f*_i at a time; u written into j, then
    multiplied by ρ in place) gives the NumPy reference's f* and j bit for bit, j = 0 in solids;
    after steps, ρ = Σ_i f*_i and u = j / ρ come from the device state as in the reference; a
    checkpoint of the old f*, ρ, u is refused."""
    lattice = LATTICES["D3Q19"]
    geo = geometry("lid")
    tags = geo.evaluate(lattice)
    params = Lwacm(nu=0.03, force=(1e-5, 0.0, 0.0))
    dtype = np.dtype(precision)
    gpu = params.create(lattice, tags, host_gpu, dtype)
    cpu = params.create(lattice, tags, select_backend("cpu"), dtype)
    for engine in (gpu, cpu):
        initialize(engine, geo, (0, 0, 0), geo.shape)
    assert sorted(gpu.state()) == ["f", "j"] and gpu.j.shape == (3, *tags.tags.shape)
    np.testing.assert_array_equal(gpu.state()["j"], cpu.state()["j"])
    assert (gpu.state()["j"][:, tags.solid] == 0).all() and tags.solid.any()
    eps = np.finfo(dtype).eps
    np.testing.assert_array_equal(gpu.state()["f"], cpu.state()["f"])
    gpu.load_state(cpu.state())
    for engine in (gpu, cpu):
        engine.step(5)
    for key in ("f", "j"):
        np.testing.assert_allclose(gpu.state()[key], cpu.state()[key], rtol=0, atol=100 * eps)
    for got, expected in zip(gpu.macroscopic(), cpu.macroscopic(), strict=True):
        np.testing.assert_allclose(np.array(got), expected, rtol=0, atol=100 * eps)
    rho, u = (np.array(a) for a in gpu.macroscopic())
    np.testing.assert_array_equal(rho, gpu.state()["f"].sum(axis=0))
    assert (u[:, tags.solid] == 0).all() and np.abs(u).max() > 1e-3
    old = {"f": gpu.state()["f"], "rho": rho, "u": u}
    with pytest.raises(ValueError, match="checkpoint has no 'j'"):
        gpu.load_state(old)


@pytest.mark.parametrize(("case", "cut"), [("lid", "planes"), ("lid", "rows"), ("2d", "rows")])
def test_host_cuda_single_step_in_parts_equals_one_launch(host_gpu, case, cut):
    """What an overlapped distributed step launches (the interior layers, then the first and
    last owned layer) gives the records of one launch over the same layers, bit for bit."""
    lattice = LATTICES["D3Q19" if case != "2d" else "D2Q9"]
    geo = geometry(case)
    tags = geo.evaluate(lattice)
    engines = []
    for _ in range(2):
        engine = LwacmFused(nu=0.03).create(lattice, tags, host_gpu, np.dtype("float64"))
        initialize(engine, geo, (0,) * geo.dim, geo.shape)
        engines.append(engine)
    whole, parts = engines
    layers = whole.nz if cut == "planes" else whole.ny
    for _ in range(3):
        whole._launch(True, **{cut: (1, layers - 2)})
        parts._launch(True, advance=False, **{cut: (2, layers - 4)})
        parts._launch(True, advance=False, **{cut: (1, 1)})
        parts._launch(True, **{cut: (layers - 2, 1)})
    for a, b in zip(whole.macroscopic(), parts.macroscopic(), strict=True):
        np.testing.assert_array_equal(np.array(a), np.array(b))
    assert np.abs(np.array(whole.macroscopic()[1])).max() > 1e-3


class _Exchanged:
    """The exchange of a step already done for every rank (in-process ranks step one after
    another, so all of them exchange first)."""

    def exchange(self, array, stream) -> None:
        pass


@pytest.mark.parametrize(("engine", "case", "dims", "overlap"), [
    ("lbm", "lid", (1, 1, 3), True),        # an inner rank: both boundary layers and interior
    ("lbm", "zperiodic", (1, 2, 1), False),  # a y cut, one launch over the owned rows
    ("lbm-les", "lid", (1, 1, 3), True),    # Smagorinsky LES: local ω, same exchange
    ("fused", "lid", (1, 1, 2), True),
    ("fused", "2d", (1, 3), True),
])
def test_host_cuda_overlapped_steps_equal_one_domain_bit_for_bit(host_gpu, engine, case,  # noqa: F811
                                                                 dims, overlap):
    """step_distributed (thelma_py.cuda_steps.OverlappedSteps) on ranks of the dense LBM and
    the single-step LW-ACM engines: the interior and the two boundary layers launched apart
    (or the owned layers at once), ghost layers never updated, the parity flipped per step;
    the owned nodes equal one domain's bit for bit."""
    from thelma_py.modules.compute.lbm import Lbm

    lattice = LATTICES["D3Q19" if len(dims) == 3 else "D2Q9"]
    geo = geometry(case)
    params = (Lbm(nu=0.03, collision="trt", les="smagorinsky" if engine == "lbm-les" else None)
              if engine.startswith("lbm") else LwacmFused(nu=0.03))
    boxes, ranks, plans, whole = decomposed(params, lattice, geo, dims, np.dtype("float64"),
                                            host_gpu)
    assert_overlapped_ranks_equal_one_domain(boxes, ranks, plans, whole,
                                             geo.evaluate(lattice).fluid, overlap)


def assert_overlapped_ranks_equal_one_domain(boxes, ranks, plans, whole, fluid, overlap: bool,
                                             steps: int = 5) -> None:
    """``steps`` steps of the ranks (halo exchange, then ``step_distributed``) and of
    ``whole``: a flow develops (|u| > 1e-3) and the ranks' owned ``fluid`` nodes hold the
    whole domain's ρ and u bit for bit."""
    for _ in range(steps):
        exchange([rank.halo_arrays()[0] for rank in ranks], plans)
        for rank in ranks:
            rank.step_distributed(1, _Exchanged(), overlap=overlap)
        whole.step(1)
    rho, u = (np.array(a) for a in whole.macroscopic())
    assert np.abs(u).max() > 1e-3
    for box, rank in zip(boxes, ranks, strict=True):
        window = tuple(slice(lo, lo + n)
                       for lo, n in zip(reversed(box.lower), reversed(box.shape), strict=True))
        part_rho, part_u = (np.array(a) for a in rank.macroscopic())
        owned = fluid[window]
        np.testing.assert_array_equal(part_rho[box.inner][owned], rho[window][owned])
        np.testing.assert_array_equal(part_u[(slice(None), *box.inner)][:, owned],
                                      u[(slice(None), *window)][:, owned])

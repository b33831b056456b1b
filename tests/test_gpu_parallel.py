"""Distributed runs on GPUs: the exchange plan, the GPU decomposition rule, kernels launched
over part of the planes, the halo arrays and NCCL messages of the LW-ACM engines, and (marked
gpu) 2 CUDA ranks equal to one GPU bit for bit (LBM, two-step and single-step LW-ACM).

The gpu tests start ``mpiexec -n 2 python -m mpi4py tests/mpi/gpu_decomposed_run.py``: with two
GPUs one rank per GPU exchanging over NCCL; with one GPU two ranks sharing it (halos through
the host), so the overlapped step runs on a single-GPU machine too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests import hardware
from tests.lbm_setups import LATTICES
from tests.nvcc import compile_cubin
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.kernels import KernelConfig, generate
from thelma_py.parallel import (
    Decomposition,
    HaloTransfer,
    RankBox,
    choose_dims,
    halo_bytes,
    halo_plan,
)

SCRIPT = Path(__file__).parent / "mpi" / "gpu_decomposed_run.py"


class FakeCart:
    """Cartesian neighbours of a 1D ring or line of ranks along one axis (no MPI needed)."""

    def __init__(self, rank: int, size: int, axis: int, periodic: bool):
        self.rank, self.size, self.axis, self.periodic = rank, size, axis, periodic

    def Shift(self, axis, disp):  # noqa: N802 (mpi4py's name)
        assert axis == self.axis and disp == 1

        def neighbour(r):
            if self.periodic:
                return r % self.size
            return r if 0 <= r < self.size else -2  # -2: Open MPI's PROC_NULL
        return neighbour(self.rank - 1), neighbour(self.rank + 1)


def box_of(shape, dims, rank, periodic):
    decomposition = Decomposition(shape, dims)
    axis = next(a for a, d in enumerate(dims) if d > 1)
    coords = tuple(rank if a == axis else 0 for a in range(len(shape)))
    lower, sub = decomposition.sub_box(coords)
    return RankBox(decomposition, FakeCart(rank, decomposition.ranks, axis, periodic), coords,
                   lower, sub, tuple(d > 1 for d in dims))


def test_gpu_decomposition_cuts_z_then_y_never_x():
    assert choose_dims((384, 384, 768), 2, gpu=True) == (1, 1, 2)
    assert choose_dims((1024, 64, 64), 4, gpu=True) == (1, 1, 4)   # CPU would cut x
    assert choose_dims((64, 64, 3), 4, gpu=True) == (1, 4, 1)
    assert choose_dims((512, 64), 2, gpu=True) == (1, 2)
    with pytest.raises(ValueError, match="cut the z or y axis"):
        choose_dims((64, 2, 2), 4, gpu=True)


@pytest.mark.parametrize("periodic", [False, True])
def test_plan_moves_only_the_crossing_populations_between_the_right_layers(periodic):
    lattice = LATTICES["D3Q19"]
    plan = halo_plan(lattice, box_of((16, 8, 12), (1, 1, 2), 0, periodic))
    assert [t.axis for t in plan] == [2, 2]
    up, down = plan
    assert all(lattice.c[i, 2] == 1 for i in up.populations) and len(up.populations) == 5
    assert all(lattice.c[i, 2] == -1 for i in down.populations) and len(down.populations) == 5
    assert (up.array_axis, up.send_layer, up.recv_layer) == (1, -2, 0)
    assert (down.send_layer, down.recv_layer) == (1, -1)
    # rank 0 of 2: the + neighbour is rank 1; the − one is rank 1 too when z is periodic
    assert up.to == 1 and down.frm == 1
    assert (up.frm, down.to) == ((1, 1) if periodic else (-2, -2))


def test_transfer_index_selects_one_layer_of_its_populations():
    t = HaloTransfer(1, 2, (3, 7), send_layer=-2, recv_layer=0, to=1, frm=1)
    f = np.arange(9 * 4 * 5 * 6).reshape(9, 4, 5, 6)
    np.testing.assert_array_equal(f[t.index(-2)], f[[3, 7], :, 3:4, :])
    np.testing.assert_array_equal(f[t.index(-1)], f[[3, 7], :, 4:5, :])
    assert f[t.index(0)].shape == (2, 4, 1, 6)


def test_halo_bytes_of_a_384_face():
    # D3Q19: 5 populations cross each way; 384^2 fp32 nodes; sent and received
    assert halo_bytes(LATTICES["D3Q19"], 384 * 384, 4) == 2 * 5 * 384 * 384 * 4


def planes_source():
    lattice = LATTICES["D3Q19"]
    return generate(KernelConfig(lattice, Lbm(nu=0.1).relaxation(lattice), "float", "pull"))


@pytest.mark.nvcc(sources=planes_source)
@pytest.mark.slow
def test_kernels_launch_over_a_range_of_planes_and_compile(tmp_path):
    source = planes_source()
    assert "const int z = blockIdx.z + z0;" in source
    assert "const int y = blockIdx.y + y0;" in source
    assert source.count("int y0, int z0") == 2  # lbm_step and lbm_step_macro
    result = compile_cubin(source, tmp_path, "offsets")
    assert result.returncode == 0, result.stderr[-3000:]


# -- on GPUs ---------------------------------------------------------------------------------
def launcher() -> list[str]:
    """mpiexec on PATH with the flags Open MPI needs as root; without mpi4py or mpiexec the
    test is skipped, or fails under THELMA_REQUIRE_GPU=1."""
    try:
        import mpi4py  # noqa: F401 (the ranks run python -m mpi4py)
    except ImportError:
        hardware.require_or_skip("mpi4py is not installed")
    mpiexec = shutil.which("mpiexec") or shutil.which("mpirun")
    if mpiexec is None:
        hardware.require_or_skip("no mpiexec on PATH")
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30)
    command = [mpiexec]
    text = version.stdout + version.stderr
    if ("Open MPI" in text or "OpenRTE" in text) and os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def run_gpus(ranks: int, *args: str, env: dict | None = None, script: Path = SCRIPT) -> str:
    environment = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "NCCL_NVLS_ENABLE": "0",
                   **(env or {})}
    result = subprocess.run([*launcher(), "-n", str(ranks), sys.executable, "-m", "mpi4py",
                             str(script), *args], capture_output=True, text=True, timeout=150,
                            env=environment)
    output = result.stdout[-3000:] + result.stderr[-4000:]
    assert result.returncode == 0, output
    return result.stdout


@pytest.mark.gpu
@pytest.mark.gpus(2)
@pytest.mark.parametrize(("precision", "case", "mode", "dims", "scheme"), [
    ("float64", "lid", "overlap", "auto", "lbm"),
    ("float32", "lid", "overlap", "auto", "lbm"),
    ("float64", "zperiodic", "overlap", "auto", "lbm"),
    ("float32", "zperiodic", "serial", "auto", "lbm"),
    ("float64", "lid", "overlap", "1x2x1", "lbm"),  # a y cut: packed layers
    # two-step LW-ACM: exchange, then one launch over the grown box
    ("float64", "lid", "serial", "auto", "lwacm"),
    ("float32", "zperiodic", "serial", "1x2x1", "lwacm"),
    # single step: the LBM schedule (interior overlapped with the exchange of whole records)
    ("float64", "lid", "serial", "auto", "lwacm-fused"),  # records sent in place
    ("float64", "lid", "overlap", "auto", "lwacm-fused"),
    ("float32", "zperiodic", "overlap", "auto", "lwacm-fused"),
    ("float64", "lid", "overlap", "1x2x1", "lwacm-fused"),  # packed records, a y cut
])
def test_two_gpus_over_nccl_equal_one_gpu_bit_for_bit(precision, case, mode, dims, scheme):
    out = run_gpus(2, precision, case, mode, dims, scheme, env={"THELMA_HALO": "nccl"})
    assert f"identical: {case} {precision} {mode} {scheme}, 2 ranks" in out
    assert "over nccl" in out


@pytest.mark.gpu
@pytest.mark.parametrize(("mode", "scheme"), [("overlap", "lbm"), ("serial", "lwacm"),
                                              ("overlap", "lwacm-fused")])
def test_two_ranks_sharing_one_gpu_equal_one_gpu_bit_for_bit(mode, scheme):
    out = run_gpus(2, "float64", "lid", mode, "auto", scheme,
                   env={"CUDA_VISIBLE_DEVICES": "0", "THELMA_HALO": "auto"})
    assert f"identical: lid float64 {mode} {scheme}, 2 ranks" in out and "over mpi" in out


@pytest.mark.gpu
def test_y_cut_of_16bit_single_step_records_equals_one_gpu_bit_for_bit():
    """fp16s records, 4 rows a thread: the y cut's launches keep the groups of 4 rows that one
    GPU forms (rank boundaries at row 16), so each row takes the same path and code."""
    out = run_gpus(2, "float32", "rows32", "overlap", "1x2x1", "lwacm-fused-fp16s",
                   env={"CUDA_VISIBLE_DEVICES": "0", "THELMA_HALO": "auto"})
    assert "identical: rows32 float32 overlap lwacm-fused-fp16s, 2 ranks" in out


def run_writers(tmp_path, env: dict) -> None:
    out = run_gpus(2, str(tmp_path), env={"THELMA_HALO": "auto", **env},
                   script=SCRIPT.parent / "gpu_results_run.py")
    assert "equal: vtk and statistics pieces bit for bit, 18 images, 2 ranks" in out


@pytest.mark.gpu
def test_writers_of_two_ranks_sharing_one_gpu_equal_one_gpu(tmp_path):
    """vtk, statistics and image of 2 CUDA ranks against one GPU: ρ and u of a rank's piece
    are device arrays, which each writer copies to the host (tests/mpi/gpu_results_run.py)."""
    run_writers(tmp_path, {"CUDA_VISIBLE_DEVICES": "0"})


@pytest.mark.gpu
@pytest.mark.gpus(2)
def test_writers_of_two_gpus_equal_one_gpu(tmp_path):
    run_writers(tmp_path, {})


@pytest.mark.parametrize(("layers", "group", "origin", "boundary", "interior"), [
    (10, 1, 0, [(1, 1), (8, 1)], (2, 6)),  # one layer a launch at each end: as before groups
    (4, 1, 0, [(1, 1), (2, 1)], None),
    (3, 1, 0, [(1, 1)], None),
    (34, 4, 0, [(1, 4), (29, 4)], (5, 24)),  # 32 owned rows from a multiple of 4
    (10, 4, 0, [(1, 4), (5, 4)], None),
    (5, 4, 0, [(1, 3)], None),
    (34, 4, 2, [(1, 2), (31, 2)], (3, 28)),  # layer 1 at global row 4k + 2
])
def test_overlapped_launches_keep_row_groups_whole(layers, group, origin, boundary, interior):
    """The boundary launches hold layers 1 and L − 2 with the rest of their groups (aligned
    to the global rows), the interior launch starts at a group: every owned layer once."""
    from thelma_py.cuda_steps import overlapped_launches

    got_boundary, got_interior = overlapped_launches(layers, group, origin)
    assert (got_boundary, got_interior) == (boundary, interior)
    launches = got_boundary + ([got_interior] if got_interior else [])
    rows = sorted(r for first, count in launches for r in range(first, first + count))
    assert rows == list(range(1, layers - 1))
    starts = [first for first, _ in launches[1:]]
    assert all((first - 1 + origin) % group == 0 for first in starts)


def test_edge_table_of_a_rank_with_a_ghost_layer_beyond_the_lid_matches_one_domain():
    """The top rank of a z cut stores a ghost layer beyond the lid: a link from the lid edge
    to (y = −1, ghost z) lies beyond −y *and* +z, where the lid (declared last) wins, as in one
    domain; the table bounds the domain's own layers so that wall_id finds that corner."""
    from thelma_py.codegen.tag_tables import edge_table
    from thelma_py.geometry import Geometry

    lattice = LATTICES["D3Q19"]
    geo = Geometry((12, 10, 16), periodic=(True, False, False))
    geo.edge("+z", velocity=(0.05, 0.0, 0.0))
    whole = edge_table(geo.evaluate(lattice))
    assert list(whole[27:]) == [0, 11, 0, 9, 0, 15]
    top = edge_table(geo.evaluate(lattice, (0, 0, 7), (12, 10, 10), ghost=True))
    bottom = edge_table(geo.evaluate(lattice, (0, 0, -1), (12, 10, 10), ghost=True))
    assert list(top[27:]) == [0, 11, 0, 9, 0, 8]      # layer 9 is beyond +z
    assert list(bottom[27:]) == [0, 11, 0, 9, 1, 9]   # layer 0 is beyond -z
    # regions owned nodes can reach: not below the top rank, not above the bottom one
    np.testing.assert_array_equal(top[9:27], whole[9:27])
    np.testing.assert_array_equal(bottom[:18], whole[:18])
    assert top[1 + 3 * 0 + 9 * 2] == geo.evaluate(lattice).face_bc_ids["+z"]


class _FakeStream:
    def __init__(self, log, name):
        self.log, self.name, self.ptr = log, name, 0

    def record(self, event=None):
        self.log.append(("record", self.name))
        return self.name

    def wait_event(self, event):
        self.log.append(("wait", self.name, event))

    def __enter__(self):
        _FakeCuda.current.append(self)

    def __exit__(self, *exc):
        _FakeCuda.current.pop()


class _FakeCuda:
    current: list = []
    log: list = []

    @classmethod
    def get_current_stream(cls):
        return cls.current[-1]

    @classmethod
    def Stream(cls, non_blocking=False, priority=None):  # noqa: N802 (cupy's name)
        return _FakeStream(cls.log, "halo")

    @classmethod
    def Event(cls, disable_timing=False):  # noqa: N802 (cupy's name)
        return None


@pytest.mark.parametrize(("layers", "overlap"), [(10, True), (10, False), (4, True), (3, True)])
def test_distributed_step_updates_each_owned_layer_once_and_never_a_ghost(layers, overlap):
    """CudaLbm.step_distributed with the kernel launches recorded (no GPU): per step the
    exchange precedes the boundary layers on the halo stream, the layers launched cover
    1..L-2 exactly once, only the last step stores ρ and u, and the parity flips per step."""
    from thelma_py.cuda_steps import overlapped_launches
    from thelma_py.modules.compute.lbm.cuda import CudaLbm

    log = _FakeCuda.log
    log.clear()
    _FakeCuda.current[:] = [_FakeStream(log, "main")]
    engine = object.__new__(CudaLbm)
    engine.cp = SimpleNamespace(cuda=_FakeCuda)
    engine.buffers, engine.current, engine._halo_stream = ["A", "B"], 0, None
    engine.scheme = "pull"
    engine._cut, engine._layers, engine.split = "planes", layers, False
    engine._schedule = overlapped_launches(layers)  # what _plan_layers would set

    def launch(store, advance=True, rows=None, planes=None):
        assert not advance and rows is None
        log.append(("launch", _FakeCuda.get_current_stream().name, store, planes))
    engine._launch = launch
    exchange = SimpleNamespace(exchange=lambda f, stream: log.append(("exchange", stream.name,
                                                                      f)))
    engine.step_distributed(3, exchange, overlap=overlap)
    steps = [[]]
    for entry in log:
        steps[-1].append(entry)
        if entry[0] == "wait" and entry[1] == "main" or (not overlap and entry[0] == "launch"):
            steps.append([])
    steps = [s for s in steps if s]
    assert len(steps) == 3
    for k, entries in enumerate(steps):
        launches = [e for e in entries if e[0] == "launch"]
        covered = sorted(z for e in launches for z in range(e[3][0], e[3][0] + e[3][1]))
        assert covered == list(range(1, layers - 1))
        assert all(e[2] == (k == 2) for e in launches)
        exchanged = [e for e in entries if e[0] == "exchange"]
        assert len(exchanged) == 1 and exchanged[0][2] == "AB"[k % 2]
        if overlap:
            first_halo_launch = next(i for i, e in enumerate(entries)
                                     if e[0] == "launch" and e[1] == "halo")
            assert entries.index(exchanged[0]) < first_halo_launch
            assert exchanged[0][1] == "halo"
            halo_layers = {e[3][0] for e in launches if e[1] == "halo"}
            assert halo_layers == {1, layers - 2}
    assert engine.current == 1


def test_scaling_report_renders_measurement_and_model():
    from thelma_py.tools.bench import markdown_table
    from thelma_py.tools.bench_ranks import scaling_text

    record = {"scaling": "weak", "ranks": 2, "dims": [1, 1, 2], "case": "periodic",
              "lattice": "D3Q19", "collision": "bgk", "precision": "float32",
              "streaming": "pull", "size": 384, "global_shape": [384, 384, 768],
              "halo": "nccl", "devices": ["NVIDIA H200 (GPU 0)", "NVIDIA H200 (GPU 1)"],
              "mlups_total": 50000.0, "mlups_per_gpu": 25000.0, "mlups_reference": 25500.0,
              "efficiency": 0.98, "efficiency_serial": 0.97, "step_ms": 2.26,
              "step_serial_ms": 2.3, "exchange_ms": 0.05, "reference_step_ms": 2.2,
              "halo_bytes_per_face": 5898240, "faces": 2, "sent_bytes_per_step": 5898240,
              "link_bandwidth_GBs": 350.0, "link_latency_us": 12.0, "model_update_ms": 2.2,
              "model_exchange_ms": 0.029, "predicted_efficiency_serial": 0.987,
              "predicted_efficiency_overlap": 1.0}
    payload = {"device": "NVIDIA H200", "driver": 13000, "cupy": "14.2", "commit": "abc",
               "date": "2026-11-22T02:00:00+00:00", "ranks": 2, "scaling": [record]}
    table = markdown_table(payload)
    assert "| lbm | weak | periodic | float32 | 384×384×768 | 2 | nccl | 50000 | 25000 | " \
           "25500 | 98.0% | 97.0% |" in table
    assert "100.0% | 98.7% |" in table
    text = scaling_text(record)
    assert "efficiency 98.0%" in text and "predicted efficiency 98.7% serial" in text
    assert text.startswith("lbm weak scaling on 2 ranks")
    fused = scaling_text({**record, "compute": "lwacm-fused"})
    assert fused.startswith("lwacm-fused weak scaling on 2 ranks")


def test_field_plan_moves_every_component_both_ways():
    """ρ and u for output: all components of the owned edge layers to the neighbours' ghosts."""
    lattice = LATTICES["D3Q19"]
    plan = halo_plan(lattice, box_of((16, 8, 12), (1, 1, 2), 1, False), fields=True)
    assert [(t.populations, t.send_layer, t.recv_layer) for t in plan] == [((), -2, 0),
                                                                          ((), 1, -1)]
    assert (plan[0].to, plan[0].frm, plan[1].to, plan[1].frm) == (-2, 0, 0, -2)
    u = np.arange(3 * 7 * 4 * 5).reshape(3, 7, 4, 5)
    np.testing.assert_array_equal(u[plan[0].index(-2)], u[:, 5:6])


# -- LW-ACM engines: which arrays, which plan, which NCCL messages (no GPU needed) -----------
class _DeviceLike(np.ndarray):
    """A NumPy array with CuPy's ``data.ptr`` (what NcclHaloExchange keys its cache on)."""

    @property
    def data(self):

        return SimpleNamespace(ptr=self.__array_interface__["data"][0])


def _nccl_operations(plan, f) -> list:
    """NcclHaloExchange's messages for ``f`` under ``plan``, without NCCL or CuPy."""

    from thelma_py.parallel import NcclHaloExchange

    exchange = object.__new__(NcclHaloExchange)
    exchange.cp = SimpleNamespace(empty=lambda shape, dtype: np.empty(shape, dtype))
    exchange.plan, exchange._ops = plan, {}
    return exchange._operations(f)


@pytest.mark.parametrize(("dims", "in_place"), [((1, 1, 2), True), ((1, 2, 1), False)])
def test_single_step_records_travel_whole_over_nccl(dims, in_place):
    """(1, *S, 4) records: one message per way holding every component of a layer, sent in
    place on a z cut (a contiguous layer) and packed on a y cut."""
    lattice = LATTICES["D3Q19"]
    shape = (16, 8, 12)
    box = box_of(shape, dims, 0, periodic=True)
    grown = tuple(reversed(box.grown_shape))
    records = np.arange(np.prod(grown) * 4, dtype=np.float32).reshape(1, *grown, 4)
    ops = _nccl_operations(halo_plan(lattice, box, fields=True), records.view(_DeviceLike))
    assert [(op, peer) for op, _, peer in ops] == [("send", 1), ("recv", 1)] * 2
    axis = 1 if dims[2] > 1 else 2
    layer = [slice(None)] * 5
    for (_, buffer, _), index in zip(ops, (-2, 0, 1, -1), strict=True):
        assert isinstance(buffer, tuple) != in_place
        view = buffer[0] if isinstance(buffer, tuple) else buffer
        layer[axis] = slice(index, index + 1 or None)
        np.testing.assert_array_equal(view, records[tuple(layer)])
        assert view.size == np.prod(grown) // grown[axis - 1] * 4


def test_two_step_sends_only_the_crossing_populations_of_f_star():
    lattice = LATTICES["D3Q19"]
    box = box_of((16, 8, 12), (1, 1, 2), 1, periodic=False)
    grown = tuple(reversed(box.grown_shape))
    f = np.zeros((lattice.q, *grown)).view(_DeviceLike)
    ops = _nccl_operations(halo_plan(lattice, box), f)
    # the last rank of a non-periodic z: sends down and receives from below only
    assert [(op, peer) for op, _, peer in ops] == [("recv", 0)] * 5 + [("send", 0)] * 5
    assert all(buffer.shape == (1, *grown[1:]) for _, buffer, _ in ops)  # one layer of one f*_i


def _lwacm_engines(fused: bool, box):
    """The NumPy engine of a rank's grown box, and the CUDA engine's class."""
    from thelma_py.backend import select_backend
    from thelma_py.geometry import Geometry
    from thelma_py.modules.compute.lwacm import Lwacm, LwacmFused, cuda

    lattice = LATTICES["D3Q19"]
    geo = Geometry((16, 8, 12), periodic=(True, False, False))
    geo.edge("+z", velocity=(0.05, 0.0, 0.0))
    tags = geo.evaluate(lattice, box.grown_lower, box.grown_shape, ghost=True)
    params = (LwacmFused if fused else Lwacm)(nu=0.03)
    engine = params.create(lattice, tags, select_backend("cpu"), np.float64)
    return engine, cuda.CudaLwacmFused if fused else cuda.CudaLwacm


@pytest.mark.parametrize("fused", [False, True])
def test_lwacm_engines_exchange_what_their_rule_reads(fused):
    """Two-step: the crossing f* (a node reads only its own j); single step: whole (ρ, u)
    nodes. NumPy and CUDA engines of a scheme declare the same plan; the CUDA engine hands
    out its current buffer (records as one (1, *S, 4) field) and refuses an x cut."""
    from thelma_py.parallel import DistributedEngine

    lattice = LATTICES["D3Q19"]
    box = box_of((16, 8, 12), (1, 1, 2), 1, periodic=False)
    engine, cuda_class = _lwacm_engines(fused, box)
    distributed = DistributedEngine(engine, box)
    assert distributed.fields is fused
    assert getattr(cuda_class, "halo_fields", False) is fused
    plan = distributed.exchange.plan
    assert [len(t.populations) for t in plan] == ([0, 0] if fused else [5, 5])
    (array,) = engine.halo_arrays()
    assert array is (engine.w if fused else engine.f)

    gpu = object.__new__(cuda_class)
    gpu.lattice, gpu.current = lattice, 1
    grown = tuple(reversed(box.grown_shape))
    gpu.nz, gpu.ny = grown[0], grown[1]
    gpu.buffers = [np.zeros((*grown, 4) if fused else (lattice.q, *grown)) for _ in range(2)]
    gpu.config = SimpleNamespace(thread_rows=4)  # rows a thread: grouped across a y cut only
    (held,) = gpu.halo_arrays()
    assert held.shape == ((1, *grown, 4) if fused else (lattice.q, *grown))
    assert np.shares_memory(held, gpu.buffers[1]) and not np.shares_memory(held, gpu.buffers[0])
    gpu.distribute(box)  # a z cut: accepted
    assert getattr(gpu, "_group", 1) == 1
    with pytest.raises(ValueError, match="GPU ranks cut exactly one axis, z or y"):
        gpu.distribute(box_of((16, 8, 12), (2, 1, 1), 0, periodic=True))

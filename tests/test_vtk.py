"""VTK output: values land on the right axes, the .pvd indexes the series, writes are atomic."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import attrs
import numpy as np
import pytest

import thelma_py as tp
from tests.mpi.pieces import read_builtin_vti, read_with_vtk
from thelma_py.files import OutputDirectoryError, atomic_path
from thelma_py.modules.results.vtk import VtkWriter


@attrs.define
class FakeSolver:
    """What the VTK plug-in reads from a one-domain solver: fields(), fields_later(),
    time_step, tags.lower and tags.periodic."""

    arrays: dict
    lower: tuple
    time_step: int = 0
    rank_box = None
    lead = True

    @property
    def tags(self):
        return SimpleNamespace(lower=self.lower, periodic=None)

    def fields(self) -> dict:
        return self.arrays

    def fields_later(self) -> dict:
        return {name: np.array(array, copy=True) for name, array in self.arrays.items()}

    def reserve_host_copies(self, count: int) -> int:
        return 0


def axis_fields(node_shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """rho = 1 + 0.01 x varies along x only, u_y = 0.001 y along y only; kind 2 where x = 0."""
    d = len(node_shape)
    x = np.arange(node_shape[-1], dtype=np.float64)
    y = np.arange(node_shape[-2], dtype=np.float64).reshape(-1, 1)
    rho = np.broadcast_to(1.0 + 0.01 * x, node_shape).copy()
    u = np.zeros((d, *node_shape))
    u[1] = np.broadcast_to(0.001 * y, node_shape)
    kind = np.ones(node_shape, dtype=np.uint8)
    kind[..., 0] = 2
    return {"rho": rho, "u": u, "kind": kind}


def read_vti(path) -> tuple[object, dict[str, np.ndarray]]:
    """(image, arrays): scalars as (Nz, Ny, Nx), vectors and tensors as (Nz, Ny, Nx, C)."""
    image, flat = read_with_vtk(path)
    nx, ny, nz = image.GetDimensions()
    return image, {name: array.reshape((nz, ny, nx) + array.shape[1:])
                   for name, array in flat.items()}


def pvd_entries(path) -> list[tuple[str, str]]:
    root = ET.parse(path).getroot()
    return [(d.get("timestep"), d.get("file")) for d in root.iter("DataSet")]


def varies_only_along(array: np.ndarray, axis: int) -> bool:
    """True if ``array`` (Nz, Ny, Nx) changes along array axis ``axis`` and along no other."""
    others = [a for a in range(array.ndim) if a != axis]
    flat_elsewhere = all(np.ptp(array, axis=a).max() == 0 for a in others)
    return flat_elsewhere and np.ptp(array, axis=axis).min() > 0


@pytest.mark.parametrize("node_shape, lower", [((3, 4, 5), (7, 5, 3)), ((4, 5), (2, 9))])
def test_values_vary_along_the_right_axes(tmp_path, node_shape, lower):
    fields = axis_fields(node_shape)
    solver = FakeSolver(fields, lower, time_step=40)
    writer = VtkWriter(path=tmp_path / "out", every=20)
    writer.start(solver)
    writer(solver)
    writer.flush()

    image, got = read_vti(tmp_path / "out" / "fields_00000040.vti")
    nz = node_shape[0] if len(node_shape) == 3 else 1
    assert image.GetDimensions() == (5, 4, nz)
    assert image.GetOrigin() == tuple(float(v) for v in lower) + (0.0,) * (3 - len(lower))
    assert image.GetSpacing() == (1.0, 1.0, 1.0)
    assert got["rho"].dtype == np.float32 and got["u"].dtype == np.float32
    np.testing.assert_allclose(got["rho"].reshape(node_shape), fields["rho"], rtol=1e-7)
    np.testing.assert_allclose(got["rho"][0, 0, :], 1.0 + 0.01 * np.arange(5), rtol=1e-7)
    assert varies_only_along(got["rho"], axis=2)  # x is the fastest (last) array axis
    assert varies_only_along(got["u"][..., 1], axis=1)
    np.testing.assert_allclose(got["u"][0, :, 0, 1], 0.001 * np.arange(4), rtol=1e-6)
    assert not got["u"][..., 0].any() and not got["u"][..., 2].any()  # 2D: z padded with 0
    assert got["kind"].dtype == np.uint8
    assert (got["kind"][..., 0] == 2).all() and (got["kind"][..., 1:] == 1).all()


@pytest.mark.parametrize("compression", [None, "zlib"])
def test_files_are_appended_binary_raw_by_default_or_compressed(tmp_path, compression):
    solver = FakeSolver(axis_fields((4, 5)), (0, 0))
    extra = {} if compression is None else {"compression": compression}
    writer = VtkWriter(path=tmp_path, fields=("rho",), precision="float64", **extra)
    writer(solver)
    writer.flush()
    head = (tmp_path / "fields_00000000.vti").read_bytes()[:2000]
    assert (b'compressor="vtkZLibDataCompressor"' in head) == (compression == "zlib")
    assert b'<AppendedData encoding="raw">' in head
    _, got = read_vti(tmp_path / "fields_00000000.vti")
    assert list(got) == ["rho"] and got["rho"].dtype == np.float64


def test_pvd_lists_every_file_with_its_step_and_no_temp_file_is_left(tmp_path):
    solver = FakeSolver(axis_fields((3, 4, 5)), (0, 0, 0))
    writer = VtkWriter(path=tmp_path / "series", prefix="cav", every=10)
    writer.start(solver)
    for step in (0, 10, 20, 20):  # the repeated step overwrites, not duplicates
        solver.time_step = step
        writer(solver)
        writer.flush()
        last = pvd_entries(tmp_path / "series" / "cav.pvd")[-1]
        assert last == (str(step), f"cav_{step:08d}.vti")
    writer.finish(solver)
    expected = [(str(s), f"cav_{s:08d}.vti") for s in (0, 10, 20)]
    assert pvd_entries(tmp_path / "series" / "cav.pvd") == expected
    assert sorted(p.name for p in (tmp_path / "series").iterdir()) == sorted(
        ["cav.pvd"] + [name for _, name in expected]
    )


def test_a_solver_run_writes_the_scheduled_steps(tmp_path):
    geo = tp.geometry.periodic_box((6, 4))
    init = tp.plugin(
        "init", "equilibrium", rho=lambda x, y: 1.0 + 0.01 * x, u=lambda x, y: (0.0 * x, 0.001 * y)
    )
    writer = tp.plugin("results", "vtk", path=tmp_path, every=5)
    solver = tp.compose(
        "D2Q9", geo, tp.plugin("compute", "lbm", nu=0.1), init=init, results=[writer], device="cpu"
    )
    solver.run(10)
    solver.finish()
    assert pvd_entries(tmp_path / "fields.pvd") == [
        ("0", "fields_00000000.vti"),
        ("5", "fields_00000005.vti"),
        ("10", "fields_00000010.vti"),
    ]
    image, got = read_vti(tmp_path / "fields_00000000.vti")
    assert image.GetDimensions() == (6, 4, 1)
    np.testing.assert_allclose(got["rho"][0, 0, :], 1.0 + 0.01 * np.arange(6), rtol=1e-6)
    assert varies_only_along(got["rho"], axis=2)
    assert varies_only_along(got["u"][..., 1], axis=1)


def test_an_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    target = blocker / "out"
    writer = VtkWriter(path=target)
    with pytest.raises(OutputDirectoryError) as info:
        writer.start(FakeSolver(axis_fields((4, 5)), (0, 0)))
    message = str(info.value)
    assert f"'{target}'" in message and "Not a directory" in message


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "index.pvd"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["index.pvd"]


@pytest.mark.parametrize(
    "bad",
    [
        {"fields": ("rho", "pressure")},
        {"fields": ("rho", "rho")},
        {"crop": ((0, 4), (3, 2))},
        {"crop": ((0, 4),)},
        {"subsample": 0},
        {"fields": ()},
        {"precision": "float16"},
        {"every": 0},
        {"prefix": "a/b"},
    ],
)
def test_bad_parameters_are_refused(tmp_path, bad):
    with pytest.raises((ValueError, TypeError)):
        VtkWriter(path=tmp_path, **bad)


def test_vtk_is_imported_only_when_writing():
    code = (
        "import sys, thelma_py.registry as r; r.load_plugins(); "
        "assert 'vtk' in r.available('results'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vtk', 'vtkmodules')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("points", [70_000, 1 << 18, 5])  # partial last chunk, exact, tiny
@pytest.mark.parametrize("compression", ["zlib", "none"])
def test_builtin_writer_files_read_back_with_vtk_like_its_own(tmp_path, points, compression):
    """The built-in writer (threaded zlib chunks of 1 MiB) against vtk's reader and writer:
    same arrays, dimensions, origin and spacing; 2^18 float32 vectors fill chunks exactly."""
    rng = np.random.default_rng(points)
    nx = 5 if points == 5 else 64
    node_shape = (points // (nx * nx) or 1, nx if points != 5 else 1, nx)
    fields = {"rho": rng.random(node_shape), "u": rng.standard_normal((3, *node_shape)),
              "kind": rng.integers(0, 9, node_shape).astype(np.uint8)}
    read = {}
    for writer in ("builtin", "vtk"):
        path = tmp_path / f"{writer}.vti"
        written = tp.modules.results.vtk.write_vti(
            path, fields, origin=(2, 3, 4), spacing=2, writer=writer, compression=compression)
        image, read[writer] = read_vti(path)
        assert image.GetOrigin() == (2.0, 3.0, 4.0) and image.GetSpacing() == (2.0, 2.0, 2.0)
        assert image.GetDimensions() == tuple(reversed(node_shape))
        assert {k: v.dtype for k, v in written.items()} == {
            "rho": np.float32, "u": np.float32, "kind": np.uint8}
    for name in ("rho", "u", "kind"):
        np.testing.assert_array_equal(read["builtin"][name], read["vtk"][name])
    np.testing.assert_array_equal(read["builtin"]["u"][..., 2],
                                  fields["u"][2].astype(np.float32))
    head = (tmp_path / "builtin.vti").read_bytes()[:600]
    assert (b"vtkZLibDataCompressor" in head) == (compression == "zlib")


@pytest.mark.parametrize("compression", ["zlib", "none"])
def test_numpy_reader_of_the_gpu_mpi_tests_reads_what_vtk_reads(tmp_path, compression):
    """tests/mpi/pieces.read_builtin_vti (for devices without the vtk package) against vtk's
    reader: a piece with a shifted extent, more than one zlib chunk, a 6-component tensor."""
    rng = np.random.default_rng(7)
    node_shape = (9, 70, 600)  # 1.5 MB a float32 vector array: two zlib chunks
    fields = {"rho": rng.random(node_shape), "u": rng.standard_normal((3, *node_shape)),
              "kind": rng.integers(0, 9, node_shape).astype(np.uint8),
              "stress": rng.standard_normal((6, *node_shape))}
    path = tmp_path / "piece.vti"
    tp.modules.results.vtk.write_vti(path, fields, names=("rho", "u", "kind", "stress"),
                                     start=(3, 0, 5), compression=compression)
    extent, mine = read_builtin_vti(path)
    _, theirs = read_vti(path)
    assert extent == (3, 602, 0, 69, 5, 13)
    assert set(mine) == set(theirs) == set(fields)
    for name in fields:
        np.testing.assert_array_equal(mine[name], theirs[name])
    np.testing.assert_array_equal(mine["stress"],
                                  np.moveaxis(fields["stress"], 0, -1).astype(np.float32))


def test_builtin_writer_rejects_mismatched_arrays_and_unknown_compression(tmp_path):
    from thelma_py.modules.results import vtk_xml

    with open(tmp_path / "x.vti", "wb") as handle:
        with pytest.raises(ValueError, match="has 5 points, the image 6"):
            vtk_xml.write_image(handle, {"rho": np.zeros(5, np.float32)}, (3, 2, 1))
        with pytest.raises(ValueError, match="compression must be one of"):
            vtk_xml.write_image(handle, {"rho": np.zeros(6, np.float32)}, (3, 2, 1),
                                compression="lz4")
    with pytest.raises(ValueError, match="writer"):
        VtkWriter(path=tmp_path, writer="paraview")


def test_interleaved_vectors_are_written_without_a_copy():
    """u as a (3, *S) view of (*S, 3) memory (what Solver.fields_later hands over on a GPU)
    goes to the file as it is; a plain (3, *S) array is reordered, with the same values."""
    from thelma_py.modules.results.vtk import _point_arrays

    rng = np.random.default_rng(3)
    memory = rng.standard_normal((4, 5, 6, 3)).astype(np.float32)
    view = np.moveaxis(memory, -1, 0)
    fields = {"rho": memory[..., 0].copy(), "u": view}
    fast = _point_arrays(fields, ("u",), np.dtype(np.float32))["u"]
    slow = _point_arrays({**fields, "u": np.ascontiguousarray(view)}, ("u",),
                         np.dtype(np.float32))["u"]
    assert np.shares_memory(fast, memory) and not np.shares_memory(slow, memory)
    np.testing.assert_array_equal(fast, slow)

"""Generated CUDA source: deterministic, complete, and compiled by the local nvcc."""

from __future__ import annotations

import re

import attrs
import numpy as np
import pytest

from tests.lbm_setups import LATTICES, configs, walled_geometry
from tests.nvcc import compile_cubin
from thelma_py.codegen.cuda import TILE
from thelma_py.codegen.tag_tables import FACES, box_walls, edge_table, face_tags, tile_flags
from thelma_py.lattice import D3Q19
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lbm.kernels import SCHEMES, KernelConfig, generate, kernel_names


def config(lattice_name, collision, real, scheme, moving=True, force=None):
    lattice = LATTICES[lattice_name]
    return KernelConfig(lattice, Lbm(nu=0.1, collision=collision).relaxation(lattice), real,
                        scheme, force=force, moving_walls=moving)


ALL = configs(("float", "double"), SCHEMES, (True, False))


@pytest.mark.parametrize(("lat", "coll", "real", "scheme", "moving"),
                         ALL[:: max(1, len(ALL) // 12)])
def test_source_is_deterministic_and_names_its_entries(lat, coll, real, scheme, moving):
    first, second = generate(config(lat, coll, real, scheme, moving)), generate(
        config(lat, coll, real, scheme, moving))
    assert first == second
    for name in kernel_names(scheme).values():
        assert re.search(rf'extern "C" __global__ void __launch_bounds__\([0-9, ]+\) {name}\(',
                         first), name


def test_no_velocity_table_reaches_the_kernel():
    text = generate(config("D3Q19", "mrt", "float", "pull"))
    assert "__constant__" not in text and "[19]" not in text


def test_tile_flags_mark_exactly_tiles_with_walls():
    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)
    flags = tile_flags(tags)
    nz, ny, nx = tags.tags.shape
    assert flags.shape == (nz, ny, -(-nx // TILE))
    plain = (tags.kind == 1) & (tags.layout.links(tags.tags) == 0)
    for z, y, t in np.ndindex(*flags.shape):
        tile = plain[z, y, t * TILE:(t + 1) * TILE]
        assert flags[z, y, t] == (0 if tile.all() else 1)
    assert 0 < flags.mean() < 1


def test_closed_box_faces_are_computed_and_flag_no_tile():
    """A cavity's stored tags are exactly fluid with the links across its six faces, so every
    tile computes its tag; an obstacle flags its own tiles only; periodic axes and open faces
    are not wall faces."""
    import thelma_py as tp

    for name, shape in (("D2Q9", (40, 24)), ("D3Q19", (40, 12, 10)), ("D3Q27", (33, 8, 6))):
        lattice = LATTICES[name]
        lid = (0.05,) + (0.0,) * (lattice.d - 1)
        tags = tp.geometry.cavity(shape, lid_velocity=lid).evaluate(lattice)
        walls = box_walls(tags)
        assert walls == (1 << 2 * lattice.d) - 1, (name, bin(walls))
        np.testing.assert_array_equal(face_tags(lattice, tags.tags.shape, walls), tags.tags)
        assert not tile_flags(tags, walls).any() and tile_flags(tags).all()
    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)  # periodic x, walls on y and z, a sphere
    walls = box_walls(tags)
    assert [FACES[k] for k in range(6) if walls >> k & 1] == ["-y", "+y", "-z", "+z"]
    flags = tile_flags(tags, walls)
    solid_or_linked = (tags.kind != 1) | (
        tags.tags != face_tags(lattice, tags.tags.shape, walls))
    assert flags.any() and flags.sum() < tile_flags(tags).sum()
    for z, y, t in np.ndindex(*flags.shape):
        assert flags[z, y, t] == solid_or_linked[z, y, t * TILE:(t + 1) * TILE].any()
    assert box_walls(tp.geometry.periodic_box((40, 8, 8)).evaluate(lattice)) == 0


def test_edge_table_gives_lid_row_beyond_top_face():
    lattice = LATTICES["D3Q19"]
    tags = walled_geometry(lattice).evaluate(lattice)
    table = edge_table(tags)
    lid = tags.face_bc_ids["+z"]
    assert table[1 + 3 * 1 + 9 * 2] == lid        # beyond +z only
    assert table[1 + 3 * 0 + 9 * 2] == lid        # beyond -y and +z: the lid, declared last
    assert table[1 + 3 * 0 + 9 * 1] == 0          # beyond -y only: wall at rest


def forced_config(lat, coll, real, scheme, moving):
    """With moving walls also a body force and 32-bit indices (half the matrix each way)."""
    force = (1e-5,) + (0.0,) * (LATTICES[lat].d - 1) if moving else None
    return attrs.evolve(config(lat, coll, real, scheme, moving, force), narrow=moving)


@pytest.mark.nvcc(sources=lambda **p: generate(forced_config(**p)))
@pytest.mark.slow
@pytest.mark.parametrize(("lat", "coll", "real", "scheme", "moving"), ALL)
def test_every_generated_kernel_compiles_with_nvcc(tmp_path, lat, coll, real, scheme, moving):
    cfg = forced_config(lat, coll, real, scheme, moving)
    result = compile_cubin(generate(cfg), tmp_path, cfg.name)
    assert result.returncode == 0, result.stderr[-3000:]


def test_thelma_kernels_prints_the_generated_source():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "thelma_py", "kernels", "lbm", "--lattice",
                             "D2Q9", "--precision", "float64", "--set", "collision='mrt'",
                             "streaming='aa'"], capture_output=True, text=True, check=True)
    assert "typedef double real_t;" in result.stdout
    for name in kernel_names("aa").values():
        assert f" {name}(" in result.stdout


OPEN_VARIANTS = [
    (lat, scheme, real, moving, kinds)
    for lat in ("D2Q9", "D3Q19", "D3Q27")
    for scheme in SCHEMES
    for real, moving in (("float", False), ("double", True))
    for kinds in ("local", "neighbour")
    if not (scheme == "aa" and kinds == "neighbour")
]


def open_config(lat, scheme, real, moving, kinds):
    from thelma_py.modules.compute.lbm.boundaries import FACE_NAMES

    lattice = LATTICES[lat]
    faces = FACE_NAMES[: 2 * lattice.d]
    if kinds == "local":
        names = ("VELOCITY", "PRESSURE", "EQUILIBRIUM_VELOCITY", "EQUILIBRIUM_PRESSURE")
    else:
        names = ("OUTFLOW", "FREE_SLIP", "VELOCITY")
    pairs = [(k, f) for k in names for f in faces]
    if kinds == "neighbour":  # free-slip edges and corners
        pairs += [("FREE_SLIP", "-x+y")] + ([("FREE_SLIP", "-y+z"), ("FREE_SLIP", "+x-y-z")]
                                            if lattice.d == 3 else [])
    coll = "trt" if lat == "D3Q27" else "mrt"
    return KernelConfig(lattice, Lbm(nu=0.1, collision=coll).relaxation(lattice), real, scheme,
                        moving_walls=moving, boundaries=pairs)


def test_open_boundary_source_only_where_asked():
    plain = generate(config("D3Q19", "bgk", "float", "pull"))
    assert "open_boundary" not in plain and "!= KIND_FLUID) return;" in plain
    text = generate(open_config("D3Q19", "pull", "float", False, "local"))
    assert "__noinline__ void open_boundary" in text and "== KIND_WALL) return;" in text


def test_aa_refuses_neighbour_kinds_at_generation():
    with pytest.raises(ValueError, match="AA"):
        open_config("D2Q9", "aa", "float", False, "neighbour")


@pytest.mark.nvcc(sources=lambda **p: generate(open_config(**p)))
@pytest.mark.slow
@pytest.mark.parametrize(("lat", "scheme", "real", "moving", "kinds"), OPEN_VARIANTS)
def test_open_boundary_kernels_compile_with_nvcc(tmp_path, lat, scheme, real, moving, kinds):
    source = generate(open_config(lat, scheme, real, moving, kinds))
    result = compile_cubin(source, tmp_path, "open")
    assert result.returncode == 0, result.stderr[-3000:]


def register_configs() -> dict:
    curved = attrs.evolve(open_config("D3Q19", "pull", "float", True, "neighbour"),
                          interpolated=True)
    return {"open": open_config("D3Q19", "pull", "float", True, "neighbour"), "curved": curved}


@pytest.mark.nvcc(sources=lambda: [(generate(cfg), ["--resource-usage"])
                                   for cfg in register_configs().values()])
@pytest.mark.slow
def test_bulk_path_registers_stay_within_64(tmp_path):
    """D3Q19 float pull: the open-boundary rules and interpolated links live in a __noinline__
    function, so the step kernels keep the register count of the wall-only kernel (64 or
    fewer)."""
    counts = {}
    for name, cfg in register_configs().items():
        result = compile_cubin(generate(cfg), tmp_path, name, ["--resource-usage"])
        assert result.returncode == 0, result.stderr[-3000:]
        lines = result.stdout + result.stderr
        entries = re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers",
                             lines, flags=re.S)
        counts[name] = {entry: int(n) for entry, n in entries}
    assert counts["open"] and max(counts["open"].values()) <= 64, counts
    assert counts["curved"] and max(counts["curved"].values()) <= 64, counts


def test_nvcc_prefetch_serves_only_the_byte_identical_source(tmp_path, monkeypatch):
    """The background compiles (tests/nvcc.py) answer a test only for its own text and
    options; anything else is compiled where asked. nvcc is replaced by a recorder, in a pool
    of this test's own: the session's compiles, still running, keep the real nvcc."""
    import types

    from tests import nvcc

    ran = []

    def fake_run(source, folder, name, options, nice=()):
        ran.append((source, options))
        (folder / f"{name}.cubin").write_text(source)
        return types.SimpleNamespace(returncode=0, stdout=f"{source} {options}", stderr="")

    monkeypatch.setattr(nvcc, "_run", fake_run)
    monkeypatch.setattr(nvcc, "_jobs", {})
    monkeypatch.setattr(nvcc, "_pool", None)
    monkeypatch.setattr(nvcc, "served", {"prefetched": 0, "compiled here": 0})
    monkeypatch.setenv(nvcc.build_cache.ENV, str(tmp_path / "builds"))  # not the session's
    mark = pytest.mark.nvcc(sources=lambda a: [f"src {a}", (f"src {a}", ["-x"])]).mark
    item = types.SimpleNamespace(get_closest_marker=lambda name: mark,
                                 callspec=types.SimpleNamespace(params={"a": 1, "b": 2}))
    try:
        assert nvcc.prefetch([item, item]) == 2  # one compile per distinct (text, options)
        assert nvcc.compile_cubin("src 1", tmp_path, "k").stdout == "src 1 ()"
        assert (tmp_path / "k.cubin").read_text() == "src 1"
        assert nvcc.compile_cubin("src 1", tmp_path, "k", ["-x"]).stdout == "src 1 ('-x',)"
        assert nvcc.served == {"prefetched": 2, "compiled here": 0}
        assert nvcc.compile_cubin("src 2", tmp_path, "k").stdout == "src 2 ()"
        assert nvcc.served == {"prefetched": 2, "compiled here": 1}
        assert sorted(ran) == [("src 1", ()), ("src 1", ("-x",)), ("src 2", ())]
    finally:
        nvcc.shutdown()


def test_nvcc_start_is_retried_after_a_failed_exec(tmp_path, monkeypatch):
    """A failed exec of nvcc (an OSError from the machine, seen once on CI) is tried again; one
    that keeps failing says how often it was tried."""
    import subprocess

    from tests import nvcc
    calls = []

    def flaky(command, **_):
        calls.append(command)
        if len(calls) < 3:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return subprocess.CompletedProcess(command, 0, "ok", "")

    monkeypatch.setattr(nvcc.subprocess, "run", flaky)
    monkeypatch.setattr(nvcc.time, "sleep", lambda s: None)
    assert nvcc._run("src", tmp_path, "k", ()).stdout == "ok"
    assert len(calls) == 3

    def broken(command, **_):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(nvcc.subprocess, "run", broken)
    with pytest.raises(OSError, match=f"could not start nvcc {nvcc.EXEC_TRIES} times"):
        nvcc._run("src", tmp_path, "k", ())


def box_wall_sources() -> list[str]:
    """Every wall face baked in: D3Q27 (64-bit tags) AA in fp64, D3Q19 16-bit pull."""
    return [Lbm(nu=0.1, streaming="aa").kernel_source(LATTICES["D3Q27"], np.float64,
                                                      box_walls=63),
            Lbm(nu=0.1, store="fp16s").kernel_source(LATTICES["D3Q19"], np.float32,
                                                     box_walls=63)]


@pytest.mark.nvcc(sources=lambda: box_wall_sources())
def test_kernels_with_computed_face_tags_compile_with_nvcc(tmp_path):
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    for k, source in enumerate(box_wall_sources()):
        assert "nz - 1 ?" in source
        result = compile_cubin(source, tmp_path, f"faces{k}")
        assert result.returncode == 0, result.stderr[-3000:]


def test_narrow_indices_where_every_population_index_fits_32_bits():
    """32-bit indices by default where Q N < 2^31 (dense, direct propagation; AA and 16-bit
    storage, as measured), 64-bit beyond and where asked; forcing them where they cannot run
    is a clear error. A narrow kernel indexes each population from the node's pointer (no
    64-bit neighbour index), a wide one as before."""
    params = Lbm(nu=0.02, streaming="aa", store="fp16s")
    limit = 2**31 // D3Q19.q  # Q N < 2^31
    assert params.narrow(D3Q19, limit) and not params.narrow(D3Q19, limit + 1)
    assert not params.narrow(D3Q19, None)
    assert not Lbm(nu=0.02, streaming="aa", cuda_options={"narrow": False}).narrow(D3Q19, 99)
    assert not Lbm(nu=0.02).narrow(D3Q19, 99)  # fp32 pull: measured 0.7 % slower
    assert Lbm(nu=0.02, cuda_options={"narrow": True}).narrow(D3Q19, 99)
    assert Lbm(nu=0.02, store="fp16s").narrow(D3Q19, 99)
    assert not Lbm(nu=0.02, cuda_options={"propagation": "shared"}).narrow(D3Q19, 64**3)
    with pytest.raises(ValueError, match=r"fewer than 2\^31 populations \(19 x"):
        Lbm(nu=0.02, cuda_options={"narrow": True}).narrow(D3Q19, limit + 1)
    with pytest.raises(ValueError, match="dense storage"):
        Lbm(nu=0.02, storage="sparse", cuda_options={"narrow": True}).narrow(D3Q19, 64**3)
    with pytest.raises(ValueError, match="a domain size .none is known here.; leave it unset"):
        Lbm(nu=0.02, cuda_options={"narrow": True}).narrow(D3Q19, None)
    narrow = params.kernel_source(D3Q19, np.float32, moving_walls=False, nodes=64**3)
    wide = params.kernel_source(D3Q19, np.float32, moving_walls=False, nodes=limit + 1)
    assert "f_n[((tag >> 12) & 1) ? 1 * N32 : 2 * N32 + dxm]" in narrow
    assert "f[((tag >> 12) & 1) ? 1 * N + n : 2 * N + (xm + nx * (y + ny * z))]" in wide
    assert "N32" not in wide and "(xm + nx *" not in narrow.split("lbm_step_odd(")[1]


def test_thelma_kernels_prints_what_a_domain_of_its_size_runs(tmp_path):
    """AA at 256³ runs 32-bit population indices (Q·N < 2^31), at 1400³ it cannot; the
    engine's own choice (`Lbm.narrow`) decides both."""
    import subprocess
    import sys

    def source(size: int) -> str:
        out = tmp_path / f"k{size}.cu"
        subprocess.run([sys.executable, "-m", "thelma_py", "kernels", "lbm", "--set",
                        "streaming='aa'", "--size", str(size), "--out", str(out)], check=True,
                       capture_output=True, text=True)
        return out.read_text()

    lattice = LATTICES["D3Q19"]
    small, large = source(256), source(1400)
    assert small == Lbm(nu=0.1, streaming="aa").kernel_source(lattice, "float32", nodes=256**3)
    assert large == Lbm(nu=0.1, streaming="aa").kernel_source(lattice, "float32",
                                                               nodes=1400**3)
    assert small != large and "N32" in small and "N32" not in large

"""The image results plug-in: pixels of analytic fields, a sphere where it is, the PNG format,
bad input, and (gpu) the same pixels from CuPy arrays.

Expected colours come from the analytic field and the published colour-map end points
(viridis #440154 / #fde725, Moreland's cool-warm #3b4cc0 / #b40426), not from the renderer.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import thelma_py as tp
from thelma_py.geometry import Geometry, Sphere
from thelma_py.modules.results import image_fields
from thelma_py.modules.results.colormaps import colormap
from thelma_py.modules.results.image_raymarch import SOLID_GREY, Camera, march, shade
from thelma_py.modules.results.image_render import (
    BACKGROUND,
    BOUNDARY_COLOUR,
    SOLID_COLOUR,
    pixel_node,
    slice_pixels,
)
from thelma_py.modules.results.png import encode_png, read_png, write_png
from thelma_py.tags import NodeKind

VIRIDIS_LOW, VIRIDIS_HIGH = (0x44, 0x01, 0x54), (0xFD, 0xE7, 0x25)
BLUE, RED = (0x3B, 0x4C, 0xC0), (0xB4, 0x04, 0x26)
FLUID = int(NodeKind.FLUID)


def test_png_is_a_valid_file_that_pillow_reads_back(tmp_path):
    """Written with zlib and struct; an independent decoder (Pillow, when installed) and the
    chunk CRCs agree on every pixel."""
    pixels = np.random.default_rng(1).integers(0, 256, (7, 11, 3), dtype=np.uint8)
    write_png(tmp_path / "a.png", pixels)
    assert np.array_equal(read_png(tmp_path / "a.png"), pixels)
    data = encode_png(pixels)
    assert data[12:16] == b"IHDR" and data[-8:-4] == b"IEND"
    image = pytest.importorskip("PIL.Image")
    assert np.array_equal(np.asarray(image.open(tmp_path / "a.png").convert("RGB")), pixels)
    corrupt = bytearray(data)
    corrupt[40] ^= 0xFF  # inside IDAT: the CRC no longer matches
    (tmp_path / "b.png").write_bytes(bytes(corrupt))
    with pytest.raises(ValueError, match="bad CRC"):
        read_png(tmp_path / "b.png")
    assert zlib.crc32(b"IEND") == int.from_bytes(data[-4:], "big")


def test_colour_maps_end_on_the_published_colours():
    assert tuple(colormap("viridis")[0]) == VIRIDIS_LOW
    assert tuple(colormap("viridis")[255]) == VIRIDIS_HIGH
    assert tuple(colormap("coolwarm")[0]) == BLUE and tuple(colormap("coolwarm")[255]) == RED
    with pytest.raises(ValueError, match="unknown colour map 'jet'; known: viridis, coolwarm"):
        colormap("jet")


def test_shear_layer_slice_colours_follow_tanh_at_chosen_pixels():
    """u_x = U tanh((y - y0)/δ) on 32 x 32 nodes drawn 2 pixels per node (64 x 64): the pixel
    of node (x, y) is (row 63 - 2y, column 2x); its colour is viridis at the analytic value on
    the fixed range [-U, U] (table row round(255 (u + U) / 2U))."""
    n, big_u, delta = 32, 0.1, 3.0
    y = np.arange(n)[:, None] + 0 * np.arange(n)[None, :]
    ux = big_u * np.tanh((y - 15.5) / delta)
    u = np.stack([ux, np.zeros_like(ux)])
    values = image_fields.plane("ux", np.ones((n, n)), u, (True, False), "z", 0)
    table = colormap("viridis")
    pixels = slice_pixels(values, np.full((n, n), FLUID, np.uint8), -big_u, big_u, table, 64, 64)
    for node_x, node_y in ((0, 0), (5, 13), (20, 16), (31, 31), (9, 24)):
        expected = table[round(255 * (big_u * math.tanh((node_y - 15.5) / delta) + big_u)
                               / (2 * big_u))]
        for dr, dc in ((0, 0), (1, 1)):
            assert tuple(pixels[63 - 2 * node_y - dr, 2 * node_x + dc]) == tuple(expected)
    assert tuple(pixels[63, 0]) != tuple(pixels[0, 0])  # bottom slow (blue-ish), top fast


def test_taylor_green_vorticity_extremes_are_the_ends_of_the_diverging_map():
    """u = U (sin kx cos ky, −cos kx sin ky): ω_z = 2Uk sin kx sin ky (times sin k / k for
    central differences), largest at (N/4, N/4) and (3N/4, 3N/4), most negative at (3N/4, N/4);
    with the automatic symmetric range those nodes take the two ends of cool-warm, the
    stagnation node (0, 0) (ω = 0) the middle of the map."""
    n = 32
    k = 2 * np.pi / n
    x, y = np.meshgrid(np.arange(n), np.arange(n))  # arrays (y, x)
    u = 0.05 * np.stack([np.sin(k * x) * np.cos(k * y), -np.cos(k * x) * np.sin(k * y)])
    writer = tp.plugin("results", "image", path=".", field="vorticity", size=(64, 64),
                       colorbar=False)
    values = image_fields.plane("vorticity", np.ones((n, n)), u, (True, True), "z", 0)
    pixels, lo, hi, table = writer.slice_image(values, np.full((n, n), FLUID, np.uint8), 2)
    expected_peak = 2 * 0.05 * math.sin(k)
    assert hi == pytest.approx(expected_peak, rel=1e-12) and lo == -hi

    def at(node_x, node_y):
        row, column = 63 - 2 * node_y, 2 * node_x
        assert pixel_node(row, column, (n, n), 64, 64) == (node_y, node_x)
        return tuple(pixels[row, column])

    assert at(8, 8) == RED and at(24, 24) == RED
    assert at(24, 8) == BLUE and at(8, 24) == BLUE
    assert at(0, 0) == tuple(colormap("coolwarm")[128])  # 127.5 rounds up


def test_solid_and_boundary_nodes_are_drawn_in_their_own_colours():
    values = np.linspace(0, 1, 40).reshape(5, 8)
    kind = np.full((5, 8), FLUID, np.uint8)
    kind[2, 3] = int(NodeKind.WALL)
    kind[4, 0] = int(NodeKind.VELOCITY)
    pixels = slice_pixels(values, kind, 0.0, 1.0, colormap("viridis"), 8, 5)
    assert tuple(pixels[4 - 2, 3]) == SOLID_COLOUR
    assert tuple(pixels[0, 0]) == BOUNDARY_COLOUR
    assert tuple(pixels[4, 7]) == tuple(colormap("viridis")[round(255 * 7 / 39)])
    wide = slice_pixels(values, kind, 0.0, 1.0, colormap("viridis"), 32, 5)  # letterboxed
    assert tuple(wide[2, 0]) == BACKGROUND and tuple(wide[2, 31]) == BACKGROUND


def test_slab_derivatives_equal_the_whole_field_on_every_plane():
    """Vorticity and Q on a plane need only the two planes beside it: the same numbers as the
    derived field of the whole domain, on every plane of every axis, periodic or not, and the
    thinned volume is the whole field thinned."""
    rng = np.random.default_rng(3)
    u, rho = rng.normal(size=(3, 7, 6, 5)), 1 + 0.1 * rng.normal(size=(7, 6, 5))
    for periodic in ((False,) * 3, (True, False, True)):
        for name in image_fields.FIELDS:
            whole = image_fields.scalar(name, rho, u, periodic)
            for a, axis in enumerate("xyz"):
                for i in range(rho.shape[2 - a]):
                    got = image_fields.plane(name, rho, u, periodic, axis, i)
                    np.testing.assert_allclose(got, np.take(whole, i, axis=2 - a), atol=1e-13)
            for stride in (1, 2, 3):
                np.testing.assert_allclose(image_fields.volume(name, rho, u, periodic, stride, 2),
                                           whole[::stride, ::stride, ::stride], atol=1e-6)


@pytest.mark.parametrize("real", [np.float32, np.float64])
def test_cuda_volume_kernel_equals_the_array_volume(host_gpu, real):
    """The one-pass CUDA volume (host stand-in) against :func:`.image_fields.volume` (array
    operations), every field, strides 1-3, periodic or not, odd sizes: the same numbers up to
    float32 rounding of the result (the kernel differences in double: 2e-6 of the field's
    largest magnitude). The stand-in takes contiguous arrays only; strided views (the
    single-step LW-ACM's interleaved records) run in the GPU image tests."""
    import tests.host_cupy as host_cupy
    from thelma_py.modules.results.image_volume import volume_kernel

    rng = np.random.default_rng(5)
    shape = (7, 6, 9)  # z, y, x
    records = rng.normal(size=(*shape, 4)).astype(real)
    records[..., 0] = 1 + 0.1 * records[..., 0]
    rho, u = records[..., 0], np.moveaxis(records[..., 1:], -1, 0)
    for periodic in ((False,) * 3, (True, False, True)):
        for name in image_fields.FIELDS:
            for stride in (1, 2, 3):
                want = image_fields.volume(name, rho, u, periodic, stride, 2)
                got = np.asarray(volume_kernel(host_cupy.module(), name,
                                               host_cupy.asarray(np.ascontiguousarray(rho)),
                                               host_cupy.asarray(np.ascontiguousarray(u)),
                                               periodic, stride))
                assert got.dtype == np.float32 and got.shape == want.shape
                scale = float(np.abs(want).max())
                np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale,
                                           err_msg=f"{name} stride {stride} {periodic}")


def _sphere_scene(radius=6.0, n=24):
    z, y, x = np.mgrid[:n, :n, :n]
    c = (n - 1) / 2
    solid = (x - c) ** 2 + (y - c) ** 2 + (z - c) ** 2 <= radius**2
    return solid, np.zeros(solid.shape, np.float32), c


def test_3d_view_shows_a_solid_sphere_where_the_camera_geometry_puts_it():
    """A sphere of radius R at distance D from a camera with vertical field of view φ covers
    a disc of tan(asin(R/D)) / tan(φ/2) half-heights around the image centre: 85 % of that
    radius is sphere (grey, lit almost fully at the centre), 115 % is background."""
    solid, value, c = _sphere_scene()
    width = height = 81
    camera = Camera.orbit((24, 24, 24), azimuth=20, elevation=10, distance=1.0, fov=40)
    eye, directions = camera.rays(width, height)
    what, voxel = march(value, solid, 1.0, eye, directions)
    pixels = shade(what, voxel, value, solid, value, 0.0, 1.0, colormap("viridis"), directions,
                   width, height)
    distance = float(np.linalg.norm(np.asarray(camera.position) - c))
    disc = math.tan(math.asin(6.5 / distance)) / math.tan(math.radians(20)) * height / 2
    centre = height // 2
    assert pixels[centre, centre, 0] >= 0.9 * SOLID_GREY
    for angle in np.linspace(0, 2 * np.pi, 12, endpoint=False):
        for fraction, is_sphere in ((0.85, True), (1.15, False)):
            row = round(centre + fraction * disc * math.sin(angle))
            column = round(centre + fraction * disc * math.cos(angle))
            grey = tuple(pixels[row, column]) != BACKGROUND
            assert grey == is_sphere, (angle, fraction, disc)


def test_sphere_in_a_flow_shows_in_a_slice_and_in_the_3d_view(tmp_path):
    """A solver with a solid sphere: the slice through its centre has the solid colour at the
    centre pixel and fluid colours beside it; the 3D view has grey near the image centre."""
    geo = Geometry((24, 20, 20))
    geo.wall(Sphere((11.5, 9.5, 9.5), 5.0))
    slice_writer = tp.plugin("results", "image", path=tmp_path, every=5, size=(240, 200),
                             colorbar=False, label=False, axis="z", position=9)
    view = tp.plugin("results", "image", path=tmp_path, every=5, view="3d", size=(96, 64),
                     colorbar=False, label=False, iso=1.0, azimuth=0, elevation=0)
    solver = tp.compose("D3Q19", geo, tp.plugin("compute", "lbm", nu=0.05), device="cpu",
                        init=tp.plugin("init", "equilibrium", rho=1.0, u=(0.02, 0.0, 0.0)),
                        results=[slice_writer, view])
    solver.run(5)
    solver.finish()
    image = read_png(tmp_path / "image_speed_00000005.png")
    # 10 pixels per node: node (x=12, y=10) is rows 90..99 counted from the bottom
    assert tuple(image[200 - 1 - 10 * 10 - 5, 12 * 10 + 5]) == SOLID_COLOUR
    assert tuple(image[200 - 1 - 10 * 10 - 5, 2 * 10 + 5]) not in (SOLID_COLOUR, BACKGROUND)
    picture = read_png(tmp_path / "image_speed_3d_00000005.png")
    assert picture[32, 48, 0] == picture[32, 48, 1] == picture[32, 48, 2] > 100  # grey
    assert tuple(picture[2, 2]) == BACKGROUND


def test_step_label_and_colour_bar_are_drawn(tmp_path):
    geo = Geometry((16, 16))
    writer = tp.plugin("results", "image", path=tmp_path, every=3, size=(400, 300))
    solver = tp.compose("D2Q9", geo, tp.plugin("compute", "lbm", nu=0.05), device="cpu",
                        init=tp.plugin("init", "equilibrium", rho=1.0,
                                       u=lambda x, y: (0.01 * np.sin(y / 3), 0 * x)),
                        results=[writer], check_every=0)
    solver.run(3)
    solver.finish()
    image = read_png(tmp_path / "image_speed_00000003.png")
    assert (image[:20, :60] == 255).all(axis=2).any()  # white label text, top left
    bar = image[150, 352:400]  # the colour-bar panel: a column of viridis colours
    table = {tuple(c) for c in colormap("viridis")}
    assert any(tuple(p) in table for p in bar)
    assert [name for _, name in writer.written] == ["image_speed_00000000.png",
                                                   "image_speed_00000003.png"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"field": "vort"}, "unknown image field 'vort'; known: speed, ux, uy, uz, vorticity"),
    ({"colormap": "jet"}, "unknown colour map 'jet'; known: viridis, coolwarm, gray"),
    ({"size": (0, 100)}, "image size must be 1..16384 pixels per side, got 0x100"),
    ({"size": (16385, 100)}, "image size must be 1..16384 pixels per side, got 16385x100"),
    ({"size": "big"}, "image size must be"),
    ({"view": "volume"}, "unknown image view 'volume'; known: slice, 3d"),
    ({"axis": "w"}, "unknown slice axis 'w'; known: x, y, z"),
    ({"range": (1, 0)}, "range must have low < high"),
])
def test_bad_parameters_are_refused_with_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tp.plugin("results", "image", path=".", **kwargs)


@pytest.mark.parametrize(("kwargs", "dim", "message"), [
    ({"position": 12}, 3, r"slice position 12 is outside the domain: z = 0..9"),
    ({"axis": "x", "position": -1}, 3, r"outside the domain: x = 0..11"),
    ({"field": "q_criterion"}, 2, "image field 'q_criterion' needs a 3D flow"),
    ({"axis": "x"}, 2, "a 2D flow is sliced along z only"),
    ({"view": "3d"}, 2, "a 3D image view needs a 3D flow"),
])
def test_slices_outside_the_domain_are_refused(tmp_path, kwargs, dim, message):
    shape = (12, 11, 10)[:dim]
    writer = tp.plugin("results", "image", path=tmp_path, **kwargs)
    solver = tp.compose("D3Q19" if dim == 3 else "D2Q9", Geometry(shape),
                        tp.plugin("compute", "lbm", nu=0.05), device="cpu", results=[writer])
    with pytest.raises(ValueError, match=message):
        solver.run(1)


@pytest.mark.slow
def test_distributed_slices_equal_the_single_domain_images(tmp_path):
    """Two NumPy ranks, cut along x and along z: every slice (vorticity and Q across the cut,
    speed, u_x) and 3D view (Q and vorticity iso-surfaces, thinned by 2) is the same PNG pixel
    for pixel as the single-domain run's."""
    from tests.test_parallel_results import run_script

    for dims in ("2x1x1", "1x1x2"):
        out = run_script("image_run.py", 2, dims, tmp_path / dims)
        assert "identical images: 12 files" in out


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_gpu_images_equal_the_cpu_images(tmp_path, precision):
    """The same run on CuPy and NumPy: slices (all fields) and a 3D view nearly pixel for pixel
    (the fields differ by rounding only; a pixel may move by a colour level or two (at most 8
    per channel), a ray may stop one sample earlier at the iso level)."""
    def run(device):
        geo = Geometry((24, 20, 16), periodic=(True, False, False))
        geo.edge("+y", velocity=(0.05, 0.0, 0.0))
        geo.wall(Sphere((8.5, 9.5, 7.5), 4.0))
        out = tmp_path / device
        plain = dict(path=out, every=40, size=(160, 120), colorbar=False, label=False)
        # a stream started impulsively past the sphere: Q is the sphere's, not the rounding
        # noise of the lid's plain shear (where Q = 0 exactly and CPU and GPU share no colour)
        results = [tp.plugin("results", "image", field=f, axis=a, **plain)
                   for f, a in (("speed", "z"), ("vorticity", "x"), ("q_criterion", "z"),
                                ("p", "z"))]
        results.append(tp.plugin("results", "image", view="3d", field="q_criterion", **plain))
        solver = tp.compose("D3Q19", geo, tp.plugin("compute", "lbm", nu=0.05), device=device,
                            init=tp.plugin("init", "equilibrium", u=(0.04, 0.0, 0.0)),
                            precision=precision, results=results)
        solver.run(40)
        solver.finish()
        return {p.name: read_png(p) for p in sorted(out.glob("*.png"))}

    cpu, gpu = run("cpu"), run("cuda")
    assert cpu.keys() == gpu.keys() and len(cpu) == 10
    for name in cpu:
        differ = (np.abs(cpu[name].astype(int) - gpu[name].astype(int)) > 8).any(axis=2).mean()
        assert differ < (0.03 if "3d" in name else 0.01), (name, differ)


@pytest.mark.parametrize("scene", ["sines", "sparse", "corners"])
def test_cuda_march_equals_its_numpy_twin_on_a_random_scene(host_gpu, scene):
    """The march kernel, compiled for the host and run thread by thread (tests/host_cupy.py),
    against the NumPy twin (which samples every step, no skipping): every ray stops at the
    same voxel with the same kind of hit, from an oblique camera, on a smooth scene
    (iso-surfaces of a sum of sines, met between nodes) with a solid sphere, and on a sparse
    one (two small blobs and a small solid in a 40³ box: most 8³ bricks are empty, so rays
    jump across them; a jump one sample too far changes hits here), and on one whose iso
    surfaces hug the planes x, y, z = 16 of brick corners (a brick that leaves out its last
    node plane misses them)."""
    import sys

    from thelma_py.modules.results.image_raymarch import _march_numpy, march_kernel

    cp = sys.modules["cupy"]
    if scene == "sines":
        n, iso = 20, 1.5
        solid, _, _ = _sphere_scene(radius=5.0, n=n)
        z, y, x = np.mgrid[:n, :n, :n]
        value = (np.sin(0.7 * x) + np.sin(0.5 * y) + np.sin(0.6 * z)).astype(np.float32)
    elif scene == "corners":
        n, iso = 33, 0.6
        z, y, x = np.mgrid[:n, :n, :n]
        value = ((x == 16) | (y == 16) | (z == 16)).astype(np.float32)
        solid = (x - 28) ** 2 + (y - 28) ** 2 + (z - 5) ** 2 <= 16  # in front of the planes
    else:
        n, iso = 40, 0.5
        z, y, x = np.mgrid[:n, :n, :n]
        value = sum(np.exp(-((x - a) ** 2 + (y - b) ** 2 + (z - c) ** 2) / 30.0)
                    for a, b, c in ((12.3, 20.7, 17.1), (27.6, 15.2, 24.9))).astype(np.float32)
        solid = (x - 20) ** 2 + (y - 28) ** 2 + (z - 10) ** 2 <= 25
    camera = Camera.orbit((n, n, n), azimuth=37, elevation=-21, distance=0.8, fov=50)
    eye, directions = camera.rays(48, 36)
    eye32, d32 = eye.astype(np.float32), directions.astype(np.float32)
    what, voxel = _march_numpy(value, solid, np.float32(iso), eye32, d32, np.float32(0.5))
    got_what, got_voxel = march_kernel(cp, cp.asarray(value), cp.asarray(solid), iso, eye32,
                                       d32, 0.5)
    assert min((what == k).sum() for k in (0, 1, 2)) > 20
    np.testing.assert_array_equal(got_what.get(), what)
    np.testing.assert_array_equal(got_voxel.get(), voxel)


def test_cuda_shade_equals_its_numpy_twin(host_gpu):
    """The shading kernel (host stand-in) against :func:`_shade_numpy` on the march hits of
    the smooth scene (iso hits coloured by a second field on a signed range, solid hits, rays
    that miss, hits on the faces where the normals are one-sided): the same RGB bytes."""
    import sys

    from thelma_py.modules.results.image_raymarch import _shade_numpy, shade_kernel

    cp = sys.modules["cupy"]
    n = 20
    solid, _, _ = _sphere_scene(radius=5.0, n=n)
    z, y, x = np.mgrid[:n, :n, :n]
    value = (np.sin(0.7 * x) + np.sin(0.5 * y) + np.sin(0.6 * z)).astype(np.float32)
    colour = (np.cos(0.3 * x) * np.sin(0.4 * z)).astype(np.float32)
    camera = Camera.orbit((n, n, n), azimuth=37, elevation=-21, distance=0.8, fov=50)
    eye, directions = camera.rays(48, 36)
    d32 = directions.astype(np.float32)
    what, voxel = march(value, solid, 1.5, eye, d32)
    assert min((what == k).sum() for k in (0, 1, 2)) > 20
    table = colormap("coolwarm")
    want = _shade_numpy(what, voxel, value, solid.astype(np.float32), colour, -0.8, 0.7, table,
                        d32, 48, 36)
    got = shade_kernel(cp, cp.asarray(what), cp.asarray(voxel), cp.asarray(value),
                       cp.asarray(solid), cp.asarray(colour), -0.8, 0.7, table, cp.asarray(d32),
                       48, 36)
    assert len(np.unique(want.reshape(-1, 3), axis=0)) > 50
    np.testing.assert_array_equal(np.asarray(got), want)


def test_cuda_volume_extrema_equal_the_array_reductions(host_gpu):
    """The reduction kernel (host stand-in, fewer samples than threads and many more) against
    NumPy: the largest fluid value; the colour's extrema where fluid and value >= iso, NaN and
    inf left out; nothing qualifying gives (+inf, -inf)."""
    import sys

    from thelma_py.modules.results.image_raymarch import volume_extrema

    cp = sys.modules["cupy"]
    rng = np.random.default_rng(3)
    for shape in ((5, 4, 3), (40, 37, 31)):
        value = rng.normal(size=shape).astype(np.float32)
        colour = rng.normal(size=shape).astype(np.float32)
        colour.flat[[3, 7, 11]] = (np.nan, np.inf, -np.inf)
        solid = rng.random(shape) < 0.3
        value[solid] = 10.0  # a solid node's value must not count
        top = float(volume_extrema(cp, cp.asarray(value), cp.asarray(solid)))
        assert top == value[~solid].max()
        for iso in (0.4, 99.0):
            lo, hi = volume_extrema(cp, cp.asarray(value), cp.asarray(solid), cp.asarray(colour),
                                    np.float32(iso))
            chosen = colour[~solid & (value >= iso) & np.isfinite(colour)]
            want = (chosen.min(), chosen.max()) if chosen.size else (np.inf, -np.inf)
            assert (float(lo), float(hi)) == want


def test_cuda_volume_pair_equals_two_single_volumes(host_gpu):
    """The iso field and the colour field from one pass of the volume kernel (host stand-in)
    are the volumes the kernel gives one at a time."""
    import tests.host_cupy as host_cupy
    from thelma_py.modules.results.image_volume import volume_kernel

    rng = np.random.default_rng(8)
    rho = host_cupy.asarray((1 + 0.1 * rng.normal(size=(6, 7, 8))).astype(np.float32))
    u = host_cupy.asarray(rng.normal(size=(3, 6, 7, 8)).astype(np.float32))
    cp = host_cupy.module()
    for first, second in (("q_criterion", "speed"), ("vorticity", "p")):
        pair = volume_kernel(cp, first, rho, u, (True, False, False), 2, second)
        for got, name in zip(pair, (first, second), strict=True):
            want = volume_kernel(cp, name, rho, u, (True, False, False), 2)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def march_source():
    from thelma_py.modules.results.image_raymarch import MARCH_SOURCE

    return MARCH_SOURCE


@pytest.mark.nvcc(sources=march_source)
def test_march_kernel_compiles_with_nvcc(tmp_path):
    import shutil

    from tests.nvcc import compile_cubin
    from thelma_py.modules.results.image_raymarch import MARCH_SOURCE

    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    result = compile_cubin(MARCH_SOURCE, tmp_path, "image_march")
    assert result.returncode == 0, result.stderr[-3000:]


def test_image_kernels_use_nothing_nvrtc_lacks():
    """CuPy compiles with NVRTC, which has no math.h: C macros such as INFINITY compile with
    nvcc and g++ (the tests above) and fail on the device. Outside the host-only branch the
    sources must not use them."""
    import re

    from thelma_py.modules.results.image_raymarch import MARCH_SOURCE
    from thelma_py.modules.results.image_volume import volume_source

    host_only = re.compile(r"#if !defined\(__CUDACC__\).*?#(?:else|endif)", re.S)
    for source in (MARCH_SOURCE, volume_source("float"), volume_source("double")):
        device_text = host_only.sub("", source)
        for macro in ("INFINITY", "NAN", "M_PI", "HUGE_VAL"):
            assert not re.search(rf"\b{macro}\b", device_text), macro


def test_thelma_run_image_option_writes_images_and_refuses_bad_ones(tmp_path, capsys):
    from pathlib import Path

    from thelma_py.tools.cli import main

    case = str(Path(__file__).parents[1] / "cases" / "lid_driven_cavity.py")
    assert main(["run", case, "--steps", "10", "--set", "n=12", "--quiet", "--out",
                 str(tmp_path), "--image", "field=vorticity size=(64,48) every=5"]) == 0
    names = sorted(p.name for p in (tmp_path / "images").glob("*.png"))
    assert names == [f"image_vorticity_{s:08d}.png" for s in (0, 5, 10)]
    assert read_png(tmp_path / "images" / names[-1]).shape == (48, 64, 3)
    assert main(["run", case, "--steps", "1", "--quiet", "--image", "colormap=jet"]) == 2
    assert "unknown colour map 'jet'; known: viridis, coolwarm, gray" in capsys.readouterr().err


@pytest.mark.parametrize(("scheme", "options"), [
    ("lbm", {"storage": "sparse"}), ("lwacm", {}), ("lwacm-fused", {})])
def test_every_scheme_and_storage_gives_the_slice_of_its_own_fields(tmp_path, scheme, options):
    """LBM on sparse storage and both LW-ACM schemes (NumPy): the PNG slice of u_x shows, at
    chosen pixels, the colour of the solver's own u_x there (fixed range), solids grey."""
    geo = Geometry((16, 12, 10), periodic=(True, False, False))
    geo.edge("+y", velocity=(0.05, 0.0, 0.0))
    geo.wall(Sphere((7.5, 5.5, 4.5), 2.5))
    writer = tp.plugin("results", "image", path=tmp_path, every=6, field="ux", axis="z",
                       position=4, size=(160, 120), colorbar=False, label=False,
                       range=(-0.05, 0.05))
    solver = tp.compose("D3Q19", geo, tp.plugin("compute", scheme, nu=0.05, **options),
                        device="cpu", results=[writer])
    solver.run(6)
    solver.finish()
    image = read_png(tmp_path / "image_ux_00000006.png")
    ux, kind = solver.velocity()[0][4], solver.tags.kind[4]  # plane z = 4: (y, x)
    table = colormap("coolwarm")  # u_x is signed
    for x, y in ((1, 1), (8, 10), (14, 6), (7, 5)):
        pixel = tuple(image[120 - 1 - 10 * y - 5, 10 * x + 5])  # 10 pixels per node
        if kind[y, x] == int(NodeKind.WALL):
            assert pixel == SOLID_COLOUR
        else:
            row = int(np.clip(np.floor((ux[y, x] + 0.05) / 0.1 * 255 + 0.5), 0, 255))
            assert pixel == tuple(table[row]), (x, y)


def test_rounding_noise_of_a_fluid_at_rest_is_not_stretched_over_the_colour_map():
    """ρ = 1 ± 1e-7 in float32 (a few ulps of rounding, summed differently on CPU and GPU),
    p = ±3.3e-8: the automatic pressure range is at least 256 float32 ulps (3.05e-5) wide, so
    every pixel stays within 255 × 3.3e-8 / 3.05e-5 ≈ 0.3 levels of the middle of the map
    (with the earlier floor of 1e-6, 8.5 levels: CPU and GPU images of the same run differed)."""
    writer = tp.plugin("results", "image", path=".", field="p", size=(8, 8), colorbar=False)
    noise = np.random.default_rng(0).uniform(-1e-7, 1e-7, (8, 8))
    rho = (1 + noise).astype(np.float32)
    values = image_fields.plane("p", rho, np.zeros((2, 8, 8), np.float32), (True, True), "z", 0)
    pixels, lo, hi, table = writer.slice_image(values, np.full((8, 8), FLUID, np.uint8), 2)
    assert hi - lo == pytest.approx(256 * np.finfo(np.float32).eps)
    middle = {tuple(table[k]) for k in range(126, 130)}
    assert {tuple(p) for p in pixels.reshape(-1, 3)} <= middle

"""Images of a running flow: a slice or a 3D view rendered where the fields are, PNG files
written on a background thread (``<path>/<prefix>_<step>.png``).

Only pixels travel to the host: a slice differentiates a slab of three planes on the device
(:mod:`.image_fields`), a 3D view marches rays through a thinned scalar volume
(:mod:`.image_raymarch`). Colour bar and step label are drawn on the small host image
(:mod:`.image_render`, :mod:`.bitmap_font`), PNG encoding (:mod:`.png`) on the writer thread.
Distributed runs: each rank sends the slab it holds of the slice to rank 0, which renders the
one image per step; a 3D view sums the thinned grids over the ranks (each fills the nodes it
owns), and rank 0 renders.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import numpy as np

from thelma_py.backend import array_module, host_copy
from thelma_py.files import ensure_writable_dir
from thelma_py.modules.results.background import BackgroundWriter
from thelma_py.modules.results.bitmap_font import draw_text
from thelma_py.modules.results.colormaps import COLORMAPS, colormap
from thelma_py.modules.results.image_fields import (
    AXES,
    FIELDS,
    NEEDS_NEIGHBOURS,
    SOLID_CODES,
    check_field,
    kind_plane,
    local_fetch,
    plane,
    signed,
    slab_planes,
    volume_from,
)
from thelma_py.modules.results.image_raymarch import Camera, march, shade, volume_extrema
from thelma_py.modules.results.image_render import (
    BACKGROUND,
    BAR_FRACTION,
    colour_bar,
    finish_range,
    slice_pixels,
    value_range,
)
from thelma_py.modules.results.image_volume import volume_kernel
from thelma_py.modules.results.png import write_png
from thelma_py.modules.results.vtk import check_prefix
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule

VIEWS = ("slice", "3d")
FLOOR_ULPS = 256
"""Narrowest automatic colour range, in units of the field's machine epsilon (3e-5 in float32,
6e-14 in float64) times its scale (1 for ρ and p, else the largest magnitude on the slice): the
rounding noise of a flat field (ρ ≈ 1; a uniform stream's speed, a few ulps apart on CPU and
GPU) then moves a pixel by a colour level or two instead of filling the map. A flow at lattice
Mach number Ma varies ρ by about Ma², far wider than the floor."""
UNIT_SCALE = ("p", "rho")
"""Fields whose noise floor is :data:`FLOOR_ULPS` ulps of 1 (ρ ≈ 1), not of their magnitude."""
MAX_SIZE = 16384
WRITER_THREADS = max(1, min(4, (os.cpu_count() or 1) // 2))
"""PNG encoding threads (zlib lets go of the interpreter lock while it compresses): a
1920x1080 image takes 30-80 ms to encode, longer than 100 steps of a fast 256³ run."""
QUEUE_DEPTH = 2 * WRITER_THREADS + 1
VOLUME_NODES = 256
"""A 3D view thins the volume so that its longest side has at most this many samples (unless
``stride`` is given)."""


def _check_in(allowed: tuple[str, ...], what: str):
    def check(instance, attribute, value) -> None:
        if value not in allowed:
            raise ValueError(f"unknown {what} {value!r}; known: {', '.join(allowed)}")
    return check


def _check_optional_colormap(instance, attribute, value) -> None:
    if value is not None and value not in COLORMAPS:
        raise ValueError(f"unknown colour map {value!r}; known: {', '.join(COLORMAPS)}")


def _size(value) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"image size must be (width, height) in pixels, got {value!r}") from None
    if not (1 <= width <= MAX_SIZE and 1 <= height <= MAX_SIZE):
        raise ValueError(f"image size must be 1..{MAX_SIZE} pixels per side, got "
                         f"{width}x{height}")
    return width, height


def _range(value) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"range must be (low, high) or None (automatic), got {value!r}") from None
    if not lo < hi:
        raise ValueError(f"range must have low < high, got {value!r}")
    return lo, hi


def _optional_point(value):
    if value is None:
        return None
    point = tuple(float(v) for v in value)
    if len(point) != 3:
        raise ValueError(f"camera points are (x, y, z) in lattice nodes, got {value!r}")
    return point


def _positive_int_or_none(instance, attribute, value) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{attribute.name} must be a positive integer or None, got {value!r}")


@register("results", "image")
@attrs.define(kw_only=True)
class ImageWriter(Results):
    """PNG images every N steps: a slice (``view="slice"``) of ``field`` through ``axis`` at
    node ``position``, or a 3D view (``view="3d"``): the iso-surface ``field`` = ``iso``
    coloured by ``colour_field``, with the solid geometry, seen by an orbit camera
    (``azimuth``, ``elevation``) or from ``camera_position`` to ``camera_target``."""

    supports_distributed = True  # see _gathered_plane and _rank_fetches

    path: Path = attrs.field(converter=Path)
    """Output directory (created by :meth:`start`)."""
    schedule: Every = attrs.field(alias="every", default=100, converter=as_schedule,
                                  validator=attrs.validators.instance_of(Every))
    field: str = attrs.field(default="speed", validator=_check_in(FIELDS, "image field"))
    """One of :data:`~.image_fields.FIELDS` (the iso-surface field of a 3D view)."""
    view: str = attrs.field(default="slice", validator=_check_in(VIEWS, "image view"))
    axis: str = attrs.field(default="z", validator=_check_in(tuple(AXES), "slice axis"))
    """Slice normal (3D flows; a 2D flow is its own slice)."""
    position: int | None = attrs.field(default=None)
    """Node index of the slice along ``axis`` (global); None: the middle."""
    colormap: str | None = attrs.field(default=None, validator=_check_optional_colormap)
    """None: ``coolwarm`` for signed fields, else ``viridis``."""
    range: tuple[float, float] | None = attrs.field(default=None, converter=_range)
    """Fixed (low, high) of the colour map; None: the field's min..max on the slice
    (symmetric about 0 for signed fields)."""
    size: tuple[int, int] = attrs.field(default=(1920, 1080), converter=_size)
    """(width, height) in pixels, 1..16384 each."""
    colorbar: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    label: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Draw the step (and field) in the top left corner."""
    prefix: str | None = attrs.field(default=None,
                                     validator=attrs.validators.optional(check_prefix))
    """File name stem; None: ``image_<field>`` (``image_<field>_3d`` for a 3D view)."""
    iso: float | None = attrs.field(default=None)
    """3D view: iso level; None: a quarter of the field's maximum in the volume."""
    colour_field: str = attrs.field(default="speed", validator=_check_in(FIELDS, "image field"))
    """3D view: the field that colours the iso-surface (through ``colormap``, ``range``)."""
    azimuth: float = 30.0
    elevation: float = 25.0
    distance: float = 1.3
    """Orbit camera distance in domain diagonals."""
    camera_position: tuple | None = attrs.field(default=None, converter=_optional_point)
    camera_target: tuple | None = attrs.field(default=None, converter=_optional_point)
    fov: float = 40.0
    stride: int | None = attrs.field(default=None, validator=_positive_int_or_none)
    """3D view: sample every ``stride``-th node; None: the longest side keeps
    :data:`VOLUME_NODES` samples."""
    background: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Encode and write PNG files on a worker thread."""
    written: list[tuple[int, str]] = attrs.field(factory=list, init=False, repr=False)
    _worker: BackgroundWriter = attrs.field(
        factory=lambda: BackgroundWriter(depth=QUEUE_DEPTH, workers=WRITER_THREADS),
        init=False, repr=False)
    _cache: dict = attrs.field(factory=dict, init=False, repr=False)

    @property
    def file_prefix(self) -> str:
        return self.prefix or f"image_{self.field}" + ("_3d" if self.view == "3d" else "")

    # -- checks ------------------------------------------------------------------------------
    def start(self, solver) -> None:
        """Check the field, slice and camera against the domain; create the directory."""
        shape = tuple(solver.tags.global_shape)  # (Nx, Ny[, Nz])
        d = len(shape)
        check_field(self.field, d)
        if self.view == "3d":
            check_field(self.colour_field, d)
            if d != 3:
                raise ValueError("a 3D image view needs a 3D flow; use view='slice'")
        elif d == 3:
            n = shape[AXES.index(self.axis)]
            if self.position is not None and not (isinstance(self.position, int)
                                                  and 0 <= self.position < n):
                raise ValueError(f"slice position {self.position!r} is outside the domain: "
                                 f"{self.axis} = 0..{n - 1}")
        elif self.axis != "z":
            raise ValueError(f"a 2D flow is sliced along z only, got axis {self.axis!r}")
        if solver.lead:
            ensure_writable_dir(self.path, who="image results")
        self._cache["ready"] = True

    # -- output ------------------------------------------------------------------------------
    def __call__(self, solver) -> None:
        if not self._cache.get("ready"):
            self.start(solver)
        self._worker.check()
        step = int(solver.time_step)
        if self.view == "3d":
            pixels, lo, hi, table = self.render_view(solver)
        else:
            pixels, lo, hi, table = self.render_slice(solver)
        if pixels is None:  # not the lead rank
            return
        target = self.path / f"{self.file_prefix}_{step:08d}.png"
        job = (target, step, _start_copy(pixels, lo, hi), table)
        if self.background:
            self._worker.submit(self._write_rendered, *job)
        else:
            self._write_rendered(*job)

    def _table(self, name: str, d: int) -> np.ndarray:
        return colormap(self.colormap or ("coolwarm" if signed(name, d) else "viridis"))

    def _slice_index(self, solver) -> int:
        shape = tuple(solver.tags.global_shape)
        n = shape[AXES.index(self.axis)] if len(shape) == 3 else 1
        return n // 2 if self.position is None else self.position

    def _area(self) -> tuple[int, int]:
        width, height = self.size
        if self.colorbar:
            width = max(width - max(int(width * BAR_FRACTION), 1), 1)
        return width, height

    def render_slice(self, solver):
        """Device pixels of this step's slice, the colour range and the colour table."""
        d = len(solver.tags.global_shape)
        index = self._slice_index(solver)
        if solver.rank_box is not None:
            gathered = self._gathered_plane(solver, index)
            if gathered is None:
                return None, 0.0, 0.0, None
            values, kind = gathered
        else:
            rho, u = solver.engine.macroscopic()
            values = plane(self.field, rho, u, solver.tags.periodic, self.axis, index)
            key = ("kind plane", self.axis, index)
            if key not in self._cache:  # the geometry does not change: copied once
                self._cache[key] = _device_like(values, kind_plane(solver.tags.kind, self.axis,
                                                                   index))
            kind = self._cache[key]
        return self.slice_image(values, kind, d)

    def slice_image(self, values, kind, d: int):
        """(pixels, lo, hi, colour table) of a 2D field ``values`` (rows up) with node kinds
        ``kind``, pixels and range on the device of ``values`` (floats with NumPy); the
        automatic range leaves solid nodes out."""
        xp = array_module(values)
        mask = ~xp.isin(xp.asarray(kind), xp.asarray(SOLID_CODES))
        floor = FLOOR_ULPS * float(np.finfo(values.dtype).eps)
        lo, hi = value_range(values, mask, self.range, signed(self.field, d), floor,
                             relative=self.field not in UNIT_SCALE)
        width, height = self._area()
        pixels = slice_pixels(values, kind, lo, hi, self._table(self.field, d), width,
                              height)
        return pixels, lo, hi, self._table(self.field, d)

    def _gathered_plane(self, solver, index: int):
        """Distributed slice: each rank sends the planes it holds of the slab around the slice
        (ρ, u, kind of its output piece); rank 0 assembles the slab and computes the plane."""
        box = solver.rank_box
        rho, u, kind = map(solver.backend.to_host, solver.piece_fields())
        lower, shape = box.piece()
        global_shape = tuple(solver.tags.global_shape)  # x, y[, z]
        d = len(global_shape)
        a = AXES.index(self.axis) if d == 3 else None
        if d == 3:
            width = 1 if self.field in NEEDS_NEIGHBOURS else 0
            planes, middle = slab_planes(global_shape[a], index, solver.tags.periodic[a], width)
            mine = [(k, p - lower[a]) for k, p in enumerate(planes)
                    if lower[a] <= p < lower[a] + shape[a]]
            axis = d - 1 - a
            part = (lower, shape, [k for k, _ in mine],
                    np.take(rho, [p for _, p in mine], axis=axis),
                    np.take(u, [p for _, p in mine], axis=axis + 1),
                    np.take(kind, [p for _, p in mine], axis=axis))
        else:
            planes, middle, part = [0], 0, (lower, shape, None, rho, u, kind)
        parts = solver.gather(part)
        if parts is None:
            return None
        slab_shape = [n for n in reversed(global_shape)]
        if d == 3:
            slab_shape[d - 1 - a] = len(planes)
        full_rho = np.zeros(slab_shape)
        full_u = np.zeros((d, *slab_shape))
        full_kind = np.zeros(slab_shape, dtype=np.uint8)
        for lower, shape, ks, r, v, k in parts:
            window = [slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(shape),
                                                         strict=True)]
            if d == 3:
                if not ks:
                    continue
                window[d - 1 - a] = np.asarray(ks)
            window = tuple(np.ix_(*[np.arange(w.start, w.stop) if isinstance(w, slice) else w
                                    for w in window]))
            full_rho[window], full_kind[window] = r, k
            for c in range(d):
                full_u[c][window] = v[c]
        periodic = tuple(p and (d == 2 or c != a) for c, p in enumerate(solver.tags.periodic))
        if d == 2:
            return plane(self.field, full_rho, full_u, periodic, "z", 0), full_kind
        values = plane(self.field, full_rho, full_u, periodic, self.axis, middle)
        return values, kind_plane(full_kind, self.axis, middle)

    def render_view(self, solver):
        """Device pixels of the 3D view of this step, the colour range of ``colour_field`` and
        the colour table (None pixels on the ranks other than 0 of a distributed run)."""
        shape_xyz = tuple(solver.tags.global_shape)
        stride = self.stride or max(1, -(-max(shape_xyz) // VOLUME_NODES))
        periodic = solver.tags.periodic
        if solver.rank_box is None:
            rho, u = solver.engine.macroscopic()
            xp = array_module(u)
            if "solid" not in self._cache:
                kind = solver.tags.kind[::stride, ::stride, ::stride]
                self._cache["solid"] = _device_like(u, np.isin(kind, SOLID_CODES))
            if xp is not np:  # both volumes in one kernel pass (image_volume)
                def volumes(name, second):
                    if name == second:
                        value = volume_kernel(xp, name, rho, u, periodic, stride)
                        return value, value
                    return volume_kernel(xp, name, rho, u, periodic, stride, second)
            else:
                fetch = local_fetch(rho, u)

                def volumes(name, second):
                    value = volume_from(fetch, name, shape_xyz, periodic, stride)
                    return value, (value if second == name else
                                   volume_from(fetch, second, shape_xyz, periodic, stride))
        else:
            fetch, kind_fetch = _rank_fetches(solver)
            if "solid" not in self._cache:
                xs, ys, zs = (np.arange(0, n, stride) for n in shape_xyz)
                self._cache["solid"] = np.isin(kind_fetch(xs, ys, zs), SOLID_CODES)

            def volumes(name, second):
                value = volume_from(fetch, name, shape_xyz, periodic, stride)
                return value, (value if second == name else
                               volume_from(fetch, second, shape_xyz, periodic, stride))
        value, colour = volumes(self.field, self.colour_field)
        if not solver.lead:
            return None, 0.0, 0.0, None
        if "solid32" not in self._cache:  # on the device of the volumes, once
            self._cache["solid"] = _device_like(value, self._cache["solid"])
            self._cache["solid32"] = self._cache["solid"].astype(np.float32)
        return self.view_image(value, colour, self._cache["solid"], shape_xyz, stride,
                               self._cache["solid32"])

    def view_image(self, value, colour, solid, shape_xyz, stride: int, solid32=None):
        """(pixels, lo, hi, colour table) of the 3D view of the volumes ``value`` and
        ``colour`` with the bool volume ``solid`` (all on one device; pixels and range stay
        there, floats with NumPy); ``solid32``: ``solid`` as float32, if at hand."""
        xp = array_module(value)
        floor = FLOOR_ULPS * float(np.finfo(np.float32).eps)
        relative, symmetric = self.colour_field not in UNIT_SCALE, signed(self.colour_field, 3)
        if xp is np:
            iso = self.iso
            if iso is None:  # a quarter of the largest fluid value
                fluid = ~solid
                iso = 0.25 * np.where(fluid, value, -np.inf).max() if fluid.any() else 0.0
            iso = np.float32(iso)
            lo, hi = value_range(colour, (value >= iso) & ~solid, self.range, symmetric, floor,
                                 relative)
        else:  # on the device, one pass over the volumes for each reduction
            iso = self.iso
            if iso is None:
                top = volume_extrema(xp, value, solid)
                iso = xp.where(top > -xp.inf, 0.25 * top, 0.0).astype(xp.float32)
            if self.range is not None:
                lo, hi = float(self.range[0]), float(self.range[1])
            else:
                low, high = volume_extrema(xp, value, solid, colour, iso)
                lo, hi = finish_range(xp, low.astype(xp.float64), high.astype(xp.float64),
                                      low > high, symmetric, floor, relative)
        width, height = self._area()
        key = ("rays", width, height, stride)
        if key not in self._cache:
            camera = (Camera(self.camera_position, self.camera_target, self.fov)
                      if self.camera_position is not None else
                      Camera.orbit(shape_xyz, self.azimuth, self.elevation, self.distance,
                                   self.fov))
            if self.camera_position is not None and self.camera_target is None:
                raise ValueError("camera_position needs camera_target")
            eye, directions = camera.rays(width, height)
            directions = directions.astype(np.float32)
            self._cache[key] = ((eye / stride).astype(np.float32), directions,
                                _device_like(value, directions))
        eye, directions, on_device = self._cache[key]
        what, voxel = march(value, solid, iso, eye, directions)
        table = self._table(self.colour_field, 3)
        pixels = shade(what, voxel, value, solid if xp is not np or solid32 is None else solid32,
                       colour, lo, hi, table, on_device, width, height)
        return pixels, lo, hi, table

    def _write_rendered(self, target: Path, step: int, rendered, table: np.ndarray) -> None:
        """Wait for the pixels and range of :func:`_start_copy`, then :meth:`_write`."""
        pixels, lo, hi = rendered()
        self._write(target, step, pixels, lo, hi, table)

    def _write(self, target: Path, step: int, pixels: np.ndarray, lo: float, hi: float,
               table: np.ndarray) -> None:
        """Compose the colour bar and label onto the pixels and write the PNG (any thread)."""
        width, height = self.size
        image = np.zeros((height, width, 3), dtype=np.uint8)
        image[:] = BACKGROUND
        image[:, :pixels.shape[1]] = pixels
        scale = max(1, height // 270)
        name = self.colour_field if self.view == "3d" else self.field
        if self.colorbar:
            colour_bar(image, lo, hi, table, name.replace("_criterion", ""))
        if self.label:
            draw_text(image, f"step {step}", 3 * scale, 3 * scale, scale)
        write_png(target, image)
        self.written.append((step, target.name))

    def flush(self) -> None:
        self._worker.drain()

    def finish(self, solver) -> None:
        self.flush()

    def state_dict(self) -> dict:
        self.flush()
        return {"written": [list(entry) for entry in self.written]}

    def load_state_dict(self, state: dict) -> None:
        self.written = [(int(s), str(n)) for s, n in state.get("written", [])]


def _rank_fetches(solver):
    """Fetches of a distributed run for :func:`.image_fields.volume_from`: every rank puts
    the nodes it owns of the asked grid into zeros, and the sum over the ranks (collective:
    every rank asks for the same grids in the same order) is the grid of the whole domain."""
    box = solver.rank_box
    rho, u, kind = map(solver.backend.to_host, solver.piece_fields())

    def local(xs, ys, zs):
        where, local_index = [], []
        for picks, low, n in zip((xs, ys, zs), box.lower, box.shape, strict=True):
            mine = (picks >= low) & (picks < low + n)
            where.append(np.flatnonzero(mine))
            local_index.append(picks[mine] - low)
        return np.ix_(*reversed(where)), np.ix_(*reversed(local_index))

    def fetch(xs, ys, zs):
        into, take = local(xs, ys, zs)
        r = np.zeros((len(zs), len(ys), len(xs)))
        v = np.zeros((u.shape[0], len(zs), len(ys), len(xs)))
        r[into] = rho[take]
        v[(slice(None), *into)] = u[(slice(None), *take)]
        total = solver.reduce(np.concatenate([r[None], v]))
        return total[0], total[1:]

    def kind_fetch(xs, ys, zs):
        into, take = local(xs, ys, zs)
        k = np.zeros((len(zs), len(ys), len(xs)))
        k[into] = kind[take]
        return solver.reduce(k).astype(np.uint8)
    return fetch, kind_fetch


def _device_like(array, host: np.ndarray):
    """``host`` on the device of ``array``."""
    from thelma_py.backend import array_module

    return array_module(array).asarray(host)


_COPY_STREAMS: dict = {}


def _copy_stream(cupy):
    """The stream of the image copies on the current device (one, made at first use)."""
    device = cupy.cuda.Device().id
    if device not in _COPY_STREAMS:
        _COPY_STREAMS[device] = cupy.cuda.Stream(non_blocking=True)
    return _COPY_STREAMS[device]


def _start_copy(pixels, lo, hi):
    """Start moving rendered ``pixels`` and the range ``lo``, ``hi`` (floats or 0-d device
    arrays) to the host; returns a callable that waits for them: (host pixels, lo, hi).

    CuPy: asynchronous copies into page-locked buffers on a stream of their own, which waits
    for the rendering on the current stream (the steps after it do not wait for the copy),
    and an event, so the thread that steps the flow never waits for the device (the writer
    thread does). NumPy (and the host stand-in of the tests): the copy is made at once."""
    if type(pixels).__module__.split(".")[0] != "cupy":
        host, bounds = host_copy(pixels), (float(host_copy(lo)), float(host_copy(hi)))
        return lambda: (host, *bounds)
    import cupy
    import cupyx

    on_device = [isinstance(v, cupy.ndarray) for v in (lo, hi)]
    bounds_device = cupy.stack([cupy.asarray(v, dtype=cupy.float64).reshape(())
                                for v in (lo, hi)]) if any(on_device) else None
    rendered = cupy.cuda.get_current_stream().record()  # after the last array made here
    stream = _copy_stream(cupy)
    stream.wait_event(rendered)
    host = cupyx.empty_pinned(pixels.shape, pixels.dtype)
    pixels.get(stream=stream, out=host, blocking=False)
    bounds = cupyx.empty_pinned((2,), np.float64)
    if bounds_device is not None:
        bounds_device.get(stream=stream, out=bounds, blocking=False)
    else:
        bounds[:] = (lo, hi)
    done = stream.record()
    kept = [pixels, bounds_device]  # alive (not reused by the pool) until the copies have run

    def result():
        done.synchronize()
        kept.clear()
        return host, float(bounds[0]), float(bounds[1])
    return result

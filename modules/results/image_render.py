"""Pixels from a scalar plane or volume, on the array's device (NumPy or CuPy, one code).

:func:`slice_pixels` maps a 2D field to an RGB image: nearest node per pixel, aspect kept (the
plane is centred on a dark background), y (or z) upwards, solid nodes and open-boundary nodes
in two fixed greys. :func:`colour_bar` and labels are drawn on the host afterwards
(:mod:`.bitmap_font`), on the small image only.
"""

from __future__ import annotations

import numpy as np

from thelma_py.backend import array_module
from thelma_py.modules.results.bitmap_font import draw_text
from thelma_py.modules.results.image_fields import BOUNDARY_CODES, SOLID_CODES

BACKGROUND = (24, 24, 28)
SOLID_COLOUR = (96, 96, 96)
BOUNDARY_COLOUR = (224, 224, 224)
BAR_FRACTION = 0.12
"""Share of the image width kept for the colour bar and its numbers, when there is one."""


def value_range(values, mask, fixed: tuple[float, float] | None, symmetric: bool,
                floor=1e-12, relative: bool = False):
    """``fixed``, else min..max of the finite ``values`` where ``mask`` (symmetric about 0 if
    asked): see :func:`finish_range`. NumPy arrays give floats; device arrays give 0-d device
    arrays, computed without waiting for the device (the writer thread reads them with the
    pixels)."""
    if fixed is not None:
        return float(fixed[0]), float(fixed[1])
    xp = array_module(values)
    ok = xp.isfinite(values) if mask is None else (xp.asarray(mask) & xp.isfinite(values))
    lo = xp.where(ok, values, xp.inf).min().astype(xp.float64)
    hi = xp.where(ok, values, -xp.inf).max().astype(xp.float64)
    return finish_range(xp, lo, hi, ~ok.any(), symmetric, floor, relative)


def finish_range(xp, lo, hi, empty, symmetric: bool, floor=1e-12, relative: bool = False):
    """The colour range from a field's extrema ``lo``, ``hi`` (0-d arrays) and whether nothing
    qualified (``empty``: 0..1): symmetric about 0 if asked, and at least ``floor`` wide
    (``relative``: ``floor`` times the larger magnitude, at least 1e-12) centred on the field,
    so the rounding noise of a flat field is not stretched over the whole colour map. Floats
    with NumPy, 0-d device arrays otherwise."""
    lo, hi = xp.where(empty, 0.0, lo), xp.where(empty, 1.0, hi)  # no inf arithmetic below
    if symmetric:
        hi = xp.maximum(xp.abs(lo), xp.abs(hi))
        lo = -hi
    if relative:
        floor = xp.maximum(floor * xp.maximum(xp.abs(lo), xp.abs(hi)), 1e-12)
    middle, narrow = 0.5 * (lo + hi), (hi - lo) < floor
    lo = xp.where(narrow, middle - 0.5 * floor, lo)
    hi = xp.where(narrow, middle + 0.5 * floor, hi)
    lo, hi = xp.where(empty, 0.0, lo), xp.where(empty, 1.0, hi)
    if xp is np:
        return float(lo), float(hi)
    return lo, hi


def colour_indices(values, lo: float, hi: float):
    """Colour-table rows 0..255 of ``values`` on the range lo..hi (clipped; NaN -> 0)."""
    xp = array_module(values)
    scaled = (xp.asarray(values, dtype=xp.float64) - lo) * (255.0 / (hi - lo))
    scaled = xp.where(xp.isfinite(scaled), scaled, 0.0)
    return xp.clip(xp.floor(scaled + 0.5), 0, 255).astype(xp.uint8)


def field_box(plane_shape: tuple[int, int], width: int, height: int
              ) -> tuple[float, int, int]:
    """Pixels per node and the (left, top) corner of the plane inside a ``width`` × ``height``
    area, aspect kept and centred."""
    rows, cols = plane_shape
    scale = min(width / cols, height / rows)
    return scale, int((width - cols * scale) // 2), int((height - rows * scale) // 2)


def pixel_node(row: int, column: int, plane_shape: tuple[int, int], width: int, height: int
               ) -> tuple[int, int] | None:
    """The (plane row, plane column) that pixel (row, column) shows, or None (background);
    plane row 0 is drawn at the bottom."""
    scale, left, top = field_box(plane_shape, width, height)
    i = int(np.floor((column - left + 0.5) / scale))
    j = int(np.floor((row - top + 0.5) / scale))
    if not (0 <= i < plane_shape[1] and 0 <= j < plane_shape[0]):
        return None
    return plane_shape[0] - 1 - j, i


_LAYOUT: dict = {}
"""Device arrays that depend only on the image layout (pixel-to-node maps, kind palette,
colour tables), made once: the steps are not held up by host-to-device copies."""


def _cached(key, make):
    if key not in _LAYOUT:
        if len(_LAYOUT) > 32:
            _LAYOUT.clear()
        _LAYOUT[key] = make()
    return _LAYOUT[key]


def _pixel_map(xp, rows: int, cols: int, width: int, height: int):
    """(node row per pixel row, node column per pixel column, inside mask) on ``xp``."""
    scale, left, top = field_box((rows, cols), width, height)
    x = np.floor((np.arange(width) - left + 0.5) / scale).astype(np.int64)
    y = np.floor((np.arange(height) - top + 0.5) / scale).astype(np.int64)
    inside = ((y >= 0) & (y < rows))[:, None] & ((x >= 0) & (x < cols))[None, :]
    x, y = np.clip(x, 0, cols - 1), rows - 1 - np.clip(y, 0, rows - 1)
    return xp.asarray(y[:, None]), xp.asarray(x[None, :]), xp.asarray(inside[..., None])


def _kind_palette(xp):
    """kind -> (r, g, b, drawn over the field)."""
    palette = np.zeros((256, 4), dtype=np.uint8)
    palette[list(SOLID_CODES)] = [*SOLID_COLOUR, 1]
    palette[list(BOUNDARY_CODES)] = [*BOUNDARY_COLOUR, 1]
    return xp.asarray(palette)


def device_table(xp, table: np.ndarray):
    """``table`` (256, 3) uint8 on the device of ``xp`` (cached)."""
    table = np.asarray(table)
    return _cached((xp.__name__, "table", table.tobytes()), lambda: xp.asarray(table))


def slice_pixels(values, kind, lo, hi, table: np.ndarray, width: int, height: int):
    """RGB uint8 (height, width, 3) on the device of ``values`` (2D, rows = up axis) with the
    node kinds ``kind`` (same shape, host or device) drawn over it; ``lo``, ``hi`` floats or
    0-d arrays on that device."""
    xp = array_module(values)
    rows, cols = values.shape
    y, x, inside = _cached((xp.__name__, "map", rows, cols, width, height),
                           lambda: _pixel_map(xp, rows, cols, width, height))
    colours = device_table(xp, table)[colour_indices(values, lo, hi)]
    over = _cached((xp.__name__, "palette"), lambda: _kind_palette(xp))[xp.asarray(kind)]
    colours = xp.where(over[..., 3:] > 0, over[..., :3], colours)
    background = _cached((xp.__name__, "background"),
                         lambda: xp.asarray(BACKGROUND, dtype=xp.uint8))
    return xp.where(inside, colours[y, x], background)


def number_text(value: float) -> str:
    """A short label for a colour-bar number."""
    text = f"{value:.3g}"
    return text.replace("e-0", "e-").replace("e+0", "e")


def colour_bar(image: np.ndarray, lo: float, hi: float, table: np.ndarray, title: str) -> None:
    """Draw a vertical colour bar with its title and three numbers into the right part of the
    host ``image`` (the :data:`BAR_FRACTION` kept free by the layout)."""
    height, width = image.shape[:2]
    panel = max(int(width * BAR_FRACTION), 1)
    scale = max(1, height // 360)
    bar_w = max(panel // 8, 2)
    top, bottom = height // 6, height - height // 6
    left = width - panel + max(panel // 16, 1)
    if bottom - top < 2:
        return
    levels = np.linspace(255, 0, bottom - top).round().astype(np.int64)
    image[top:bottom, left:left + bar_w] = table[levels][:, None, :]
    text_left = left + bar_w + 2 * scale
    for fraction, value in ((0.0, hi), (0.5, 0.5 * (lo + hi)), (1.0, lo)):
        row = int(top + fraction * (bottom - top - 1)) - 5 * scale // 2
        draw_text(image, number_text(value), row, text_left, scale)
    draw_text(image, title, max(top - 12 * scale, 0), left, scale)

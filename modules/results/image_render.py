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
                floor: float = 1e-12) -> tuple[float, float]:
    """``fixed``, else min..max of ``values`` where ``mask`` (symmetric about 0 if asked),
    at least ``floor`` wide (centred on the field): rounding noise of a flat field is not
    stretched over the whole colour map."""
    if fixed is not None:
        return float(fixed[0]), float(fixed[1])
    xp = array_module(values)
    chosen = values[mask] if mask is not None else values.reshape(-1)
    chosen = chosen[xp.isfinite(chosen)]
    if chosen.size == 0:
        return 0.0, 1.0
    lo, hi = float(chosen.min()), float(chosen.max())
    if symmetric:
        lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
    if hi - lo < floor:
        middle = 0.5 * (lo + hi)
        lo, hi = middle - 0.5 * floor, middle + 0.5 * floor
    return lo, hi


def colour_indices(values, lo: float, hi: float):
    """Colour-table rows 0..255 of ``values`` on the range lo..hi (clipped; NaN -> 0)."""
    xp = array_module(values)
    scaled = (values - lo) * (255.0 / (hi - lo))
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


def slice_pixels(values, kind, lo: float, hi: float, table: np.ndarray, width: int,
                 height: int):
    """RGB uint8 (height, width, 3) on the device of ``values`` (2D, rows = up axis) with the
    node kinds ``kind`` (same shape, host or device) drawn over it."""
    xp = array_module(values)
    rows, cols = values.shape
    scale, left, top = field_box((rows, cols), width, height)
    x = xp.floor((xp.arange(width) - left + 0.5) / scale).astype(xp.int64)
    y = xp.floor((xp.arange(height) - top + 0.5) / scale).astype(xp.int64)
    inside = ((y >= 0) & (y < rows))[:, None] & ((x >= 0) & (x < cols))[None, :]
    x, y = xp.clip(x, 0, cols - 1), rows - 1 - xp.clip(y, 0, rows - 1)
    colours = xp.asarray(table)[colour_indices(values, lo, hi)]
    kind = xp.asarray(kind)
    palette = xp.zeros((256, 4), dtype=xp.uint8)  # kind -> (r, g, b, drawn over the field)
    palette[xp.asarray(SOLID_CODES)] = xp.asarray([*SOLID_COLOUR, 1], dtype=xp.uint8)
    palette[xp.asarray(BOUNDARY_CODES)] = xp.asarray([*BOUNDARY_COLOUR, 1], dtype=xp.uint8)
    over = palette[kind]
    colours = xp.where(over[..., 3:] > 0, over[..., :3], colours)
    image = colours[y[:, None], x[None, :]]
    return xp.where(inside[..., None], image, xp.asarray(BACKGROUND, dtype=xp.uint8))


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

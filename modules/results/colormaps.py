"""Colour maps as 256-entry uint8 tables, built from embedded control points.

The control points are 33 evenly spaced samples (sRGB, 8 bit) of published maps, expanded by
linear interpolation (within 4/255 of the originals):

- ``viridis`` (default; perceptually uniform): S. van der Walt and N. Smith, as shipped in
  matplotlib, released to the public domain (CC0);
- ``coolwarm`` (diverging, for signed fields): K. Moreland, "Diverging Color Maps for
  Scientific Visualization" (ISVC 2009), table as shipped in matplotlib (matplotlib licence,
  BSD-style; the map itself is given in the paper for free use);
- ``gray``: black to white.
"""

from __future__ import annotations

import numpy as np

_POINTS = {
    "viridis": "440154 470d60 48186a 482374 472d7b 453781 424086 3e4989 3b528b 375b8d 33638d "
               "2f6b8e 2c728e 297a8e 26828e 23898e 21918c 1f988b 1fa088 22a785 28ae80 32b67a "
               "3fbc73 4ec36b 5ec962 70cf57 84d44b 98d83e addc30 c2df23 d8e219 ece51b fde725",
    "coolwarm": "3b4cc0 445acc 4e68d8 5875e1 6282ea 6c8ff1 779af7 82a6fb 8db0fe 98b9ff a3c2fe "
                "aec9fc b9d0f9 c3d5f4 ccd9ed d5dbe5 dddcdc e5d8d1 ecd3c5 f1ccb8 f5c4ac f7ba9f "
                "f7b093 f6a586 f4987a f08b6e eb7d62 e46e56 dd5f4b d44e41 ca3b37 be242e b40426",
    "gray": "000000 ffffff",
}
COLORMAPS = tuple(_POINTS)
"""Names accepted by :func:`colormap`."""


def colormap(name: str) -> np.ndarray:
    """The (256, 3) uint8 table of ``name`` (one of :data:`COLORMAPS`)."""
    if name not in _POINTS:
        raise ValueError(f"unknown colour map {name!r}; known: {', '.join(COLORMAPS)}")
    points = np.array([[int(code[i:i + 2], 16) for i in (0, 2, 4)]
                       for code in _POINTS[name].split()], dtype=np.float64)
    where = np.linspace(0.0, 1.0, len(points))
    levels = np.linspace(0.0, 1.0, 256)
    table = np.stack([np.interp(levels, where, points[:, k]) for k in range(3)], axis=1)
    return np.round(table).astype(np.uint8)

"""PNG files from uint8 RGB(A) arrays, with zlib and struct only (no imaging package).

Rows are stored with filter type 0 (none), which is what a reader of these tests expects and
what keeps encoding simple; ``level`` trades file size for writing time (level 1 is several
times faster than 6 on rendered images and about a third larger). Format: PNG specification,
2nd edition (W3C, 2003), sections 5 (datastream), 11.2 (IHDR, IDAT, IEND).
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

from thelma_py.files import atomic_path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPES = {3: 2, 4: 6}  # channels -> PNG colour type (truecolour, with alpha)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(pixels: np.ndarray, level: int = 1) -> bytes:
    """The PNG bytes of ``pixels``, uint8 of shape (H, W, 3) or (H, W, 4), row 0 on top."""
    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in _COLOUR_TYPES:
        raise ValueError(f"PNG pixels must be uint8 (H, W, 3 or 4), got {pixels.dtype} "
                         f"{pixels.shape}")
    height, width, channels = pixels.shape
    if height < 1 or width < 1:
        raise ValueError(f"PNG image must have at least one pixel, got {width}x{height}")
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # filter byte 0 per row
    rows[:, 1:] = pixels.reshape(height, -1)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level)) + _chunk(b"IEND", b""))


def write_png(target: str | os.PathLike, pixels: np.ndarray, level: int = 1) -> None:
    """Write ``pixels`` to ``target`` atomically (a reader never sees a partial file)."""
    data = encode_png(pixels, level)
    with atomic_path(target) as temporary:
        temporary.write_bytes(data)


def read_png(source: str | os.PathLike) -> np.ndarray:
    """Pixels of a PNG written by :func:`write_png` (8-bit RGB/RGBA, filter 0 rows only)."""
    data = open(source, "rb").read()  # noqa: SIM115 (small file, read at once)
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{source}: not a PNG file")
    position, idat, header = len(SIGNATURE), b"", None
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        if zlib.crc32(kind + body) & 0xFFFFFFFF != struct.unpack(
                ">I", data[position + 8 + length:position + 12 + length])[0]:
            raise ValueError(f"{source}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour = header[:4]
    channels = {v: k for k, v in _COLOUR_TYPES.items()}.get(colour)
    if depth != 8 or channels is None:
        raise ValueError(f"{source}: only 8-bit RGB/RGBA PNG files are read here")
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, -1)
    if rows[:, 0].any():
        raise ValueError(f"{source}: only rows without a filter are read here")
    return rows[:, 1:].reshape(height, width, channels)

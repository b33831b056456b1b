"""What a decomposed-run script compares: one rank's fields against the same window of the
single-domain run (imported by the scripts in this folder, which run as files under mpiexec)."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np

STORED = ("f", "j")
"""State arrays compared on fluid nodes: f (LBM), f* and the momentum j (two-step LW-ACM)."""


def stored(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The :data:`STORED` arrays of an engine state (none for the single-step LW-ACM)."""
    return {key: state[key] for key in STORED if key in state}


def piece_checks(rho, u, arrays, lower, shape, rho_part, u_part, arrays_part, fluid, piece,
                 rho_piece) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (expected from the whole domain, got from the rank): ρ and u of the owned box,
    ρ of the output piece (its seam layer included), and the :func:`stored` state arrays
    (``arrays`` of the whole domain, ``arrays_part`` of the rank) on fluid nodes."""
    window = tuple(slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(shape),
                                                       strict=True))
    seam = tuple(slice(lo, lo + n) for lo, n in zip(reversed(piece[0]), reversed(piece[1]),
                                                     strict=True))
    checks = {"rho": (rho[window], rho_part), "u": (u[(slice(None), *window)], u_part),
              "rho of the output piece": (rho[seam], rho_piece)}
    for key, value in arrays.items():
        checks[key] = (value[(slice(None), *window)][:, fluid], arrays_part[key][:, fluid])
    return checks


def read_builtin_vti(path) -> tuple[tuple[int, ...], dict[str, np.ndarray]]:
    """A ``.vti`` of the built-in writer (appended raw, UInt64 headers, zlib or none) read with
    NumPy alone, for machines without the vtk package: (extent, name -> array in node order
    (z, y, x[, components]))."""
    data = Path(path).read_bytes()
    head, _, body = data.partition(b'<AppendedData encoding="raw">')
    body = body[body.index(b"_") + 1:]
    text = head.decode()
    extent = tuple(int(v) for v in re.search(r'Piece Extent="([^"]+)"', text).group(1).split())
    shape = tuple(extent[2 * a + 1] - extent[2 * a] + 1 for a in (2, 1, 0))
    types = {"Float32": np.float32, "Float64": np.float64, "UInt8": np.uint8, "Int32": np.int32}
    zlib_blocks = "vtkZLibDataCompressor" in text
    arrays = {}
    for kind, name, components, offset in re.findall(
            r'type="(\w+)" Name="([^"]+)" NumberOfComponents="(\d+)" format="appended" '
            r'offset="(\d+)"', text):
        at = int(offset)
        if zlib_blocks:
            count = int(np.frombuffer(body, "<u8", 1, at)[0])
            sizes = [int(n) for n in np.frombuffer(body, "<u8", count, at + 24)]
            at += 8 * (3 + count)
            chunks = []
            for n in sizes:
                chunks.append(zlib.decompress(body[at:at + n]))
                at += n
            raw = b"".join(chunks)
        else:
            size = int(np.frombuffer(body, "<u8", 1, at)[0])
            raw = body[at + 8:at + 8 + size]
        array = np.frombuffer(raw, types[kind])
        arrays[name] = array.reshape(shape + ((int(components),) if components != "1" else ()))
    return extent, arrays


def read_with_vtk(path) -> tuple[object, dict[str, np.ndarray]]:
    """(image, name -> array as vtk stores it: (N,) or (N, C), x fastest) of a ``.vti`` or a
    ``.pvti``, read by the vtk package's own readers (what ParaView sees)."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLPImageDataReader

    reader = vtkXMLPImageDataReader() if str(path).endswith(".pvti") else vtkXMLImageDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    image = reader.GetOutput()
    data = image.GetPointData()
    return image, {data.GetArrayName(k): vtk_to_numpy(data.GetArray(k))
                   for k in range(data.GetNumberOfArrays())}

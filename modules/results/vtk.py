"""VTK output: one ``.vti`` (XML ImageData) file per output step plus a ``.pvd`` time series.

Open ``<path>/<prefix>.pvd`` in ParaView to get every written step as one animated data set.
Files are zlib-compressed raw binary (appended data). Every file, the ``.pvd`` included, is
written under a temporary name and renamed into place, so a reader never sees a partial file.

The ``vtk`` package is imported only when a file is written: it is not needed (and often not
installed) on GPU machines that only run benchmarks.
"""

from __future__ import annotations

import os
from pathlib import Path
from xml.sax.saxutils import quoteattr

import attrs
import numpy as np

from thelma_py.modules.results.files import atomic_path, atomic_write_text, ensure_writable_dir
from thelma_py.registry import register
from thelma_py.schedule import Every, as_schedule

FIELDS = ("rho", "u", "kind")
FILE_PRECISIONS = ("float32", "float64")


def _check_fields(instance, attribute, value: tuple[str, ...]) -> None:
    unknown = [name for name in value if name not in FIELDS]
    if unknown or not value:
        raise ValueError(f"vtk fields must be a non-empty subset of {FIELDS}, got {value!r}")


def _check_prefix(instance, attribute, value: str) -> None:
    if not value or os.sep in value or (os.altsep and os.altsep in value):
        raise ValueError(f"prefix must be a plain file name stem, got {value!r}")


def _point_arrays(
    fields: dict[str, np.ndarray], names: tuple[str, ...], dtype: np.dtype
) -> dict[str, np.ndarray]:
    """Arrays in VTK point order: (N,) scalars or (N, 3) vectors, x fastest.

    ``fields`` as from :meth:`Solver.fields`: rho (Nz, Ny, Nx) or (Ny, Nx); u (D, ...); kind.
    2D velocities get a zero z component so ParaView treats u as a vector.
    """
    out = {}
    for name in names:
        array = np.asarray(fields[name])
        if name == "u":
            d = array.shape[0]
            padded = np.zeros((3, *array.shape[1:]), dtype=dtype)
            padded[:d] = array
            out[name] = np.ascontiguousarray(padded.reshape(3, -1).T)
        elif name == "kind":
            out[name] = np.ascontiguousarray(array.reshape(-1), dtype=np.uint8)
        else:
            out[name] = np.ascontiguousarray(array.reshape(-1), dtype=dtype)
    return out


def write_vti(
    target: str | os.PathLike,
    fields: dict[str, np.ndarray],
    origin: tuple[int, ...] = (0, 0, 0),
    names: tuple[str, ...] = FIELDS,
    precision: str = "float32",
) -> None:
    """Write host ``fields`` (see :func:`_point_arrays`) as a compressed ``.vti``, atomically.

    Node (i, j[, k]) lies at ``origin + (i, j, k)`` (spacing 1, lattice units).
    """
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    node_shape = np.asarray(fields["rho"]).shape  # (Nz, Ny, Nx) or (Ny, Nx)
    dims = tuple(reversed(node_shape)) + (1,) * (3 - len(node_shape))
    image = vtkImageData()
    image.SetDimensions(*dims)
    image.SetOrigin(*(tuple(float(v) for v in origin) + (0.0,) * (3 - len(origin))))
    image.SetSpacing(1.0, 1.0, 1.0)
    arrays = _point_arrays(fields, names, np.dtype(precision))
    for name, array in arrays.items():
        vtk_array = numpy_to_vtk(array, deep=True)
        vtk_array.SetName(name)
        image.GetPointData().AddArray(vtk_array)
    if "rho" in arrays:
        image.GetPointData().SetActiveScalars("rho")
    if "u" in arrays:
        image.GetPointData().SetActiveVectors("u")

    writer = vtkXMLImageDataWriter()
    writer.SetInputData(image)
    writer.SetCompressorTypeToZLib()
    writer.SetDataModeToAppended()
    writer.EncodeAppendedDataOff()
    with atomic_path(target) as temporary:
        writer.SetFileName(str(temporary))
        if writer.Write() != 1 or writer.GetErrorCode() != 0:
            raise OSError(
                f"VTK could not write '{target}' (VTK error code {writer.GetErrorCode()})"
            )


def pvd_text(entries: list[tuple[int, str]]) -> str:
    """A ParaView collection file listing (timestep, file name) pairs."""
    rows = "".join(
        f'    <DataSet timestep={quoteattr(str(step))} group="" part="0" file={quoteattr(name)}/>\n'
        for step, name in entries
    )
    return (
        '<?xml version="1.0"?>\n'
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        f"  <Collection>\n{rows}  </Collection>\n</VTKFile>\n"
    )


@register("results", "vtk")
@attrs.define(kw_only=True)
class VtkWriter:
    """ParaView output: <path>/<prefix>_<step>.vti every N steps, indexed by <prefix>.pvd."""

    path: Path = attrs.field(converter=Path)
    """Output directory (created by :meth:`start`)."""
    prefix: str = attrs.field(default="fields", validator=_check_prefix)
    """File name stem of the ``.vti`` files and of the ``.pvd`` index."""
    schedule: Every = attrs.field(
        alias="every",
        default=1000,
        converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to write: every N steps (an int) or a :class:`~thelma_py.schedule.Every`."""
    fields: tuple[str, ...] = attrs.field(default=FIELDS, converter=tuple, validator=_check_fields)
    """Which of rho, u (3-vector), kind (uint8 node kind) to write."""
    precision: str = attrs.field(default="float32", validator=attrs.validators.in_(FILE_PRECISIONS))
    """Floating-point type in the files (independent of the run's precision)."""
    written: list[tuple[int, str]] = attrs.field(factory=list, init=False, repr=False)
    """(time step, file name) of every file written so far, in order."""
    _ready: bool = attrs.field(default=False, init=False, repr=False)

    @property
    def pvd_path(self) -> Path:
        return self.path / f"{self.prefix}.pvd"

    def start(self, solver) -> None:
        """Create the output directory and check that it is writable."""
        ensure_writable_dir(self.path, who="vtk results")
        self._ready = True

    def __call__(self, solver) -> None:
        if not self._ready:
            self.start(solver)
        step = int(solver.time_step)
        name = f"{self.prefix}_{step:08d}.vti"
        write_vti(
            self.path / name,
            solver.fields(),
            origin=tuple(solver.tags.lower),
            names=self.fields,
            precision=self.precision,
        )
        self.written = [entry for entry in self.written if entry[1] != name] + [(step, name)]
        atomic_write_text(self.pvd_path, pvd_text(self.written))

    def finish(self, solver) -> None:
        """Rewrite the ``.pvd`` index with every file written (also when there were none)."""
        if not self._ready:
            self.start(solver)
        atomic_write_text(self.pvd_path, pvd_text(self.written))

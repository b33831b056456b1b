"""VTK output: one ``.vti`` (XML ImageData) file per output step plus a ``.pvd`` time series.

Open ``<path>/<prefix>.pvd`` in ParaView to get every written step as one animated data set.
Files are zlib-compressed (or raw) binary in appended data. Every file, the ``.pvd`` included, is
written under a temporary name and renamed into place, so a reader never sees a partial file.

Files are written by :mod:`.vtk_xml` (compression on all cores) unless ``writer="vtk"`` asks
for the vtk package, which is then imported only when a file is written: it is not needed (and
often not installed) on GPU machines.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from xml.sax.saxutils import quoteattr

import attrs
import numpy as np

from thelma_py.files import atomic_path, atomic_write_text, ensure_writable_dir
from thelma_py.modules.results import vtk_xml
from thelma_py.modules.results.background import BackgroundWriter
from thelma_py.modules.results.derived import DERIVED
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule

FIELDS = ("rho", "p", "u", "speed", "vorticity", "q_criterion", "kind")
"""Fields a VTK file can hold: rho, p = (ρ − 1)/3, u, speed |u|, vorticity (2D scalar, 3D
vector), q_criterion (3D), kind (uint8 node kind); see :mod:`.derived`."""
DEFAULT_FIELDS = ("rho", "u", "kind")
FILE_PRECISIONS = ("float32", "float64")
WRITERS = ("builtin", "vtk")
WRITE_THREADS = 2
"""Files written at once by a background writer (each also compresses on all cores)."""
QUEUE_DEPTH = 4
"""Files queued or being written at most; a run that gets further ahead waits."""


def _check_fields(instance, attribute, value: tuple[str, ...]) -> None:
    unknown = [name for name in value if name not in FIELDS]
    if unknown or not value:
        raise ValueError(f"vtk fields must be a non-empty subset of {FIELDS}, got {value!r}"
                         + (f" ({unknown} unknown)" if unknown else ""))
    if len(set(value)) != len(value):
        raise ValueError(f"vtk fields are listed twice in {value!r}")


def check_prefix(instance, attribute, value: str) -> None:
    """attrs validator of a file name stem (no directory separator, not empty)."""
    if not value or os.sep in value or (os.altsep and os.altsep in value):
        raise ValueError(f"prefix must be a plain file name stem, got {value!r}")


def _crop(value) -> tuple[tuple[int, int], ...] | None:
    if value is None:
        return None
    try:
        box = tuple((int(lo), int(hi)) for lo, hi in value)
    except (TypeError, ValueError):
        raise ValueError(f"crop must be ((x0, x1), (y0, y1)[, (z0, z1)]) node ranges, "
                         f"got {value!r}") from None
    if len(box) not in (2, 3) or any(lo < 0 or hi <= lo for lo, hi in box):
        raise ValueError(f"crop must give 2 or 3 ranges (lo, hi) with 0 <= lo < hi, got {value!r}")
    return box


def _check_subsample(instance, attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"subsample must be a positive integer stride (1 keeps every node), "
                         f"got {value!r}")


def host_fields(
    fields: dict[str, np.ndarray],
    names: tuple[str, ...],
    periodic: tuple[bool, ...] | None = None,
    crop: tuple[tuple[int, int], ...] | None = None,
    stride: int = 1,
) -> dict[str, np.ndarray]:
    """The ``names`` fields from host rho, u, kind: derived ones computed on the whole domain,
    then all cut to ``crop`` (local (lo, hi) per axis x, y[, z]) and thinned by ``stride``."""
    out = {}
    for name in names:
        if name in fields:
            out[name] = np.asarray(fields[name])
        elif name == "q_criterion" and np.asarray(fields["u"]).shape[0] != 3:
            raise ValueError("q_criterion is defined for 3D flows; remove it from the vtk fields")
        else:
            out[name] = DERIVED[name](fields["rho"], fields["u"], periodic)
    node_shape = np.asarray(fields["rho"]).shape
    if crop is not None and len(crop) != len(node_shape):
        raise ValueError(f"crop has {len(crop)} ranges for a {len(node_shape)}D domain")
    box = crop or tuple((0, n) for n in reversed(node_shape))
    for (lo, hi), n, axis in zip(box, reversed(node_shape), "xyz", strict=False):
        if hi > n:
            raise ValueError(f"crop {axis} range ({lo}, {hi}) exceeds the {n} nodes of the domain")
    window = tuple(slice(lo, hi, stride) for lo, hi in reversed(box))
    return {name: array[(Ellipsis, *window)] for name, array in out.items()}


SCALARS = ("rho", "p", "speed", "q_criterion", "kind")


def node_shape_of(fields: dict[str, np.ndarray]) -> tuple[int, ...]:
    """Node array shape (Nz, Ny, Nx) or (Ny, Nx) of a dict of scalar and vector fields."""
    for name in SCALARS:
        if name in fields:
            return np.asarray(fields[name]).shape
    vector = np.asarray(fields["u"] if "u" in fields else fields["vorticity"])
    if "u" in fields or vector.ndim == 4:
        return vector.shape[1:]
    return vector.shape  # 2D vorticity is a scalar


def _point_arrays(
    fields: dict[str, np.ndarray], names: tuple[str, ...], dtype: np.dtype,
    node_ndim: int | None = None,
) -> dict[str, np.ndarray]:
    """Arrays in VTK point order: (N,) scalars, (N, 3) vectors or (N, k) tensors, x fastest.

    ``fields``: scalars of node shape (Nz, Ny, Nx) or (Ny, Nx); vectors (D, ...); tensors
    (k, ...) with k > 3 components, written as they are; kind. 2D vectors get a zero z
    component so ParaView treats them as vectors.
    """
    node_ndim = node_ndim or len(node_shape_of(fields))
    out = {}
    for name in names:
        array = np.asarray(fields[name])
        if name == "kind":
            out[name] = np.ascontiguousarray(array.reshape(-1), dtype=np.uint8)
        elif array.ndim == node_ndim + 1 and array.shape[0] > 3:  # a tensor (k, *S)
            out[name] = np.ascontiguousarray(array.reshape(array.shape[0], -1).T, dtype=dtype)
        elif array.ndim == node_ndim + 1 and _interleaved(array, dtype):
            out[name] = np.moveaxis(array, 0, -1).reshape(-1, 3)  # no copy
        elif array.ndim == node_ndim + 1:  # a vector (D, *S)
            d = array.shape[0]
            padded = np.zeros((3, *array.shape[1:]), dtype=dtype)
            padded[:d] = array
            out[name] = np.ascontiguousarray(padded.reshape(3, -1).T)
        else:
            out[name] = np.ascontiguousarray(array.reshape(-1), dtype=dtype)
    return out


def _interleaved(vector: np.ndarray, dtype: np.dtype) -> bool:
    """Is a (3, *S) vector a view of (*S, 3) memory of the file's type (see HostCopier)?"""
    return (vector.shape[0] == 3 and vector.dtype == dtype
            and np.moveaxis(vector, 0, -1).flags.c_contiguous)


def write_vti(
    target: str | os.PathLike,
    fields: dict[str, np.ndarray],
    origin: tuple[int, ...] = (0, 0, 0),
    names: tuple[str, ...] = DEFAULT_FIELDS,
    precision: str = "float32",
    spacing: int = 1,
    start: tuple[int, ...] | None = None,
    writer: str = "builtin",
    compression: str = "zlib",
    node_shape: tuple[int, ...] | None = None,
) -> dict[str, np.ndarray]:
    """Write host ``fields`` (see :func:`_point_arrays`) as a ``.vti``, atomically.

    Node (i, j[, k]) lies at ``origin + spacing * (i, j, k)`` (lattice units). With ``start``
    (a piece of a parallel file), the image extent begins at that global node index instead.
    ``writer``: "builtin" (:mod:`.vtk_xml`, threaded compression) or "vtk" (the vtk package's
    ``vtkXMLImageDataWriter``, always zlib). Returns the arrays as written (names, dtypes and
    components, for a ``.pvti``). ``node_shape`` (Nz, Ny, Nx) or (Ny, Nx): the node array
    shape, for fields other than the standard ones (default: read from rho, u or another of
    :data:`SCALARS`).
    """
    node_shape = tuple(node_shape or node_shape_of(fields))
    dims = tuple(reversed(node_shape)) + (1,) * (3 - len(node_shape))
    arrays = _point_arrays(fields, names, np.dtype(precision), len(node_shape))
    if writer == "builtin":
        first = tuple(start or ()) + (0,) * (3 - len(start or ()))
        with atomic_path(target) as temporary, open(temporary, "wb") as handle:
            vtk_xml.write_image(handle, arrays, dims, first,
                                tuple(float(v) for v in origin) + (0.0,) * (3 - len(origin)),
                                float(spacing), compression)
        return arrays
    _write_with_vtk(target, arrays, dims, origin, spacing, start)
    return arrays


def _write_with_vtk(target, arrays, dims, origin, spacing, start) -> None:
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    image = vtkImageData()
    if start is None:
        image.SetDimensions(*dims)
    else:
        first = tuple(start) + (0,) * (3 - len(start))
        image.SetExtent(*(v for a in range(3) for v in (first[a], first[a] + dims[a] - 1)))
    image.SetOrigin(*(tuple(float(v) for v in origin) + (0.0,) * (3 - len(origin))))
    image.SetSpacing(*(float(spacing),) * 3)
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
            raise _vtk_write_error(target, writer.GetErrorCode())


_VTK_TYPES = {"float32": "Float32", "float64": "Float64", "uint8": "UInt8", "int32": "Int32"}


def pvti_text(whole_shape: tuple[int, ...], pieces: list[tuple[tuple, tuple, str]],
              arrays: dict[str, np.ndarray]) -> str:
    """A parallel ImageData file: ``pieces`` are (lower, shape, file name) in node indices."""
    def extent(lower, shape):
        lower = tuple(lower) + (0,) * (3 - len(lower))
        shape = tuple(shape) + (1,) * (3 - len(shape))
        return " ".join(f"{lo} {lo + n - 1}" for lo, n in zip(lower, shape, strict=True))

    columns = "".join(
        f'      <PDataArray type="{_VTK_TYPES[str(a.dtype)]}" Name={quoteattr(name)} '
        f'NumberOfComponents="{1 if a.ndim == 1 else a.shape[1]}"/>\n'
        for name, a in arrays.items())
    rows = "".join(f"    <Piece Extent=\"{extent(lo, n)}\" Source={quoteattr(name)}/>\n"
                   for lo, n, name in pieces)
    whole = extent((0,) * len(whole_shape), whole_shape)
    active = (' Scalars="rho"' if "rho" in arrays else "") + (' Vectors="u"' if "u" in arrays
                                                               else "")
    return ('<?xml version="1.0"?>\n'
            '<VTKFile type="PImageData" version="0.1" byte_order="LittleEndian">\n'
            f'  <PImageData WholeExtent="{whole}" GhostLevel="0" Origin="0 0 0" '
            'Spacing="1 1 1">\n'
            f"    <PPointData{active}>\n{columns}    </PPointData>\n{rows}"
            "  </PImageData>\n</VTKFile>\n")


def write_rank_piece(directory: Path, stem: str, box, fields: dict[str, np.ndarray],
                     names: tuple[str, ...], precision: str, writer: str, compression: str,
                     node_shape: tuple[int, ...] | None = None) -> str | None:
    """A distributed run's file: this rank's output piece (``box``: its
    :class:`~thelma_py.parallel.RankBox`; ``fields`` on :meth:`RankBox.piece`) as
    ``<stem>_r<rank>.vti``, and on rank 0 ``<stem>.pvti``, which ParaView opens as one data set.
    Returns the ``.pvti`` name on rank 0, None on the others."""
    lower, _ = box.piece()
    written = write_vti(directory / f"{stem}_r{box.cart.rank:04d}.vti", fields, origin=(0, 0, 0),
                        names=names, precision=precision, start=lower, writer=writer,
                        compression=compression, node_shape=node_shape)
    if box.cart.rank != 0:
        return None
    pieces = []
    for rank in range(box.cart.size):
        piece_lower, piece_shape = box.piece(box.cart.Get_coords(rank))
        pieces.append((piece_lower, piece_shape, f"{stem}_r{rank:04d}.vti"))
    atomic_write_text(directory / f"{stem}.pvti",
                      pvti_text(box.decomposition.shape, pieces, written))
    return f"{stem}.pvti"


def _vtk_write_error(target, code: int) -> OSError:
    from vtkmodules.vtkCommonCore import vtkErrorCode

    text = vtkErrorCode.GetStringFromErrorCode(code)
    number = errno.ENOSPC if "DiskSpace" in text else errno.EIO
    return OSError(number, f"VTK could not write '{target}' ({text}); check free space and "
                   "permissions of the output directory")


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
class VtkWriter(Results):
    """ParaView output: <path>/<prefix>_<step>.vti every N steps, indexed by <prefix>.pvd."""

    supports_distributed = True  # one piece per rank and a .pvti (see _write_piece)

    path: Path = attrs.field(converter=Path)
    """Output directory (created by :meth:`start`)."""
    prefix: str = attrs.field(default="fields", validator=check_prefix)
    """File name stem of the ``.vti`` files and of the ``.pvd`` index."""
    schedule: Every = attrs.field(
        alias="every",
        default=1000,
        converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to write: every N steps (an int) or a :class:`~thelma_py.schedule.Every`."""
    fields: tuple[str, ...] = attrs.field(
        default=DEFAULT_FIELDS, converter=tuple, validator=_check_fields
    )
    """Which of :data:`FIELDS` to write."""
    precision: str = attrs.field(default="float32", validator=attrs.validators.in_(FILE_PRECISIONS))
    """Floating-point type in the files (independent of the run's precision)."""
    crop: tuple | None = attrs.field(default=None, converter=_crop)
    """Sub-box to write, ((x0, x1), (y0, y1)[, (z0, z1)]) in global node indices, hi exclusive."""
    subsample: int = attrs.field(default=1, validator=_check_subsample)
    """Write every ``subsample``-th node along each axis (the spacing in the file grows)."""
    writer: str = attrs.field(default="builtin", validator=attrs.validators.in_(WRITERS))
    """"builtin": this package's XML writer, compressing on all cores (fast enough for a GPU
    run); "vtk": the vtk package's writer (one core). Both write the same format."""
    compression: str = attrs.field(default="none",
                                   validator=attrs.validators.in_(vtk_xml.COMPRESSIONS))
    """"none" (default: keeps pace with a GPU) or "zlib" (LBM fields are noisy floats: about a
    quarter smaller, for several times the writing time); the vtk writer always compresses."""
    background: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Write from a host copy on worker threads (:data:`WRITE_THREADS`, at most
    :data:`QUEUE_DEPTH` files queued) while the run goes on."""
    written: list[tuple[int, str]] = attrs.field(factory=list, init=False, repr=False)
    """(time step, file name) of every file written so far, in order."""
    _ready: bool = attrs.field(default=False, init=False, repr=False)
    _worker: BackgroundWriter = attrs.field(
        factory=lambda: BackgroundWriter(depth=QUEUE_DEPTH, workers=WRITE_THREADS), init=False,
        repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    @property
    def pvd_path(self) -> Path:
        return self.path / f"{self.prefix}.pvd"

    def start(self, solver) -> None:
        """Create the output directory and check that it is writable; on a GPU, pin the host
        buffers of the snapshots that can be in flight at once."""
        ensure_writable_dir(self.path, who="vtk results")
        if self.background and solver.rank_box is None:
            solver.reserve_host_copies(QUEUE_DEPTH + 1)
        self._ready = True

    def _local_crop(self, solver) -> tuple[tuple[int, int], ...] | None:
        if self.crop is None:
            return None
        lower = tuple(solver.tags.lower)
        return tuple((lo - low, hi - low) for (lo, hi), low in zip(self.crop, lower, strict=False))

    def __call__(self, solver) -> None:
        if not self._ready:
            self.start(solver)
        self._worker.check()  # an error of an earlier write surfaces here
        step = int(solver.time_step)
        if solver.rank_box is not None:
            self._write_piece(solver, step)
            return
        # background: the worker waits for the copy (on a GPU it overlaps the next steps)
        raw = solver.fields_later() if self.background else solver.fields()
        job = (self.path / f"{self.prefix}_{step:08d}.vti", step, raw,
               solver.tags.periodic, self._local_crop(solver),
               tuple(solver.tags.lower))
        if self.background:
            self._worker.submit(self._write, *job)
        else:
            self._write(*job)

    def _write(self, target: Path, step: int, raw, periodic, crop, lower) -> None:
        """Write one file; ``raw`` is a dict of host fields or a function returning one (a
        :class:`~thelma_py.host_copy.PendingCopy`, released once the file is written)."""
        try:
            fields = raw() if callable(raw) else raw
            arrays = host_fields(fields, self.fields, periodic, crop, self.subsample)
            origin = tuple(low + (box[0] if crop else 0)
                           for low, box in zip(lower, crop or [(0, 0)] * len(lower), strict=True))
            write_vti(target, arrays, origin=origin, names=self.fields, precision=self.precision,
                      spacing=self.subsample, writer=self.writer, compression=self.compression)
        finally:
            fields = arrays = None  # nothing may point into the buffers handed back
            if hasattr(raw, "release"):
                raw.release()
        with self._lock:  # files may finish out of order: the index stays sorted by step
            self.written = sorted([entry for entry in self.written if entry[1] != target.name]
                                  + [(step, target.name)])
            atomic_write_text(self.pvd_path, pvd_text(self.written))

    def _write_piece(self, solver, step: int) -> None:
        """Distributed run: this rank's piece, and on rank 0 the .pvti and the .pvd."""
        if self.crop is not None or self.subsample != 1:
            raise ValueError("crop and subsample are not available in distributed runs yet")
        box = solver.rank_box
        host = solver.backend.to_host  # on a GPU, ρ and u are device arrays
        raw = dict(zip(("rho", "u", "kind"), map(host, solver.piece_fields()), strict=True))
        arrays = host_fields(raw, self.fields, None, None, 1)
        pvti = write_rank_piece(self.path, f"{self.prefix}_{step:08d}", box, arrays, self.fields,
                                self.precision, self.writer, self.compression)
        if pvti is None:
            return
        self.written = [entry for entry in self.written if entry[1] != pvti]
        self.written.append((step, pvti))
        atomic_write_text(self.pvd_path, pvd_text(self.written))

    def flush(self) -> None:
        """Wait until every queued file is written; raise the error of a failed write."""
        self._worker.drain()

    def finish(self, solver) -> None:
        """Wait for queued files, then rewrite the ``.pvd`` index (also when none was written)."""
        if not self._ready:
            self.start(solver)
        self.flush()
        if solver.lead:
            atomic_write_text(self.pvd_path, pvd_text(self.written))

    def state_dict(self) -> dict:
        """What a checkpoint keeps, so that a resumed run extends the same ``.pvd``."""
        self.flush()
        return {"written": [list(entry) for entry in self.written]}

    def load_state_dict(self, state: dict) -> None:
        """The files a checkpoint listed that are in this writer's directory: a run resumed
        into another directory (or after files were removed) lists none it cannot show."""
        self.written = [(int(step), str(name)) for step, name in state.get("written", [])
                        if (self.path / str(name)).is_file()]

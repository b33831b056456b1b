"""Solid shapes from closed triangle meshes (STL), voxelized with VTK.

A node is inside when its centre (x = i, node-index coordinates) is enclosed by the surface
(``vtkSelectEnclosedPoints``). The mesh is scaled, rotated and translated into lattice units
first, in that order. Like every shape it is evaluated on any sub-box, so it composes with the
others (``Box(...) - StlShape(...)``) and each rank of a distributed run tags only its part.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import numpy as np

from thelma_py.geometry.shapes import Coords, Shape


class MeshNotClosedError(ValueError):
    """The surface has boundary or non-manifold edges: inside and outside are undefined."""


def _triple(value) -> tuple[float, float, float]:
    if isinstance(value, int | float):
        return (float(value),) * 3
    out = tuple(float(v) for v in value)
    if len(out) != 3:
        raise ValueError(f"expected a number or 3 components, got {value!r}")
    return out


@contextlib.contextmanager
def quiet_vtk() -> Iterator[None]:
    """Keep VTK's C++ error and warning log off stderr inside the block (the caller reports
    failures itself)."""
    from vtkmodules.vtkCommonCore import vtkObject

    previous = vtkObject.GetGlobalWarningDisplay()
    vtkObject.GlobalWarningDisplayOff()
    try:
        yield
    finally:
        vtkObject.SetGlobalWarningDisplay(previous)


def _load(path: Path, scale, rotate, translate):
    from vtkmodules.vtkCommonTransforms import vtkTransform
    from vtkmodules.vtkFiltersCore import (
        vtkCleanPolyData,
        vtkFeatureEdges,
        vtkTriangleFilter,
    )
    from vtkmodules.vtkFiltersGeneral import vtkTransformFilter
    from vtkmodules.vtkIOGeometry import vtkSTLReader

    if not path.is_file():
        raise FileNotFoundError(f"STL file not found: {path}")
    reader = vtkSTLReader()
    reader.SetFileName(str(path))
    with quiet_vtk():  # a bad file: one error below, not VTK's C++ log on stderr
        reader.Update()
    if reader.GetOutput().GetNumberOfCells() == 0:
        raise ValueError(f"{path}: no triangles read (not an STL file, or empty)")
    clean = vtkCleanPolyData()  # merge the duplicated vertices of STL facets
    clean.SetInputConnection(reader.GetOutputPort())
    triangles = vtkTriangleFilter()
    triangles.SetInputConnection(clean.GetOutputPort())
    transform = vtkTransform()
    transform.PostMultiply()
    transform.Scale(*scale)
    transform.RotateX(rotate[0])
    transform.RotateY(rotate[1])
    transform.RotateZ(rotate[2])
    transform.Translate(*translate)
    moved = vtkTransformFilter()
    moved.SetTransform(transform)
    moved.SetInputConnection(triangles.GetOutputPort())
    moved.Update()
    mesh = moved.GetOutput()
    edges = vtkFeatureEdges()
    edges.SetInputData(mesh)
    edges.BoundaryEdgesOn()
    edges.NonManifoldEdgesOn()
    edges.FeatureEdgesOff()
    edges.ManifoldEdgesOff()
    edges.Update()
    bad = edges.GetOutput().GetNumberOfCells()
    if bad:
        raise MeshNotClosedError(
            f"{path}: the surface is not closed ({bad} boundary or non-manifold edges); "
            "repair it (e.g. fill holes) before voxelizing")
    return mesh


@attrs.frozen(eq=False)
class StlShape(Shape):
    """Nodes inside a closed STL surface (3D), after ``scale`` (number or 3 factors),
    ``rotate`` (degrees about x, then y, then z, around the origin) and ``translate``."""

    path: Path = attrs.field(converter=Path)
    scale: tuple[float, float, float] = attrs.field(default=1.0, converter=_triple)
    rotate: tuple[float, float, float] = attrs.field(default=0.0, converter=_triple)
    translate: tuple[float, float, float] = attrs.field(default=0.0, converter=_triple)
    tolerance: float = attrs.field(default=1e-6, validator=attrs.validators.gt(0.0))
    """Relative tolerance of the inside test (fraction of the bounding-box diagonal)."""
    _mesh: object = attrs.field(init=False, repr=False)
    _tree: object = attrs.field(init=False, repr=False, default=None)

    def __attrs_post_init__(self):
        object.__setattr__(self, "_mesh", _load(self.path, self.scale, self.rotate,
                                                self.translate))

    @property
    def bounds(self) -> tuple[float, ...]:
        """(xmin, xmax, ymin, ymax, zmin, zmax) of the placed mesh, lattice units."""
        return tuple(self._mesh.GetBounds())

    def contains(self, coords: Coords) -> np.ndarray:
        from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
        from vtkmodules.vtkCommonCore import vtkPoints
        from vtkmodules.vtkCommonDataModel import vtkPolyData
        from vtkmodules.vtkFiltersModeling import vtkSelectEnclosedPoints

        if len(coords) != 3:
            raise ValueError("an STL shape needs a 3D domain")
        full = np.broadcast_shapes(*(c.shape for c in coords))
        x, y, z = (np.broadcast_to(c, full) for c in coords)
        b = self.bounds
        candidate = ((x >= b[0]) & (x <= b[1]) & (y >= b[2]) & (y <= b[3])
                     & (z >= b[4]) & (z <= b[5]))
        inside = np.zeros(full, dtype=bool)
        if not candidate.any():
            return inside
        points = np.stack([x[candidate], y[candidate], z[candidate]], axis=1)
        vtk_points = vtkPoints()
        vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(points, dtype=np.float64),
                                        deep=True))
        cloud = vtkPolyData()
        cloud.SetPoints(vtk_points)
        select = vtkSelectEnclosedPoints()
        select.SetInputData(cloud)
        select.SetSurfaceData(self._mesh)
        select.SetTolerance(self.tolerance)
        select.Update()
        selected = vtk_to_numpy(select.GetOutput().GetPointData().GetArray("SelectedPoints"))
        inside[candidate] = selected.astype(bool)
        return inside

    def link_distance(self, points: np.ndarray, direction: np.ndarray) -> np.ndarray:
        """Exact ray-triangle intersection (``vtkOBBTree``): the first crossing of each segment
        p + t d, t in [0, 1], with the surface. A segment through a mesh edge or vertex can
        slip between triangles: there the generic bisection of the inside test decides."""
        from vtkmodules.vtkCommonCore import vtkPoints
        from vtkmodules.vtkFiltersGeneral import vtkOBBTree

        if self._tree is None:
            tree = vtkOBBTree()
            tree.SetDataSet(self._mesh)
            tree.BuildLocator()
            object.__setattr__(self, "_tree", tree)
        points = np.asarray(points, dtype=np.float64)
        d = np.asarray(direction, dtype=np.float64)
        length2 = float(d @ d)
        hits = vtkPoints()
        out = np.full(len(points), np.nan)
        for k, p in enumerate(points):
            self._tree.IntersectWithLine(tuple(p), tuple(p + d), hits, None)
            if hits.GetNumberOfPoints():
                ts = [float((np.asarray(hits.GetPoint(j)) - p) @ d) / length2
                      for j in range(hits.GetNumberOfPoints())]
                out[k] = min(max(min(ts), 0.0), 1.0)
        missed = np.isnan(out)
        if missed.any():
            out[missed] = super().link_distance(points[missed], d)
        return out

    def voxel_count(self, shape: Sequence[int]) -> int:
        """Number of nodes inside, on a lattice of ``shape`` = (nx, ny, nz) nodes."""
        coords = tuple(np.arange(n, dtype=np.float64).reshape(
            [n if a == axis else 1 for a in range(3)][::-1]) for axis, n in enumerate(shape))
        return int(self.contains(coords).sum())


def write_stl(polydata, path: str | Path) -> Path:
    """Write a VTK surface (triangulated on the way) as binary STL; returns the path."""
    from vtkmodules.vtkFiltersCore import vtkTriangleFilter
    from vtkmodules.vtkIOGeometry import vtkSTLWriter

    triangles = vtkTriangleFilter()
    triangles.SetInputData(polydata)
    triangles.Update()
    writer = vtkSTLWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(triangles.GetOutput())
    writer.SetFileTypeToBinary()
    writer.Write()
    return Path(path)


def sphere_stl(path: str | Path, radius: float = 1.0, resolution: int = 48) -> Path:
    """A closed triangulated sphere at the origin, written to ``path`` (for cases and tests)."""
    from vtkmodules.vtkFiltersSources import vtkSphereSource

    source = vtkSphereSource()
    source.SetRadius(radius)
    source.SetThetaResolution(resolution)
    source.SetPhiResolution(resolution)
    source.Update()
    return write_stl(source.GetOutput(), path)

"""STL voxelization: meshes written here with VTK, node counts against the analytic volumes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from thelma_py.geometry import Box, Geometry, MeshNotClosedError, StlShape
from thelma_py.geometry.stl import sphere_stl, write_stl
from thelma_py.lattice import D3Q19


def cube_stl(path, size=1.0, open_face=False):
    from vtkmodules.vtkFiltersSources import vtkCubeSource

    cube = vtkCubeSource()
    cube.SetXLength(size)
    cube.SetYLength(size)
    cube.SetZLength(size)
    cube.Update()
    mesh = cube.GetOutput()
    if open_face:
        from vtkmodules.vtkCommonDataModel import vtkPolyData

        kept = vtkPolyData()
        kept.SetPoints(mesh.GetPoints())
        polys = mesh.GetPolys()
        polys.InitTraversal()
        from vtkmodules.vtkCommonCore import vtkIdList
        from vtkmodules.vtkCommonDataModel import vtkCellArray

        cells, ids = vtkCellArray(), vtkIdList()
        for k in range(polys.GetNumberOfCells()):
            polys.GetNextCell(ids)
            if k:  # drop the first face
                cells.InsertNextCell(ids)
        kept.SetPolys(cells)
        mesh = kept
    return write_stl(mesh, path)


def test_cube_voxel_count_is_exact(tmp_path):
    """A unit cube scaled by 8 and centred at 6.5 spans 2.5..10.5: nodes 3..10, 8³ = 512."""
    shape = StlShape(cube_stl(tmp_path / "cube.stl"), scale=8.0, translate=(6.5, 6.5, 6.5))
    assert shape.voxel_count((14, 14, 14)) == 512


def test_sphere_voxel_count_matches_the_volume(tmp_path):
    """r = 6: 4/3 π r³ = 904.8 node volumes. A 96 x 96 polyhedron is 0.2 % smaller and the
    node count of a ball of radius 6 differs from its volume by about 1 %: within 3 %."""
    path = sphere_stl(tmp_path / "sphere.stl", radius=1.0, resolution=96)
    shape = StlShape(path, scale=6.0, translate=(10.0, 10.2, 9.7))
    count = shape.voxel_count((21, 21, 21))
    assert abs(count / (4 / 3 * math.pi * 6**3) - 1) < 0.03
    # agrees with the analytic sphere test node by node except near the surface
    from thelma_py.geometry import Sphere

    exact = Sphere((10.0, 10.2, 9.7), 6.0).contains(Geometry((21, 21, 21)).coordinates())
    got = shape.contains(Geometry((21, 21, 21)).coordinates())
    assert (got != exact).sum() < 0.02 * exact.sum()


def test_rotation_and_sub_boxes(tmp_path):
    """A 2 x 1 x 1 box rotated 90° about z becomes 1 x 2 x 1; sub-box tags equal slices."""
    from vtkmodules.vtkFiltersSources import vtkCubeSource

    cube = vtkCubeSource()
    cube.SetXLength(8.0)
    cube.SetYLength(4.0)
    cube.SetZLength(4.0)
    cube.Update()
    path = write_stl(cube.GetOutput(), tmp_path / "bar.stl")
    shape = StlShape(path, rotate=(0, 0, 90), translate=(8.5, 8.5, 8.5))
    b = shape.bounds
    assert math.isclose(b[1] - b[0], 4.0, abs_tol=1e-9) and math.isclose(b[3] - b[2], 8.0,
                                                                        abs_tol=1e-9)
    geo = Geometry((16, 16, 16))
    geo.wall(Box((0, 0, 0), (15, 15, 15)) - shape)  # composes with the other shapes
    whole = geo.evaluate(D3Q19).tags
    part = geo.evaluate(D3Q19, lower=(4, 2, 5), shape=(9, 10, 6)).tags
    np.testing.assert_array_equal(part, whole[5:11, 2:12, 4:13])
    assert (~geo.evaluate(D3Q19).solid).sum() == 4 * 8 * 4


def test_open_mesh_is_refused(tmp_path):
    with pytest.raises(MeshNotClosedError, match="not closed"):
        StlShape(cube_stl(tmp_path / "open.stl", open_face=True))


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        StlShape(tmp_path / "nothing.stl")

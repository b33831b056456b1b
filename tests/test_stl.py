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


def test_interpolated_stl_body_gets_exact_wall_distances(tmp_path):
    """A cube mesh of side 5 (faces at x, y, z = 2.2 and 7.2 after translation) as an
    interpolated body: every cut link's q puts the wall on a cube face (1e-6: STL stores
    float32 vertices; links through the cube's edges included, where the ray-triangle test
    hands over to bisection), and agrees with the generic bisection of the inside test
    (1e-5: vtkSelectEnclosedPoints decides inside to 1e-6 of the mesh diagonal)."""
    from thelma_py.geometry.shapes import Shape

    shape = StlShape(cube_stl(tmp_path / "cube.stl"), scale=5.0, translate=(4.7, 4.7, 4.7))
    geo = Geometry((10, 10, 10), periodic=(True, True, True))
    geo.body(shape, interpolated=True)
    tags = geo.evaluate(D3Q19)
    assert len(tags.curved_nodes) > 50
    z, y, x = np.unravel_index(tags.curved_nodes, tags.tags.shape)
    nodes = np.stack([x, y, z], axis=1).astype(float)
    for i in range(1, D3Q19.q):
        rows = np.isfinite(tags.curved_q[:, i])
        if not rows.any():
            continue
        hit = nodes[rows] - tags.curved_q[rows, i, None] * D3Q19.c[i]
        on_face = np.isclose(hit, 2.2, atol=1e-6) | np.isclose(hit, 7.2, atol=1e-6)
        assert on_face.any(axis=1).all(), i
        generic = Shape.link_distance(shape, nodes[rows], -D3Q19.c[i].astype(float))
        np.testing.assert_allclose(tags.curved_q[rows, i], generic, rtol=0, atol=1e-5)

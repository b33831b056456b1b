"""Geometry: shapes, walls, boundary ids, link masks and sub-box tagging.

All comparisons are exact: tags are integers and shapes are evaluated on integer coordinates.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from thelma_py.geometry import (
    Box,
    Cylinder,
    Everything,
    Function,
    Geometry,
    Mask,
    NodeKind,
    Sphere,
    TagLayout,
    cavity,
    channel,
    periodic_box,
)
from thelma_py.lattice import D2Q9, D3Q19, D3Q27


def grid(shape):
    """Coordinate arrays (x, y[, z]) of node-array shape (Nz, Ny, Nx), from (nx, ny[, nz])."""
    return tuple(np.indices(tuple(reversed(shape)), dtype=float)[::-1])


def solid_of(geo, lattice=None):
    lattice = lattice or (D2Q9 if geo.dim == 2 else D3Q19)
    return geo.evaluate(lattice).solid


# -- shapes ------------------------------------------------------------------------------------

def test_grid_helper_orders_axes_like_node_arrays():
    x, y, z = grid((4, 3, 2))
    assert x.shape == (2, 3, 4)
    assert x[0, 0, 3] == 3 and y[0, 2, 0] == 2 and z[1, 0, 0] == 1


def test_box_sphere_cylinder_mask_function_walls_2d():
    shape = (12, 9)
    x, y = grid(shape)
    cases = {
        "box": (Box((2, 3), (5, 4)), (x >= 2) & (x <= 5) & (y >= 3) & (y <= 4)),
        "sphere": (Sphere((6, 4), 2.5), (x - 6) ** 2 + (y - 4) ** 2 <= 6.25),
        "cylinder": (Cylinder((6, 4), 3.0), (x - 6) ** 2 + (y - 4) ** 2 <= 9.0),
        "function": (Function(lambda x, y: x + y < 4), x + y < 4),
    }
    mask = np.zeros((9, 12), dtype=bool)
    mask[1, 2] = mask[7, 10] = True
    cases["mask"] = (Mask(mask), mask)
    for name, (shape_, expected) in cases.items():
        geo = periodic_box(shape)
        geo.wall(shape_)
        np.testing.assert_array_equal(solid_of(geo), expected, err_msg=name)


def test_shapes_3d_and_cylinder_axis():
    shape = (10, 8, 6)
    x, y, z = grid(shape)
    geo = periodic_box(shape)
    geo.wall(Cylinder((4, 2), 1.5, axis=0))  # along x, centre (y, z) = (4, 2)
    np.testing.assert_array_equal(solid_of(geo), (y - 4) ** 2 + (z - 2) ** 2 <= 2.25)
    geo = periodic_box(shape)
    geo.wall(Sphere((5, 4, 3), 2))
    np.testing.assert_array_equal(solid_of(geo), (x - 5) ** 2 + (y - 4) ** 2 + (z - 3) ** 2 <= 4)


def test_union_difference_intersection_and_fluid():
    shape = (16, 10)
    x, y = grid(shape)
    a = Box((2, 2), (9, 7))
    b = Sphere((9, 5), 3)
    in_a = (x >= 2) & (x <= 9) & (y >= 2) & (y <= 7)
    in_b = (x - 9) ** 2 + (y - 5) ** 2 <= 9
    for combined, expected in ((a | b, in_a | in_b), (a - b, in_a & ~in_b), (a & b, in_a & in_b)):
        geo = periodic_box(shape)
        geo.wall(combined)
        np.testing.assert_array_equal(solid_of(geo), expected)
    # Geometry.fluid carves fluid back out of earlier walls, in declaration order
    geo = periodic_box(shape)
    geo.wall(a)
    geo.fluid(b)
    np.testing.assert_array_equal(solid_of(geo), in_a & ~in_b)
    geo.wall(Box((0, 0), (0, 0)))
    assert solid_of(geo)[0, 0]


def test_builders():
    geo = cavity((8, 6), lid_velocity=(0.1, 0.0))
    assert geo.periodic == (False, False) and geo.array_shape == (6, 8)
    tags = geo.evaluate(D2Q9)
    lid = tags.face_bc_ids["+y"]
    np.testing.assert_array_equal(tags.bc_table[lid], [0.1, 0.0, 0.0, 1.0])
    assert channel((8, 6, 4), flow_axis=0, wall_axis=2).periodic == (True, True, False)
    assert periodic_box((4, 4)).periodic == (True, True)
    with pytest.raises(ValueError, match="differ"):
        channel((8, 6), flow_axis=1, wall_axis=1)
    assert cavity((4, 4, 4), (0.1, 0, 0), lid_face="+z").evaluate(D3Q19).face_bc_ids == {"+z": 1}


def test_geometry_argument_errors():
    with pytest.raises(ValueError, match="2 or 3"):
        Geometry((4,))
    with pytest.raises(ValueError, match="periodic needs 2 flags"):
        Geometry((4, 4), periodic=(True,))
    with pytest.raises(ValueError, match="valid faces"):
        Geometry((4, 4)).edge("+z")
    with pytest.raises(ValueError, match="periodic axis"):
        periodic_box((4, 4)).edge("+y", velocity=(0.1, 0))
    with pytest.raises(ValueError, match="is 3D but the geometry is 2D"):
        Geometry((4, 4)).evaluate(D3Q19)
    with pytest.raises(ValueError, match="not inside"):
        Geometry((4, 4)).evaluate(D2Q9, lower=(2, 0), shape=(3, 4))


def test_no_fluid_is_a_clear_error():
    geo = Geometry((6, 5))
    geo.wall(Everything())
    with pytest.raises(ValueError, match="no fluid node"):
        geo.evaluate(D2Q9)
    geo = Geometry((6, 5, 4))
    geo.wall(Box((-1, -1, -1), (6, 5, 4)))
    with pytest.raises(ValueError, match="no fluid node"):
        geo.evaluate(D3Q19)


# -- link masks --------------------------------------------------------------------------------

def links_of(tags, x, y):
    return tags.layout.decode(tags.tags[y, x])["links"]


def test_link_mask_of_a_cavity_corner_by_hand():
    """Node (0, 0) of a closed box: the upstream node x − c_i is outside for every c_i with
    c_x = +1 or c_y = +1, i.e. directions 1 (1,0), 3 (0,1), 5 (1,1), 7 (1,−1), 8 (−1,1)."""
    tags = cavity((4, 3), (0.1, 0.0)).evaluate(D2Q9)
    assert links_of(tags, 0, 0) == [1, 3, 5, 7, 8]
    # the node above it on the left wall: c_x = +1 only, directions 1, 5, 7
    assert links_of(tags, 0, 1) == [1, 5, 7]
    # top-right corner: c_x = -1 or c_y = -1: directions 2, 4, 6, 7, 8
    assert links_of(tags, 3, 2) == [2, 4, 6, 7, 8]
    # x = 1, y = 1 of a 4 x 3 box touches no wall
    assert links_of(tags, 1, 1) == []
    assert tags.kind[1, 1] == NodeKind.FLUID


def test_link_mask_around_an_obstacle_by_hand():
    """A single solid node at (2, 1) in a periodic box: node x pulls direction i through it
    when x − c_i = (2, 1), e.g. (1, 1) pulls c = (−1, 0) (direction 2), (3, 2) pulls
    c = (1, 1) (direction 5) and (1, 0) pulls c = (−1, −1) (direction 6)."""
    geo = periodic_box((5, 4))
    geo.wall(Box((2, 1), (2, 1)))
    tags = geo.evaluate(D2Q9)
    assert tags.kind[1, 2] == NodeKind.WALL and links_of(tags, 2, 1) == []
    lat = D2Q9
    for y, x in itertools.product(range(4), range(5)):
        if (x, y) == (2, 1):
            continue
        expected = [i for i in range(1, 9)
                    if ((x - lat.c[i][0]) % 5, (y - lat.c[i][1]) % 4) == (2, 1)]
        assert links_of(tags, x, y) == expected, (x, y)
    assert links_of(tags, 1, 1) == [2]     # c = (-1, 0)
    assert links_of(tags, 3, 2) == [5]     # c = (1, 1)
    assert links_of(tags, 1, 0) == [6]     # c = (-1, -1)


def test_solid_nodes_carry_no_links_and_their_bc_id():
    geo = periodic_box((6, 6))
    moving = geo.wall(Box((2, 2), (3, 3)), velocity=(0.0, 0.02))
    tags = geo.evaluate(D2Q9)
    solid = tags.solid
    assert (tags.layout.links(tags.tags)[solid] == 0).all()
    assert (tags.layout.bc_id(tags.tags)[solid] == moving).all()
    np.testing.assert_array_equal(tags.bc_table[moving], [0.0, 0.02, 0.0, 1.0])


@pytest.mark.parametrize("lat", [D3Q19, D3Q27], ids=["D3Q19", "D3Q27"])
def test_link_masks_3d_agree_with_a_direct_count(lat):
    geo = Geometry((7, 6, 5), periodic=(True, False, False))
    geo.wall(Sphere((3, 3, 2), 1.5))
    tags = geo.evaluate(lat)
    # the solid set grown by one layer (walls beyond non-periodic faces, x wrapped)
    solid = np.ones((7, 8, 9), dtype=bool)
    solid[1:-1, 1:-1, 1:-1] = tags.solid
    solid[1:-1, 1:-1, 0] = tags.solid[:, :, -1]
    solid[1:-1, 1:-1, -1] = tags.solid[:, :, 0]
    links = tags.layout.links(tags.tags)
    for z, y, x in itertools.product(range(5), range(6), range(7)):
        if tags.solid[z, y, x]:
            continue
        expected = 0
        for i in range(1, lat.q):
            cx, cy, cz = (int(v) for v in lat.c[i])
            if solid[z - cz + 1, y - cy + 1, x - cx + 1]:
                expected |= 1 << (i - 1)
        assert int(links[z, y, x]) == expected, (x, y, z)


# -- faces and corners -------------------------------------------------------------------------

def test_lid_owns_the_corners_when_declared_last():
    geo = Geometry((5, 4))
    side = geo.edge("-x", velocity=(0.0, 0.05))
    lid = geo.edge("+y", velocity=(0.1, 0.0))
    halo = geo.evaluate(D2Q9).halo_bc_id  # shape (ny + 2, nx + 2)
    assert halo[-1, 0] == lid and halo[-1, -1] == lid  # top corners
    # bottom-left is beyond -x and -y; -y was never declared, so the declared -x face owns it
    assert halo[0, 0] == side
    assert (halo[1:-1, 0] == side).all() and (halo[-1, 1:-1] == lid).all()
    assert (halo[1:-1, -1] == 0).all() and (halo[0, 1:-1] == 0).all()
    # re-declaring the side wall makes it the last one: it takes the corner back
    geo.edge("-x", velocity=(0.0, 0.05))
    halo = geo.evaluate(D2Q9).halo_bc_id
    assert halo[-1, 0] != lid and halo[-1, -1] == lid
    assert tuple(geo.evaluate(D2Q9).bc_table[halo[-1, 0], :2]) == (0.0, 0.05)


def test_lid_corner_3d():
    geo = Geometry((4, 4, 4))
    geo.edge("+x", velocity=(0.0, 0.0, 0.01))
    lid = geo.edge("+z", velocity=(0.1, 0.0, 0.0))
    halo = geo.evaluate(D3Q19).halo_bc_id  # (nz + 2, ny + 2, nx + 2)
    assert (halo[-1, :, -1] == lid).all() and (halo[-1, -1, :] == lid).all()
    assert (halo[1:-1, 1:-1, -1] != lid).all()


def test_face_shape():
    geo = Geometry((6, 5))
    geo.wall(geo.face("-y", thickness=2))
    solid = solid_of(geo)
    assert solid[:2].all() and not solid[2:].any()


# -- sub-boxes ---------------------------------------------------------------------------------

def geometry_2d():
    geo = Geometry((13, 9), periodic=(True, False))
    geo.wall(Sphere((4, 4), 2.2) | Box((10, 0), (12, 1)))
    geo.wall(Box((0, 6), (1, 7)), velocity=(0.0, 0.03))   # touches the periodic seam
    geo.edge("-y")
    geo.edge("+y", velocity=(0.08, 0.0))
    return geo


def geometry_3d():
    geo = Geometry((9, 8, 7), periodic=(False, True, False))
    geo.wall(Sphere((4, 3, 3), 1.8) - Box((4, 0, 0), (8, 7, 2)))
    geo.wall(Box((2, 6, 4), (3, 7, 6)), velocity=(0.0, 0.0, 0.02))  # crosses y seam region
    geo.edge("-x", velocity=(0.0, 0.01, 0.0))
    geo.edge("+z", velocity=(0.05, 0.0, 0.0))
    return geo


SUB_2D = [((0, 0), (13, 9)), ((0, 0), (5, 4)), ((8, 5), (5, 4)), ((3, 2), (7, 5)),
          ((12, 0), (1, 9)), ((0, 8), (13, 1)), ((6, 4), (1, 1))]
SUB_3D = [((0, 0, 0), (9, 8, 7)), ((0, 0, 0), (4, 4, 4)), ((5, 4, 3), (4, 4, 4)),
          ((2, 7, 1), (5, 1, 6)), ((8, 0, 6), (1, 8, 1)), ((3, 3, 3), (2, 2, 2))]


@pytest.mark.parametrize(("build", "lat", "subs"),
                         [(geometry_2d, D2Q9, SUB_2D), (geometry_3d, D3Q19, SUB_3D),
                          (geometry_3d, D3Q27, SUB_3D)], ids=["2d", "3d-q19", "3d-q27"])
def test_sub_box_tags_equal_slices_of_the_whole(build, lat, subs):
    geo = build()
    whole = geo.evaluate(lat)
    assert whole.fluid.any() and whole.solid.any()
    for lower, shape in subs:
        part = geo.evaluate(lat, lower=lower, shape=shape)
        window = tuple(slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(shape),
                                                          strict=True))
        halo = tuple(slice(lo, lo + n + 2) for lo, n in zip(reversed(lower), reversed(shape),
                                                            strict=True))
        np.testing.assert_array_equal(part.tags, whole.tags[window], err_msg=str(lower))
        np.testing.assert_array_equal(part.halo_bc_id, whole.halo_bc_id[halo])
        np.testing.assert_array_equal(part.halo_solid, whole.halo_solid[halo])
        assert part.lower == lower and part.global_shape == geo.shape


def test_periodic_halo_wraps():
    geo = geometry_2d()
    tags = geo.evaluate(D2Q9)
    # x is periodic: the halo column left of x = 0 is the column x = nx - 1
    np.testing.assert_array_equal(tags.halo_solid[1:-1, 0], tags.solid[:, -1])
    np.testing.assert_array_equal(tags.halo_solid[1:-1, -1], tags.solid[:, 0])
    # y is not: the rows beyond are solid walls
    assert tags.halo_solid[0].all() and tags.halo_solid[-1].all()


def test_coordinates_of_a_sub_box():
    geo = Geometry((6, 5, 4))
    x, y, z = geo.coordinates(lower=(1, 2, 3), shape=(2, 2, 1))
    assert x.shape == (1, 1, 2) and y.shape == (1, 2, 1) and z.shape == (1, 1, 1)
    assert x.ravel().tolist() == [1, 2] and y.ravel().tolist() == [2, 3] and z.item() == 3


def test_tag_dtype_follows_lattice():
    assert Geometry((4, 4, 4)).evaluate(D3Q27).tags.dtype == np.uint64
    assert Geometry((4, 4, 4)).evaluate(D3Q19).tags.dtype == np.uint32
    assert TagLayout(D2Q9).dtype == np.uint32

"""Node tag bit layout: pinned values, exact round trips, no overlapping fields.

Everything here is integer arithmetic, so every comparison is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from thelma_py.lattice import D2Q9, D3Q19, D3Q27
from thelma_py.tags import (
    BC_ID_BITS,
    BC_ID_SHIFT,
    KIND_BITS,
    LINK_SHIFT,
    MAX_BC_ID,
    NodeKind,
    TagLayout,
)

LATTICES = [D2Q9, D3Q19, D3Q27]
ids = [lat.name for lat in LATTICES]


def test_node_kind_values_are_pinned():
    # Saved geometries and checkpoints store these numbers: they never change.
    assert {k.name: int(k) for k in NodeKind} == {
        "FLUID": 1, "WALL": 2, "VELOCITY": 3, "PRESSURE": 4, "EQUILIBRIUM_VELOCITY": 5,
        "EQUILIBRIUM_PRESSURE": 6, "OUTFLOW": 7, "FREE_SLIP": 8, "INTERPOLATED": 9,
        "CHARACTERISTIC_VELOCITY": 10}
    assert NodeKind.WALL.is_solid and not NodeKind.FLUID.is_solid
    assert [k for k in NodeKind if k.is_solid] == [NodeKind.WALL]
    assert [k for k in NodeKind if k.is_open] == [*list(NodeKind)[2:8],
                                                  NodeKind.CHARACTERISTIC_VELOCITY]
    assert max(NodeKind) < 1 << KIND_BITS


def test_field_positions_are_pinned():
    assert (KIND_BITS, BC_ID_SHIFT, BC_ID_BITS, LINK_SHIFT, MAX_BC_ID) == (4, 4, 8, 12, 255)


@pytest.mark.parametrize(("lat", "dtype"), [(D2Q9, np.uint32), (D3Q19, np.uint32),
                                             (D3Q27, np.uint64)], ids=ids)
def test_word_size(lat, dtype):
    layout = TagLayout(lat)
    assert layout.dtype == np.dtype(dtype)
    assert layout.ctype == ("unsigned int" if dtype == np.uint32 else "unsigned long long")
    # the highest link bit fits in the word
    assert layout.link_bit(lat.q - 1) < 8 * layout.dtype.itemsize


@pytest.mark.parametrize("lat", LATTICES, ids=ids)
def test_fields_do_not_overlap(lat):
    layout = TagLayout(lat)
    kind_mask = (1 << KIND_BITS) - 1
    bc_mask = MAX_BC_ID << BC_ID_SHIFT
    link_masks = [1 << layout.link_bit(i) for i in range(1, lat.q)]
    assert kind_mask & bc_mask == 0
    assert len(set(link_masks)) == lat.q - 1
    for m in link_masks:
        assert m & (kind_mask | bc_mask) == 0
    # each field written alone shows up only in its own decoder
    assert int(layout.encode(0, MAX_BC_ID, 0)) == bc_mask
    assert int(layout.encode(NodeKind.WALL, 0, 0)) == int(NodeKind.WALL)
    all_links = (1 << (lat.q - 1)) - 1
    word = layout.encode(0, 0, all_links)
    assert layout.kind(word) == 0 and layout.bc_id(word) == 0
    assert int(layout.links(word)) == all_links
    with pytest.raises(ValueError):
        layout.link_bit(0)
    with pytest.raises(ValueError):
        layout.link_bit(lat.q)


@pytest.mark.parametrize("lat", LATTICES, ids=ids)
def test_encode_decode_round_trip(lat):
    layout = TagLayout(lat)
    rng = np.random.default_rng(0)
    n = 500
    kind = rng.choice([int(k) for k in NodeKind], n)
    bc = rng.integers(0, MAX_BC_ID + 1, n)
    links = rng.integers(0, 1 << (lat.q - 1), n, dtype=np.uint64)
    words = layout.encode(kind, bc, links)
    assert words.dtype == layout.dtype
    np.testing.assert_array_equal(layout.kind(words), kind)
    np.testing.assert_array_equal(layout.bc_id(words), bc)
    np.testing.assert_array_equal(layout.links(words), links)
    for i in range(1, lat.q):
        np.testing.assert_array_equal(layout.crosses_wall(words, i),
                                      (links >> np.uint64(i - 1)) & np.uint64(1) == 1)
    for k in range(20):
        d = layout.decode(words[k])
        assert d["kind"] == NodeKind(kind[k]).name
        assert d["bc_id"] == bc[k]
        assert d["links"] == [i for i in range(1, lat.q) if int(links[k]) >> (i - 1) & 1]


@pytest.mark.parametrize("lat", LATTICES, ids=ids)
def test_wall_crossings_lists_the_nodes_of_each_direction(lat):
    """The links of a sparse set of nodes (most have none, as in a real domain), per direction,
    as the bits of the link mask say; directions no node crosses are left out."""
    layout = TagLayout(lat)
    rng = np.random.default_rng(1)
    shape = (6, 7, 9)[: lat.d]
    links = np.where(rng.random(shape) < 0.1,
                     rng.integers(0, 1 << (lat.q - 1), shape, dtype=np.uint64), np.uint64(0))
    links &= ~np.uint64(1 << 2)  # direction 3 crosses nowhere
    words = layout.encode(np.zeros(shape, dtype=np.uint8), np.zeros(shape, dtype=np.uint8),
                          links)
    found = dict(layout.wall_crossings(words))
    expected = {i: np.flatnonzero((links.reshape(-1) >> np.uint64(i - 1)) & np.uint64(1))
                for i in range(1, lat.q)}
    assert set(found) == {i for i, flat in expected.items() if len(flat)} and 3 not in found
    for i, flat in found.items():
        np.testing.assert_array_equal(flat, expected[i])


def test_bc_id_out_of_range_is_refused():
    with pytest.raises(ValueError, match="boundary id above 255"):
        TagLayout(D2Q9).encode(NodeKind.WALL, MAX_BC_ID + 1)


def test_decode_unknown_kind():
    assert TagLayout(D2Q9).decode(13)["kind"] == "?13"


@pytest.mark.parametrize("lat", LATTICES, ids=ids)
def test_describe_mentions_every_direction(lat):
    text = TagLayout(lat).describe()
    assert lat.name in text and TagLayout(lat).dtype.name in text
    for i in range(1, lat.q):
        assert f"direction {i:2d}, c = {tuple(int(v) for v in lat.c[i])}" in text
        assert f"bit {LINK_SHIFT + i - 1:2d}:" in text
    for k in NodeKind:
        assert f"{k.name}={int(k)}" in text
    assert "np.int64" not in text


def test_describe_d2q9_literal():
    text = TagLayout(D2Q9).describe()
    assert "bit 12: direction  1, c = (1, 0)" in text
    assert "bit 19: direction  8, c = (-1, 1)" in text


def test_cuda_defines_match_python():
    text = TagLayout(D3Q19).cuda_defines()
    assert f"#define TAG_LINK_SHIFT {LINK_SHIFT}" in text
    assert f"#define TAG_BC_SHIFT {BC_ID_SHIFT}" in text
    assert f"#define TAG_BC_MASK {MAX_BC_ID}u" in text
    for k in NodeKind:
        assert f"#define KIND_{k.name} {int(k)}u" in text

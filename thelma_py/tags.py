"""Bitfield node tags: the one definition of the layout, for Python and for generated CUDA.

Every lattice node carries one unsigned word::

    bits 0..3     node kind (NodeKind)
    bits 4..11    boundary-condition id: a row of the boundary table (wall velocity, density)
    bits 12..     link mask: bit 12 + i - 1 is set when the upstream neighbour x - c_i of a
                  fluid node is solid, so population i must be bounced back (i = 1..Q-1)

The word is uint32 for D2Q9 and D3Q19 (12 + 18 = 30 bits) and uint64 for D3Q27 (38 bits).
Released values never change: saved geometries and checkpoints depend on them.
"""

from __future__ import annotations

import enum

import attrs
import numpy as np

from thelma_py.lattice import Lattice

KIND_BITS = 4
BC_ID_SHIFT = 4
BC_ID_BITS = 8
LINK_SHIFT = BC_ID_SHIFT + BC_ID_BITS
MAX_BC_ID = (1 << BC_ID_BITS) - 1


class NodeKind(enum.IntEnum):
    """What a node is. Values are pinned (tests/test_tags.py).

    The kinds in :data:`OPEN_TABLE` are open-boundary nodes: stored fluid nodes in the first
    layer of a face whose boundary row names the face (``NodeTags.open_table``). Their link bits
    mark the populations whose upstream node lies beyond the domain; the compute plug-in's rule
    for the kind rebuilds those after streaming (the LBM rules:
    ``modules/compute/lbm/boundaries.py``), then the node collides like any fluid node.
    """

    FLUID = 1
    """Ordinary fluid node: stream and collide."""
    WALL = 2
    """Solid, no-slip; with a non-zero velocity in its boundary row it is a moving wall."""
    VELOCITY = 3
    """Velocity inlet, non-equilibrium bounce-back (Zou & He 1997; Hecht & Harting 2010)."""
    PRESSURE = 4
    """Pressure (density) outlet, non-equilibrium bounce-back."""
    EQUILIBRIUM_VELOCITY = 5
    """Every population set to f_eq(ρ, u_b), ρ from the Zou-He mass balance."""
    EQUILIBRIUM_PRESSURE = 6
    """Every population set to f_eq(ρ_b, u_n n), u_n from the Zou-He mass balance."""
    OUTFLOW = 7
    """Zero gradient: missing populations copied from the inner neighbour after streaming."""
    FREE_SLIP = 8
    """Specular reflection at the halfway wall beyond the face."""
    INTERPOLATED = 9
    """Fluid node with a link cut by a body declared ``interpolated``: those links use
    interpolated bounce-back (Bouzidi, Firdaouss & Lallemand 2001) with the exact wall distance
    q of each link (``NodeTags.curved_nodes`` / ``curved_q``); the node then collides."""
    CHARACTERISTIC_VELOCITY = 10
    """Velocity inlet that lets sound leave: every population set to f_eq(ρ, u) with the
    incoming acoustic characteristic held at the prescribed state and the outgoing one taken
    from the node (ρ from the Zou-He mass balance)."""

    @property
    def is_solid(self) -> bool:
        return self is NodeKind.WALL

    @property
    def is_open(self) -> bool:
        """An open-boundary (or free-slip) node: fluid-like, rebuilt after streaming."""
        return any(entry.kind is self for entry in OPEN_TABLE)


@attrs.frozen
class OpenKind:
    """An open-boundary node kind as geometries declare it: ``Geometry.<method>(face, ...)``
    with ``kind=label`` where the method offers several. The rules live in the compute
    plug-ins (LBM: ``boundaries.RULES``, one record per kind)."""

    kind: NodeKind
    method: str = attrs.field(
        validator=attrs.validators.in_(("inlet", "outlet", "outflow", "free_slip")))
    """inlet (prescribes a velocity), outlet (a density), outflow or free_slip."""
    label: str = ""
    """The ``kind=`` name in ``inlet`` / ``outlet``; '' for the methods without a choice."""


OPEN_TABLE = (
    OpenKind(NodeKind.VELOCITY, "inlet", "zou-he"),
    OpenKind(NodeKind.PRESSURE, "outlet", "zou-he"),
    OpenKind(NodeKind.EQUILIBRIUM_VELOCITY, "inlet", "equilibrium"),
    OpenKind(NodeKind.EQUILIBRIUM_PRESSURE, "outlet", "equilibrium"),
    OpenKind(NodeKind.CHARACTERISTIC_VELOCITY, "inlet", "characteristic"),
    OpenKind(NodeKind.OUTFLOW, "outflow"),
    OpenKind(NodeKind.FREE_SLIP, "free_slip"),
)
"""The open-boundary kinds: one line per kind (its value and name are in :class:`NodeKind`)."""
SOLID_KINDS = tuple(k for k in NodeKind if k.is_solid)
OPEN_KINDS = tuple(k for k in NodeKind if k.is_open)


@attrs.frozen
class TagLayout:
    """The tag word for one lattice: dtype and bit positions."""

    lattice: Lattice

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint32 if LINK_SHIFT + self.lattice.q - 1 <= 32 else np.uint64)

    @property
    def ctype(self) -> str:
        return "unsigned int" if self.dtype == np.uint32 else "unsigned long long"

    def link_bit(self, i: int) -> int:
        """Bit position of direction i (1 <= i < Q) in the tag word."""
        if not 1 <= i < self.lattice.q:
            raise ValueError(f"direction {i} out of range 1..{self.lattice.q - 1}")
        return LINK_SHIFT + i - 1

    def encode(self, kind, bc_id=0, links=0) -> np.ndarray:
        """Pack kind, boundary id and a link bitmask (bit i-1 for direction i) into tag words."""
        dtype = self.dtype
        bc_id = np.asarray(bc_id)
        if (bc_id > MAX_BC_ID).any():
            raise ValueError(f"boundary id above {MAX_BC_ID}: the tag word has {BC_ID_BITS} bits")
        # built in the word's own type, in place: no 8-byte temporaries per node
        shape = np.broadcast_shapes(np.shape(kind), np.shape(bc_id), np.shape(links))
        word = np.empty(shape, dtype=dtype)
        np.left_shift(np.asarray(links).astype(dtype, copy=False), dtype.type(LINK_SHIFT),
                      out=word)
        high = bc_id.astype(dtype)
        high <<= dtype.type(BC_ID_SHIFT)
        word |= high
        kind = np.asarray(kind)
        word |= kind if kind.dtype == np.uint8 else kind.astype(dtype)
        return word

    def kind(self, tags: np.ndarray) -> np.ndarray:
        return (np.asarray(tags) & ((1 << KIND_BITS) - 1)).astype(np.uint8)

    def bc_id(self, tags: np.ndarray) -> np.ndarray:
        return ((np.asarray(tags) >> BC_ID_SHIFT) & MAX_BC_ID).astype(np.uint8)

    def links(self, tags: np.ndarray) -> np.ndarray:
        """Link bitmask with bit i-1 for direction i, in the tag word's own type."""
        tags = np.asarray(tags)
        return tags >> tags.dtype.type(LINK_SHIFT)

    def crosses_wall(self, tags: np.ndarray, i: int) -> np.ndarray:
        """Boolean array: does population i arrive through a wall at these nodes?"""
        tags = np.asarray(tags)
        return ((tags >> tags.dtype.type(self.link_bit(i))) & tags.dtype.type(1)).astype(bool)

    def wall_crossings(self, tags: np.ndarray):
        """(i, flat indices) for every direction i in which a population arrives through a wall
        somewhere: the nodes of :meth:`crosses_wall`, ascending, found among the nodes that
        have a link at all (one pass over the domain instead of one per direction)."""
        flat = np.asarray(tags).reshape(-1)
        linked = np.flatnonzero(self.links(flat))
        words = self.links(flat[linked])
        one = words.dtype.type(1)
        for i in range(1, self.lattice.q):
            hit = ((words >> words.dtype.type(i - 1)) & one).astype(bool)
            if hit.any():
                yield i, linked[hit]

    def decode(self, word: int) -> dict:
        """One tag word as a readable dict (kind name, boundary id, directions crossing a wall)."""
        word = int(word)
        kind = word & ((1 << KIND_BITS) - 1)
        links = [i for i in range(1, self.lattice.q) if word >> self.link_bit(i) & 1]
        name = NodeKind(kind).name if kind in NodeKind._value2member_map_ else f"?{kind}"
        return {"kind": name, "bc_id": (word >> BC_ID_SHIFT) & MAX_BC_ID, "links": links}

    def cuda_defines(self) -> str:
        """The same layout as C preprocessor constants for generated kernels."""
        lines = [f"#define TAG_KIND_MASK {(1 << KIND_BITS) - 1}u",
                 f"#define TAG_BC_SHIFT {BC_ID_SHIFT}",
                 f"#define TAG_BC_MASK {MAX_BC_ID}u",
                 f"#define TAG_LINK_SHIFT {LINK_SHIFT}"]
        lines += [f"#define KIND_{k.name} {int(k)}u" for k in NodeKind]
        return "\n".join(lines)

    def describe(self) -> str:
        """Human-readable layout, printed by ``thelma info tags``."""
        lat = self.lattice
        top = LINK_SHIFT + lat.q - 2
        rows = [f"{lat.name}: {self.dtype.name} node tag",
                f"  bits  0..{KIND_BITS - 1:<3}  node kind: "
                + ", ".join(f"{k.name}={int(k)}" for k in NodeKind),
                f"  bits  {BC_ID_SHIFT}..{LINK_SHIFT - 1:<3}  boundary id (row of the boundary "
                f"table: wall velocity, density), 0..{MAX_BC_ID}",
                f"  bits {LINK_SHIFT}..{top:<3}  link mask: bit {LINK_SHIFT}+i-1 set when the "
                "upstream node x - c_i is solid or lies beyond a non-periodic face",
                "      (open-boundary kinds: the face is in the boundary row; the link bits "
                "mark the missing populations, rebuilt by the boundary rule)"]
        for i in range(1, lat.q):
            c = tuple(int(v) for v in lat.c[i])  # plain ints: NumPy 2 reprs show np.int64(...)
            rows.append(f"      bit {self.link_bit(i):2d}: direction {i:2d}, c = {c}")
        return "\n".join(rows)


def halo_upstream(index: tuple, c, halo_shape: tuple) -> np.ndarray:
    """Flat positions, in a halo array (one node more on each side; array axes reversed: z, y,
    x), of the upstream nodes x − c of the nodes at the array ``index`` (``np.unravel_index``
    of a sub-box's flat indices)."""
    dim = len(index)
    return np.ravel_multi_index(tuple(index[k] + 1 - int(c[dim - 1 - k]) for k in range(dim)),
                                halo_shape)

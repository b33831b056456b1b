"""Records of a geometry declaration: boundary-table rows, open faces, face names."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from thelma_py.nodes import FACES
from thelma_py.tags import NodeKind


def face_axis(face: str, dim: int) -> tuple[int, int]:
    """(axis, side) of a face name such as '-x' (side -1) or '+z' (side +1)."""
    if face not in FACES[: 2 * dim]:
        raise ValueError(f"unknown face {face!r}; valid faces for {dim}D: {FACES[: 2 * dim]}")
    return "xyz".index(face[1]), (-1 if face[0] == "-" else 1)


@attrs.frozen
class BoundaryRow:
    """Prescribed values of one boundary id: wall velocity (lattice units) and density."""

    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rho: float = 1.0



@attrs.frozen
class OpenFace:
    """One open face: its node kind, boundary id and prescribed values (numbers or functions
    of global coordinates (x, y[, z]) returning broadcastable arrays)."""

    kind: NodeKind
    bc_id: int
    velocity: Sequence[float] | Callable = (0.0, 0.0, 0.0)
    rho: float | Callable = 1.0

    def values(self, coords: tuple[np.ndarray, ...], dim: int) -> np.ndarray:
        """(n, 4) rows ux, uy, uz, ρ at the nodes of a face plane given by ``coords``."""
        shape = np.broadcast_shapes(*(c.shape for c in coords))
        velocity = self.velocity(*coords) if callable(self.velocity) else self.velocity
        rho = self.rho(*coords) if callable(self.rho) else self.rho
        if len(velocity) not in (dim, 3):
            raise ValueError(f"the velocity function of boundary {self.bc_id} returned "
                             f"{len(velocity)} components for a {dim}D domain")
        out = np.zeros((*shape, 4))
        for a, v in enumerate(velocity):
            out[..., a] = np.broadcast_to(np.asarray(v, dtype=np.float64), shape)
        out[..., 3] = np.broadcast_to(np.asarray(rho, dtype=np.float64), shape)
        if not np.isfinite(out).all():
            raise ValueError(f"boundary {self.bc_id}: the prescribed values are not finite")
        return out.reshape(-1, 4)

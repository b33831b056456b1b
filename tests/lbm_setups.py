"""Shared test set-ups: small domains with every boundary kind the LBM tags carry."""

from __future__ import annotations

import numpy as np

from thelma_py.geometry import Geometry, Sphere
from thelma_py.lattice import D2Q9, D3Q19, D3Q27, Lattice

LATTICES = {"D2Q9": D2Q9, "D3Q19": D3Q19, "D3Q27": D3Q27}
CONFIGS = [(lat, coll) for lat in LATTICES for coll in ("bgk", "trt", "mrt")
           if not (coll == "mrt" and LATTICES[lat].mrt is None)]


def walled_geometry(lattice: Lattice) -> Geometry:
    """Periodic along x; walls beyond the other faces; a moving lid on the top face; a moving
    solid sphere (disc) inside; an odd x size so tiles are ragged."""
    if lattice.d == 2:
        geo = Geometry((37, 24), periodic=(True, False))
        geo.edge("+y", velocity=(0.06, 0.0))
        geo.wall(Sphere((12.3, 10.7), 4.2), velocity=(0.0, 0.02))
    else:
        geo = Geometry((37, 14, 12), periodic=(True, False, False))
        geo.edge("+z", velocity=(0.05, 0.01, 0.0))
        geo.wall(Sphere((12.3, 6.7, 5.2), 3.1), velocity=(0.0, 0.02, -0.01))
    return geo


def random_state(lattice: Lattice, shape, dtype, seed: int = 0) -> np.ndarray:
    """Post-collision populations far from equilibrium: f_eq(random ρ, u) plus noise."""
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    u = [0.04 * rng.standard_normal(shape) for _ in range(lattice.d)]
    f = np.array(lattice.equilibrium(rho, u))
    f *= 1.0 + 0.05 * rng.standard_normal(f.shape)
    return f.astype(dtype)

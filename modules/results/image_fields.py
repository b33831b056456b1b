"""The scalar an image shows, computed where the fields are (NumPy or CuPy arrays, one code).

A slice needs the field on one plane; derivatives (vorticity, Q) need the two planes beside it,
so only a slab of three planes is ever differentiated (the solver's fields are not copied).
A 3D view needs the scalar on the whole volume, computed slab by slab and thinned by a stride.
Arrays follow the solver's layout: scalars (Nz, Ny, Nx) or (Ny, Nx), u (D, *S), x fastest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from thelma_py.backend import array_module
from thelma_py.modules.results import derived
from thelma_py.tags import OPEN_KINDS, SOLID_KINDS

FIELDS = ("speed", "ux", "uy", "uz", "vorticity", "q_criterion", "p", "rho")
"""Scalars an image can show: |u|, a velocity component, vorticity (2D: ω_z, 3D: |ω|),
Q-criterion (3D), pressure (ρ − 1)/3, density."""
SIGNED = ("ux", "uy", "uz", "q_criterion", "p")
"""Fields drawn with a diverging map and a range symmetric about 0 by default (2D vorticity
too)."""
NEEDS_NEIGHBOURS = ("vorticity", "q_criterion")
AXES = "xyz"
SOLID_CODES = tuple(int(k) for k in SOLID_KINDS)
BOUNDARY_CODES = tuple(int(k) for k in OPEN_KINDS)


def signed(name: str, d: int) -> bool:
    """Whether ``name`` takes both signs (diverging colour map) in a ``d``-dimensional flow."""
    return name in SIGNED or (name == "vorticity" and d == 2)


def check_field(name: str, d: int) -> None:
    """Refuse a field that a ``d``-dimensional flow does not have."""
    if name not in FIELDS:
        raise ValueError(f"unknown image field {name!r}; known: {', '.join(FIELDS)}")
    if d == 2 and name in ("uz", "q_criterion"):
        raise ValueError(f"image field {name!r} needs a 3D flow; 2D flows have: "
                         f"{', '.join(f for f in FIELDS if f not in ('uz', 'q_criterion'))}")


def scalar(name: str, rho, u, periodic: Sequence[bool]):
    """The field ``name`` (float) on the nodes of ``rho`` (shape S) from ``u`` (D, *S)."""
    xp = array_module(u)
    d = u.shape[0]
    if name == "speed":
        return derived.speed(u)
    if name in ("ux", "uy", "uz"):
        return xp.asarray(u[AXES.index(name[1])])
    if name == "p":
        return derived.pressure(rho)
    if name == "rho":
        return xp.asarray(rho)
    if name == "vorticity":
        w = derived.vorticity(u, periodic)
        return w if d == 2 else xp.sqrt((w ** 2).sum(axis=0))
    return derived.q_criterion(u, periodic)


def slab_planes(n: int, index: int, periodic: bool, width: int = 1) -> tuple[list[int], int]:
    """Plane indices around ``index`` (``width`` each side; wrapped when periodic, cut at the
    ends otherwise) and the position of ``index`` among them."""
    if periodic and n > 2 * width:
        return [(index + k) % n for k in range(-width, width + 1)], width
    planes = list(range(max(index - width, 0), min(index + width + 1, n)))
    return planes, planes.index(index)


def plane(name: str, rho, u, periodic: Sequence[bool], axis: str, index: int):
    """The field ``name`` on the plane ``axis`` = ``index`` as a 2D array (rows: the slower
    of the two remaining axes). In 2D the plane is the whole field (axis 'z')."""
    xp = array_module(u)
    d = u.shape[0]
    if d == 2:
        return scalar(name, rho, u, periodic)
    a = AXES.index(axis)
    array_axis = d - 1 - a
    width = 1 if name in NEEDS_NEIGHBOURS else 0
    planes, middle = slab_planes(rho.shape[array_axis], index, periodic[a], width)
    picks = xp.asarray(planes)
    rho_slab = xp.take(rho, picks, axis=array_axis)
    u_slab = xp.take(u, picks, axis=array_axis + 1)
    flags = tuple(p and k != a for k, p in enumerate(periodic))  # the slab's ends are cut
    values = scalar(name, rho_slab, u_slab, flags)
    return xp.take(values, middle, axis=array_axis)


def kind_plane(kind: np.ndarray, axis: str, index: int) -> np.ndarray:
    """Node kinds on the same plane as :func:`plane` (host uint8)."""
    if kind.ndim == 2:
        return kind
    return np.take(kind, index, axis=kind.ndim - 1 - AXES.index(axis))


def _neighbours(xp, picks: np.ndarray, n: int, periodic: bool):
    """Indices after and before the sampled ``picks`` of an axis of ``n`` nodes and the
    spacing between them: central differences, wrapped when periodic, one-sided at the ends
    otherwise (the differences of :func:`.derived.derivative`)."""
    if periodic:
        plus, minus = (picks + 1) % n, (picks - 1) % n
        span = np.full(picks.shape, 2.0)
    else:
        plus, minus = np.minimum(picks + 1, n - 1), np.maximum(picks - 1, 0)
        span = np.maximum(plus - minus, 1).astype(np.float64)
    return xp.asarray(plus), xp.asarray(minus), xp.asarray(span)


def sampled_gradient(u, picks: Sequence[np.ndarray], periodic: Sequence[bool]):
    """G[a, b] = ∂u_a/∂x_b at the nodes ``picks`` (sampled x, y, z indices, a grid), from
    the neighbours of those nodes only: shape (3, 3, len(z), len(y), len(x))."""
    xp = array_module(u)
    sizes = tuple(reversed(u.shape[1:]))  # nx, ny, nz
    grid = [xp.asarray(p) for p in picks]
    rows = []
    for a in range(3):
        row = []
        for b in range(3):
            plus, minus, span = _neighbours(xp, np.asarray(picks[b]), sizes[b], periodic[b])
            around = []
            for shifted in (plus, minus):
                index = list(grid)
                index[b] = shifted
                around.append(u[a][xp.ix_(index[2], index[1], index[0])])
            shape = [1, 1, 1]
            shape[2 - b] = -1
            row.append((around[0] - around[1]) / span.reshape(shape))
        rows.append(xp.stack(row))
    return xp.stack(rows)


def volume(name: str, rho, u, periodic: Sequence[bool], stride: int, slab: int = 32):
    """The field ``name`` on every ``stride``-th node of a 3D domain (float32, shape about
    S/stride), ``slab`` sampled z-planes at a time; derivatives use the sampled nodes'
    neighbours only, so the cost follows the samples, not the domain."""
    xp = array_module(u)
    nz, ny, nx = rho.shape
    xs, ys = np.arange(0, nx, stride), np.arange(0, ny, stride)
    parts = []
    for first in range(0, nz, stride * slab):
        zs = np.arange(first, min(first + stride * slab, nz), stride)
        if name in NEEDS_NEIGHBOURS:
            g = sampled_gradient(u, (xs, ys, zs), periodic)
            if name == "q_criterion":
                values = derived.q_from_gradient(g)
            else:
                values = xp.sqrt((derived.vorticity_from_gradient(g) ** 2).sum(axis=0))
        else:
            window = (slice(first, zs[-1] + 1, stride), slice(None, None, stride),
                      slice(None, None, stride))
            values = scalar(name, rho[window], u[(slice(None), *window)], periodic)
        parts.append(xp.asarray(values, dtype=xp.float32))
    return xp.concatenate(parts, axis=0)

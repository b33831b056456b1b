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


def local_fetch(rho, u):
    """A fetch of :func:`volume_from` reading ``rho`` and ``u`` of one domain: (ρ, u) at the
    grid of x, y, z index lists (host int arrays)."""
    xp = array_module(u)

    def fetch(xs, ys, zs):
        index = xp.ix_(xp.asarray(zs), xp.asarray(ys), xp.asarray(xs))
        return rho[index], u[(slice(None), *index)]
    return fetch


def sampled_gradient(fetch, picks: Sequence[np.ndarray], sizes: Sequence[int],
                     periodic: Sequence[bool]):
    """G[a, b] = ∂u_a/∂x_b at the grid ``picks`` (x, y, z index lists) of a domain of
    ``sizes`` nodes (x, y, z), from the neighbours of those nodes only (``fetch`` as in
    :func:`volume_from`): shape (3, 3, len(z), len(y), len(x))."""
    columns = []
    for b in range(3):
        plus, minus, span = _neighbours(np, np.asarray(picks[b]), sizes[b], periodic[b])
        around = []
        for shifted in (plus, minus):
            index = list(picks)
            index[b] = shifted
            around.append(fetch(*index)[1])
        xp = array_module(around[0])
        shape = [1, 1, 1]
        shape[2 - b] = -1
        columns.append((around[0] - around[1]) / xp.asarray(span).reshape(shape))
    return array_module(columns[0]).stack(columns, axis=1)  # G[a, b]


def volume(name: str, rho, u, periodic: Sequence[bool], stride: int, slab: int = 32):
    """The field ``name`` on every ``stride``-th node of a 3D domain held in ``rho``, ``u``
    (see :func:`volume_from`)."""
    return volume_from(local_fetch(rho, u), name, tuple(reversed(rho.shape)), periodic, stride,
                       slab)


def volume_from(fetch, name: str, sizes: Sequence[int], periodic: Sequence[bool], stride: int,
                slab: int = 32):
    """The field ``name`` on every ``stride``-th node of a 3D domain of ``sizes`` nodes (x, y,
    z), as float32 (z, y, x), ``slab`` sampled z-planes at a time. ``fetch(xs, ys, zs)`` gives
    (ρ, u) on the grid of those index lists (one domain: :func:`local_fetch`; a distributed
    run: the sum over the ranks of what each holds). Derivatives use the sampled nodes'
    neighbours only, so the cost follows the samples, not the domain."""
    nx, ny, nz = sizes
    xs, ys = np.arange(0, nx, stride), np.arange(0, ny, stride)
    parts = []
    for first in range(0, nz, stride * slab):
        zs = np.arange(first, min(first + stride * slab, nz), stride)
        if name in NEEDS_NEIGHBOURS:
            g = sampled_gradient(fetch, (xs, ys, zs), sizes, periodic)
            xp = array_module(g)
            if name == "q_criterion":
                values = derived.q_from_gradient(g)
            else:
                values = xp.sqrt((derived.vorticity_from_gradient(g) ** 2).sum(axis=0))
        else:
            rho, u = fetch(xs, ys, zs)
            xp = array_module(u)
            values = scalar(name, rho, u, periodic)
        parts.append(xp.asarray(values, dtype=xp.float32))
    return array_module(parts[0]).concatenate(parts, axis=0)

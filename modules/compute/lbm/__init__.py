"""Lattice Boltzmann compute plug-in: BGK, TRT and MRT collision, halfway bounce-back walls
(Ladd's correction for moving walls), periodic axes, uniform body force (Guo forcing).

The NumPy engine here is the reference; :mod:`.cuda` generates kernels from the same collision
code (:mod:`.collision`) for the GPU.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from thelma_py.backend import Backend
from thelma_py.codegen.expr import identity_let
from thelma_py.compute import ComputeEngine, check_memory
from thelma_py.geometry.domain import NodeTags
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.collision import (
    COLLISIONS,
    Relaxation,
    collide,
    trt_omega_minus,
    wall_momentum,
)
from thelma_py.registry import register

STREAMING = ("pull", "push", "aa")


def _check_nu(instance, attribute, value):
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"nu must be a positive kinematic viscosity in lattice units, got {value!r}"
                         f" (tau = 3 nu + 1/2 must exceed 1/2)")
    if 3.0 * value + 0.5 > 50:
        raise ValueError(f"nu = {value} gives tau = {3 * value + 0.5:.1f}; above 50 the scheme "
                         "is inaccurate. Use a finer lattice or a larger lattice velocity.")


def _force_tuple(value):
    return None if value is None else tuple(float(v) for v in value)


@register("compute", "lbm")
@attrs.frozen(kw_only=True)
class Lbm:
    """Lattice Boltzmann: collision bgk|trt|mrt, streaming pull|push|aa (in-place), lattice units."""

    nu: float = attrs.field(validator=_check_nu)
    """Kinematic viscosity [lattice units]; τ = 3ν + ½."""
    collision: str = attrs.field(default="bgk", validator=attrs.validators.in_(COLLISIONS))
    """Collision model."""
    magic: float = attrs.field(default=3.0 / 16.0, validator=attrs.validators.gt(0.0))
    """TRT magic parameter Λ (3/16 puts halfway bounce-back walls exactly for Poiseuille)."""
    mrt_rates: dict = attrs.field(factory=dict, converter=dict)
    """MRT: relaxation rates by moment name, overriding the published defaults."""
    force: tuple | None = attrs.field(default=None, converter=_force_tuple)
    """Uniform body acceleration (g_x, g_y[, g_z]) in lattice units."""
    streaming: str = attrs.field(default="pull", validator=attrs.validators.in_(STREAMING))
    """GPU memory scheme: two buffers (pull, push) or one (aa); the NumPy reference pulls."""

    @property
    def tau(self) -> float:
        return 3.0 * self.nu + 0.5

    @property
    def omega(self) -> float:
        return 1.0 / self.tau

    @property
    def omega_minus(self) -> float:
        return trt_omega_minus(self.omega, self.magic)

    def relaxation(self, lattice: Lattice) -> Relaxation:
        if self.collision != "mrt":
            return Relaxation(lattice, self.collision)
        if lattice.mrt is None:
            raise ValueError(f"MRT is available for D2Q9 and D3Q19, not {lattice.name}; "
                             "use collision='trt' or 'bgk'")
        s = lattice.mrt.rates(float("nan"), **self.mrt_rates)
        return Relaxation(lattice, "mrt", tuple(float(v) for v in s))

    def check(self, lattice: Lattice) -> None:
        if self.force is not None and len(self.force) != lattice.d:
            raise ValueError(f"force needs {lattice.d} components for {lattice.name}, "
                             f"got {self.force}")
        self.relaxation(lattice)

    def create(self, lattice: Lattice, tags: NodeTags, backend: Backend, dtype) -> ComputeEngine:
        self.check(lattice)
        if backend.is_gpu:
            from thelma_py.modules.compute.lbm.cuda import CudaLbm

            return CudaLbm(self, lattice, tags, backend, np.dtype(dtype))
        return NumpyLbm(self, lattice, tags, backend, np.dtype(dtype))


class WallLinks:
    """Per direction: flat indices of nodes whose population i arrives through a wall, and
    Ladd's moving-wall term for each (None where every such wall is at rest)."""

    def __init__(self, lattice: Lattice, tags: NodeTags, dtype: np.dtype):
        self.index: dict[int, np.ndarray] = {}
        self.term: dict[int, np.ndarray | None] = {}
        shape = tags.tags.shape
        table = tags.bc_table
        for i in range(1, lattice.q):
            where = tags.layout.crosses_wall(tags.tags, i)
            if not where.any():
                continue
            flat = np.flatnonzero(where)
            self.index[i] = flat
            window = tuple(slice(1 - c, 1 - c + n) for c, n in
                           zip(reversed(lattice.c[i].tolist()), shape, strict=True))
            upstream_id = tags.halo_bc_id[window].reshape(-1)[flat]
            row = table[upstream_id]
            velocity = [row[:, a] for a in range(lattice.d)]
            term = wall_momentum(lattice, i, velocity, row[:, 3])
            self.term[i] = np.asarray(term, dtype=dtype) if np.any(term) else None


class NumpyLbm(ComputeEngine):
    """Vectorised NumPy LBM, the reference for every GPU variant.

    State: post-collision populations ``f`` of shape (Q, *S) where S = (Nz, Ny, Nx), x fastest.
    One step pulls f_i(x) from x − c_i (periodic wrap; links into walls bounce back), then
    collides. Solid nodes keep their values.
    """

    def __init__(self, params: Lbm, lattice: Lattice, tags: NodeTags, backend: Backend, dtype):
        self.params, self.lattice, self.tags, self.backend, self.dtype = (
            params, lattice, tags, backend, dtype)
        self.relax = params.relaxation(lattice)
        self.walls = WallLinks(lattice, tags, dtype)
        self.solid = np.flatnonzero(tags.solid)
        self.shape = tags.tags.shape
        self.f = np.zeros((lattice.q, *self.shape), dtype=dtype)
        self.omega = dtype.type(params.omega)
        self.omega_minus = dtype.type(params.omega_minus)

    @property
    def traffic_bytes_per_node(self) -> int:
        return 2 * self.lattice.q * self.dtype.itemsize

    @property
    def memory_bytes_per_node(self) -> int:
        return self.lattice.q * self.dtype.itemsize + self.tags.tags.itemsize

    def initialize(self, rho, u) -> None:
        rho = np.asarray(rho, dtype=self.dtype)
        u = [np.asarray(ua, dtype=self.dtype) for ua in u]
        self.f = np.array(self.lattice.equilibrium(rho, u), dtype=self.dtype)

    def stream(self, f: np.ndarray) -> np.ndarray:
        """Pull streaming with halfway bounce-back: returns the pre-collision populations."""
        lat = self.lattice
        axes = tuple(range(lat.d))
        out = np.empty_like(f)
        for i in range(lat.q):
            out[i] = np.roll(f[i], shift=tuple(lat.c[i][::-1]), axis=axes)
        opposite = lat.opposite
        for i, flat in self.walls.index.items():
            bounced = f[opposite[i]].reshape(-1)[flat]
            term = self.walls.term[i]
            out[i].reshape(-1)[flat] = bounced if term is None else bounced + term
        return out

    def step(self, n: int = 1) -> None:
        force = self.params.force
        for _ in range(n):
            incoming = self.stream(self.f)
            post, _, _ = collide(self.relax, list(incoming), identity_let, self.omega,
                                 self.omega_minus, force)
            new = np.array(post, dtype=self.dtype)
            flat_new, flat_old = new.reshape(self.lattice.q, -1), self.f.reshape(self.lattice.q, -1)
            flat_new[:, self.solid] = flat_old[:, self.solid]
            self.f = new

    def macroscopic(self):
        lat = self.lattice
        rho = self.f.sum(axis=0)
        u = np.tensordot(lat.c.T.astype(self.dtype), self.f, axes=1) / rho
        if self.params.force is not None:
            u -= np.asarray(self.params.force, dtype=self.dtype).reshape(-1, *[1] * lat.d) * 0.5
        u[:, self.tags.solid] = 0
        return rho, u

    def state(self) -> dict[str, np.ndarray]:
        return {"f": self.f.copy()}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        f = np.asarray(state["f"])
        if f.shape != self.f.shape or f.dtype != self.f.dtype:
            raise ValueError(f"checkpoint holds f as {f.dtype}{f.shape}, this run needs "
                             f"{self.f.dtype}{self.f.shape}")
        self.f = f.copy()


def check_fits(backend: Backend, nodes: int, bytes_per_node: int) -> None:
    check_memory(backend, nodes, bytes_per_node, hint="or streaming='aa' (one copy of f)")

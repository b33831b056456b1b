"""Link-wise artificial compressibility (LW-ACM) compute plug-ins.

``lwacm``: the two-step scheme (Obrecht et al. 2014, eqs. 15-16, "TheLMA*"): stores f* and the
momentum j = ρ u; each step pulls f*_i from x − c_i (halfway bounce-back with Ladd's moving-wall
term at wall links, exactly as the LBM plug-in), adds κ f^(e,o)_i(x) = κ 3 w_i (c_i · j(x)), takes
the moments, stores f* = f^(e) − κ f^(e,o) and j. ρ, u for output come from the state:
ρ = Σ_i f*_i (the odd part has no mass), u = j / ρ.

``lwacm-fused``: the single-step scheme (Algorithm 2, "Louise"): stores only ρ, u (two copies);
each step rebuilds f*_i(x − c_i) from the upstream ρ, u. Walls act on ρ, u as finite-difference
boundary conditions (:func:`.rule.wall_ghost`): where x − c_i is solid, the upstream values are
the ghost ρ_g = ρ(x) (zero normal density/pressure gradient) and u_g = 2 u_w − u(x) (Dirichlet
velocity u_w at the link midpoint, u_w the velocity of the boundary row of that solid node).

Open boundaries (velocity and equilibrium inlets, pressure and equilibrium outlets, outflow, free
slip on faces, edges and corners), both schemes: the open node is updated like a fluid node, and
a link whose upstream node lies beyond its open face takes a ghost record (ρ_g, u_g) at
x − c_i — the single step as its upstream record, the two-step scheme as the pulled
f*_i(ρ_g, u_g). The boundary sits at the link midpoint, as the walls do; the ghost is the
kind's rule (:data:`.rule.OPEN_GHOSTS`) applied to the mirror point x − c_t, the reflection of
x − c_i across the face (:mod:`.open_links`, CUDA arms :mod:`.open_kernels`).

Curved walls (bodies declared ``interpolated=True``), both schemes: a wall link of an
INTERPOLATED node brings f*_i of a ghost at x − c_i whose odd part uses u extrapolated along
the link through the exact wall point (quadratic from x and x + c_i where the wall is at least
half a link away, the mirror point interpolated between them where it is nearer) and whose even
part is the halfway mirror (ρ(x), 2 u_w − u(x)) (:mod:`.curved`, CUDA :mod:`.curved_kernels`).
Forces on them: −c_i (f*_ī(x) + f_i) per link, f_i that population.

Forces on bodies (``forces`` results): momentum exchange on the wall links, as LBM, with f*
as the populations a node sends (stored by the two-step scheme, rebuilt from ρ, u by the
single step: ``canonical()``) and Ladd's term scaled by 1 − κ (``force_tags``): exact for the
two-step bounce-back; for the single step exact at walls at rest (its ghost u_g = −u returns
f*_ī(x) on the link) and at moving walls up to Ladd's density (its link takes the ghost in the
odd part only: :func:`.rule.moving_wall_ghost`; ρ(x) there, 1 in Ladd's term).

The update rule is in :mod:`.rule`, the NumPy references in :mod:`.reference`, the CUDA
generator in :mod:`.kernels` and the CUDA engines in :mod:`.cuda`. The config-script switch is
one word: ``tp.plugin("compute", "lwacm", nu=...)`` or ``"lwacm-fused"`` instead of ``"lbm"``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from thelma_py.backend import Backend
from thelma_py.compute import ComputeEngine
from thelma_py.compute_params import check_nu, force_tuple
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm.boundaries import rule as boundary_rule
from thelma_py.modules.compute.lwacm.fused_kernels import STAGINGS
from thelma_py.nodes import NodeTags
from thelma_py.registry import register
from thelma_py.store16 import ROUNDINGS, STORES
from thelma_py.subgrid import Smagorinsky, subgrid_model
from thelma_py.tags import OPEN_KINDS, NodeKind, TagLayout
from thelma_py.units import RelaxationTime

MAX_NU = 1.0 / 6.0
"""ν = 1/6 is ω = 1 (κ = 0, where LW-ACM is BGK LBM at τ = 1); for ω < 1 the scheme is unstable
(a Poiseuille channel at τ = 1.02 diverges within 2000 steps)."""


def _check_lwacm_nu(instance, attribute, value):
    check_nu(instance, attribute, value)
    if value > MAX_NU * (1.0 + 1e-12):
        raise ValueError(f"nu = {value} gives omega = {1.0 / (3.0 * value + 0.5):.3f}; LW-ACM is "
                         "stable only for omega >= 1, i.e. nu <= 1/6. Lower nu = U N / Re: a "
                         "smaller lattice velocity U at the same resolution N (or fewer nodes N "
                         "per length); or use compute 'lbm', which takes any nu > 0")


@attrs.frozen(kw_only=True)
class LwacmParameters(RelaxationTime):
    """Parameters shared by both LW-ACM schemes (lattice units)."""

    fused = False
    """Class constant (not a parameter): which scheme :meth:`create` builds."""
    open_face_offset = 0.5
    """Class constant: where the inlets and outlets lie beyond their boundary nodes, in
    spacings (the ghost records sit at the link midpoint; LBM's Zou-He faces, 0, are the nodes
    themselves). A case that places a body at a distance from an inlet reads it."""

    nu: float = attrs.field(validator=_check_lwacm_nu)
    """Kinematic viscosity; ν = (1/ω − ½)/3, i.e. τ = 1/ω = 3ν + ½."""
    force: tuple | None = attrs.field(default=None, converter=force_tuple)
    """Uniform body acceleration (g_x, g_y[, g_z]): u(t+1) = Σ c_i f_i / ρ + g."""
    les: Smagorinsky | None = attrs.field(default=None, converter=subgrid_model)
    """Subgrid model (:mod:`thelma_py.subgrid`): None (off), ``"smagorinsky"`` or
    ``{"name": "smagorinsky", "c_s": 0.1}``. Single step: each node takes its own
    κ = 2 (1 − τ) from |S| of the central differences of its neighbours' u
    (:func:`.rule.single_step`); two-step: |S| from the second moment of the node's pulled f*,
    the eddy stress carried by the f* it writes (:func:`.rule.subgrid_stress`)."""
    equilibrium_order: int = attrs.field(default=2, validator=attrs.validators.in_((2, 3)))
    """2: f^(e) is the second-order equilibrium of the papers. 3: f^(e) also carries its
    third-order Hermite part (the components the lattice holds, :func:`.rule.cubic_i`; the odd
    part f^(e,o) stays 3 w_i ρ c_i·u). The explicit time step of eq. (11) adds −½ u u : ∇∇(ρu)
    to the momentum equation, a viscosity ν − u²/2 along the flow that vanishes at |u| = c_a;
    the third-order part cancels it (a shear wave carried at 0.5 c_a decays at 1.00 ν instead
    of 0.75 ν), but waves polarized in the plane of u and an oblique k move by −6 to +11 %:
    docs/validation/lwacm_energy.md, section 8. Not with open boundaries or interpolated
    bodies (yet)."""

    def memory_bytes_per_node(self, lattice: Lattice, dtype, backend: Backend) -> int:
        """Bytes the engine of :meth:`create` holds per lattice node, known before it is
        built: the two-step f* buffers and j, or the single step's two record buffers (on the
        GPU padded to 4 reals), and the tags."""
        real, tag = np.dtype(dtype).itemsize, TagLayout(lattice).dtype.itemsize
        if not self.fused:
            from thelma_py.modules.compute.lwacm.reference import two_step_memory

            return two_step_memory(lattice, real, tag)
        if backend.is_gpu:  # two buffers of 4-value records (16-bit: 4 codes, 8 B)
            return 8 * (real if getattr(self, "store", "fp32") == "fp32" else 2) + tag
        return 2 * (1 + lattice.d) * real + tag

    def stability_advice(self) -> str:
        """LW-ACM has no collision model to change: LBM MRT is the sturdier scheme. Its own
        limit: the scheme is linearly unstable where |u| exceeds its artificial sound speed."""
        return (super().stability_advice() + f" (LW-ACM is unstable where |u| exceeds its sound "
                f"speed sqrt(2 nu) = {self.sound_speed:.3g}; keep |u| below half of it)"
                ", or use compute 'lbm' with collision='mrt'")

    @property
    def sound_speed(self) -> float:
        """c_a = c_s √(2τ − 1) = √(2ν): the speed of the scheme's pressure waves. The Taylor
        expansion of eq. (11) gives ∂t ρ + (2τ − 1) ∇·(ρu) = ∇²ρ/6; a uniform flow faster
        than c_a is linearly unstable and the incompressibility error goes as (u / c_a)²
        (docs/validation/lwacm_energy.md)."""
        return math.sqrt(2.0 * self.nu)

    @property
    def cubic(self) -> bool:
        """f^(e) carries its third-order part (:attr:`equilibrium_order` 3)."""
        return self.equilibrium_order == 3

    @property
    def kappa(self) -> float:
        """κ = 2 (ω − 1) / ω, the weight of the odd-part correction."""
        return 2.0 * (self.omega - 1.0) / self.omega

    def check(self, lattice: Lattice) -> None:
        if self.force is not None and len(self.force) != lattice.d:
            raise ValueError(f"force needs {lattice.d} components for {lattice.name}, "
                             f"got {self.force}")

    def create(self, lattice: Lattice, tags: NodeTags, backend: Backend, dtype) -> ComputeEngine:
        self.check(lattice)
        kinds = {NodeKind(int(k)) for k in np.unique(tags.kind)}
        supported = {NodeKind.FLUID, NodeKind.WALL, NodeKind.INTERPOLATED} | {
            k for k in OPEN_KINDS if boundary_rule(k).lwacm}
        unsupported = sorted(k.name for k in kinds - supported)
        if unsupported:
            names = ", ".join(sorted(k.name.lower() for k in supported - {NodeKind.FLUID}))
            raise ValueError(f"LW-ACM has no rule for the node kinds {unsupported}; it handles "
                             f"{names} and periodic axes; use compute 'lbm' for the others")
        if self.cubic and (tags.has_open_faces or len(tags.curved_nodes)):
            raise ValueError("equilibrium_order=3 is not combined with open boundaries or "
                             "interpolated bodies yet; use equilibrium_order=2 there")
        dtype = np.dtype(dtype)
        if backend.is_gpu:
            from thelma_py.modules.compute.lwacm import cuda

            engine = cuda.CudaLwacmFused if self.fused else cuda.CudaLwacm
        else:
            from thelma_py.modules.compute.lwacm import reference

            engine = reference.NumpyLwacmFused if self.fused else reference.NumpyLwacm
        return engine(self, lattice, tags, backend, dtype)


@register("compute", "lwacm")
@attrs.frozen(kw_only=True)
class Lwacm(LwacmParameters):
    """LW-ACM, two-step (stores f* and j = ρ u; bounce-back walls); lattice units."""

    fused = False


DENSITIES = ("absolute", "shifted")
"""What the single step's records hold: ρ, or ρ − 1 (:attr:`LwacmFused.density`)."""


@register("compute", "lwacm-fused")
@attrs.frozen(kw_only=True)
class LwacmFused(LwacmParameters):
    """LW-ACM, single step (stores ρ, u only; finite-difference walls); lattice units."""

    fused = True

    store: str = attrs.field(default="fp32", validator=attrs.validators.in_(STORES))
    """Record storage: 'fp32' (the arithmetic type), or 16-bit codes of ρ − 1 and u with fp32
    arithmetic: 'fp16s' (IEEE half) or 'fp16c' (4 exponent, 11 mantissa bits; more accurate),
    the formats of :mod:`thelma_py.store16`: 8 B records instead of 16. The NumPy reference
    rounds through the same format after each step."""
    rounding: str = attrs.field(default="nearest", validator=attrs.validators.in_(ROUNDINGS))
    """16-bit records: 'nearest' (ties to even) or 'stochastic' (unbiased: up with the
    probability of the fraction of a step, random bits hashed from the node's global
    coordinates and the step number, the same in the NumPy reference). Rounding to nearest
    loses every change of u smaller than half a step, which the single-step state (ρ, u only)
    makes often: see docs/DESIGN.md (helper half2)."""

    staging: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(STAGINGS)))
    """16-bit records, how a plane reaches the shared ring: 'registers' (loaded a plane
    ahead, decoded once per staged record) or 'async' (raw codes copied by cp.async as the
    fp32 records are, decoded at each read; fp16s only): see docs/DESIGN.md (rec16). None:
    'async' for fp16s (faster with either rounding: NOTES runs 32, 47), else 'registers'."""

    open_ghosts: str = attrs.field(default="sides",
                                   validator=attrs.validators.in_(("sides", "links")))
    """GPU, fp32 records: where the ghosts of open boundaries come from. 'sides': free-slip
    ghosts beyond the side faces staged into the kernel's shared ring as copies of their mirror
    records, so the nodes of those faces take the plain path, and the end planes of the march
    axis (inlets, outlets across it) updated per link (:mod:`.side_ghosts`; used where every
    other open link is such a copy, else 'links'); 'links': every ghost built per link inside
    the update of its open node (the arms of ``open_kernels``). Both give the NumPy reference's
    values: docs/DESIGN.md, "Free-slip side ghosts"."""

    density: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(DENSITIES)))
    """What a record's first value holds: 'absolute' (ρ) or 'shifted' (ρ − 1, and the update
    sums the small parts of each f*_i, :func:`.rule.single_step`). In fp32 a record of ρ near
    1 resolves 6e-8, less than one step changes ρ by at ν ~ 1e-5: the Re 1600 vortex at
    u0 = L / 3200 (64³) then dissipates several times its viscosity (docs/DESIGN.md, issue #17
    helper lesfix). fp32 records only, without open boundaries or interpolated bodies (yet).
    None: 'shifted' with LES (the runs at such viscosities) where it runs, else 'absolute'."""

    @rounding.validator
    def _check_rounding(self, _, value):
        if value != "nearest" and self.store == "fp32":
            raise ValueError(f"rounding={value!r} is for 16-bit records; give store='fp16s' "
                             "or 'fp16c', or leave rounding='nearest'")

    @staging.validator
    def _check_staging(self, _, value):
        if value not in (None, "registers") and self.store == "fp32":
            raise ValueError(f"staging={value!r} is for 16-bit records; give store='fp16s' "
                             "or 'fp16c', or leave staging='registers'")
        if value == "async" and self.store == "fp16c":
            raise ValueError("staging='async' stages fp16s codes only (fp16c's decoding at "
                             "every read halves the speed, and its codes vary from run to run "
                             "on an H100); use staging='registers' with store='fp16c'")

    def create(self, lattice: Lattice, tags: NodeTags, backend: Backend, dtype) -> ComputeEngine:
        if self.store != "fp32" and np.dtype(dtype) != np.float32:
            raise ValueError(f"store={self.store!r} stores 16 bits and computes in float32; "
                             f"use precision float32 (got {np.dtype(dtype).name})")
        open_kinds = sorted(NodeKind(int(k)).name.lower() for k in np.unique(tags.kind)
                            if NodeKind(int(k)) in OPEN_KINDS)
        if self.store != "fp32" and len(tags.curved_nodes):
            raise ValueError(f"store={self.store!r}: 16-bit single-step records are not "
                             "combined with interpolated bodies yet; use store='fp32' there, "
                             "or declare the bodies without interpolated=True")
        # decided from the whole geometry, so that every rank of a distributed run agrees
        plain = (self.store == "fp32" and not tags.has_open_faces
                 and not tags.interpolated_ids)
        if self.density == "shifted" and not plain:
            raise ValueError("density='shifted' is for fp32 records without open boundaries "
                             "or interpolated bodies (yet); use density='absolute' there")
        if self.store != "fp32" and open_kinds:
            raise ValueError(f"store={self.store!r}: 16-bit single-step records are not "
                             f"combined with open boundaries ({', '.join(open_kinds)}) yet; "
                             "use store='fp32' there")
        density = self.density or ("shifted" if self.les is not None and plain else "absolute")
        staging = self.staging or ("async" if self.store == "fp16s" else "registers")
        params = attrs.evolve(self, density=density, staging=staging)
        return super(LwacmFused, params).create(lattice, tags, backend, dtype)

"""Collision operators written once, for NumPy arrays and for traced CUDA expressions.

Every function takes populations as a list indexed by lattice direction, and a ``let`` callable
that names intermediates (identity for NumPy, :meth:`Emitter.let` for CUDA). Run-time scalars
(ω, ω⁻) arrive as values: Python floats for NumPy, kernel-argument names for CUDA.

The post-collision state is f' = f − K (f − f_eq + F/2) + F, with the relaxation operator K of
a collision model. F is Guo's forcing term for a uniform acceleration g, and the velocity is
then u = (Σ c f)/ρ + g/2.

Collision models are a table: one :class:`CollisionModel` subclass per file in
:mod:`.collisions`, registered by name with :func:`register_collision`; ``Lbm(collision=...)``
takes a name or an instance (:func:`collision_model`).

With a subgrid model (``Lbm(les=...)``, :mod:`thelma_py.subgrid`) :func:`collide` replaces the
run-time ω by a local one before relaxing: τ from the node's own non-equilibrium momentum flux
Π⁽¹⁾ = Σ c c (f − f_eq + F/2) (Guo's F/2 included: the second-order-accurate Π⁽¹⁾ with a body
force), no neighbour reads, no stored field. Every model gets that ω (and its ω⁻ from it).
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Sequence
from typing import ClassVar

import attrs

from thelma_py.codegen.expr import Expr, dot, identity_let, sqrt
from thelma_py.lattice import Lattice
from thelma_py.subgrid import Smagorinsky, subgrid_model

_MODELS: dict[str, type[CollisionModel]] = {}


def moments(lattice: Lattice, f: Sequence, let: Callable, force: Sequence[float] | None = None,
            delta=None):
    """Density and velocity from populations: (ρ, [u_x, u_y, ...]); ``delta``: ``f`` holds
    f_i − w_i and δρ = Σ_i (f_i − w_i) is given, so ρ = 1 + δρ (Σ_i w_i = 1, Σ_i c_i w_i = 0)."""
    rho = let(sum(f[1:], f[0]) if delta is None else delta + 1.0, "rho")
    inv_rho = let(1.0 / rho, "inv_rho")
    u = []
    for a, axis in enumerate("xyz"[: lattice.d]):
        j = dot(lattice.c[:, a], f)
        ua = j * inv_rho
        if force is not None and force[a] != 0.0:
            ua = ua + 0.5 * force[a]
        u.append(let(ua, f"u{axis}"))
    return rho, u


def guo_forcing(lattice: Lattice, rho, u: Sequence, force: Sequence[float]) -> list:
    """Guo, Zheng & Shi (2002) source term F_i for a uniform acceleration ``force``."""
    out = []
    for ci, wi in zip(lattice.c, lattice.w, strict=True):
        cg = sum(float(c) * g for c, g in zip(ci, force, strict=True))
        ug = sum(ua * g for ua, g in zip(u, force, strict=True) if g != 0.0)
        cu = dot(ci, u)
        out.append(float(wi) * rho * (3.0 * (cg - ug) + 9.0 * cu * cg))
    return out


@attrs.frozen(kw_only=True)
class CollisionModel(abc.ABC):
    """A collision model: its own parameters and its relaxation operator K, traced.

    Subclasses (one file each in :mod:`.collisions`) are frozen attrs classes registered with
    :func:`register_collision`; ``name`` is the registered name (kept in checkpoints).
    """

    name: str = attrs.field(init=False, repr=False,
                            default=attrs.Factory(lambda self: _registered_name(type(self)),
                                                  takes_self=True))

    sturdier: ClassVar[str | None] = None
    """A more robust model to suggest when a run with this one diverges (None: none)."""

    @abc.abstractmethod
    def relax(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus) -> list:
        """K g for non-equilibrium populations ``g`` (Σ g = 0, Σ c g = 0): a list of Q values,
        NumPy arrays or traced expressions alike."""

    supports_les: ClassVar[bool] = True
    """Whether the model takes a local ω from a subgrid model (``Lbm(les=...)``)."""

    def relax_at(self, lattice: Lattice, g: Sequence, let: Callable, omega, omega_minus,
                 rho, u: Sequence) -> list:
        """K g at a node of density ``rho`` and velocity ``u``: what :func:`collide` calls.
        By default :meth:`relax` (K does not depend on them); models whose operator does
        (the recursive model's equilibrium moments) override this."""
        return self.relax(lattice, g, let, omega, omega_minus)

    def post_collision(self, lattice: Lattice, f: Sequence, rho, u: Sequence, let: Callable,
                       omega, omega_minus, force: Sequence[float] | None,
                       uniforms: tuple | None = None) -> list | None:
        """Post-collision populations for a model that collides whole populations (cumulant;
        ``u`` includes g/2, and the model adds the force itself), or None: the generic
        f' = f − K (f − f_eq + F/2) + F of :func:`collide`, with :meth:`relax`. ``uniforms``:
        :meth:`uniforms` at this ω, computed once (None: the model evaluates them here)."""
        return None

    def uniforms(self, omega, let: Callable = identity_let) -> tuple:
        """Values that depend on the run-time ω alone (none by default). The engines compute
        them once, in the run's precision, and the kernels take them as arguments
        (:func:`uniform_arguments`) instead of evaluating them at every node; the model gets
        them back as :meth:`post_collision`'s ``uniforms``."""
        return ()

    def omega_minus(self, omega: float) -> float:
        """The second run-time rate the engines pass (TRT's ω⁻); ω for models without one.
        Plain arithmetic: with LES it runs on the traced local ω too."""
        return omega

    def unsupported(self, lattice: Lattice) -> str | None:
        """Why this model cannot run on ``lattice``, or None (the solver refuses the pair with
        this reason)."""
        return None

    def check(self, lattice: Lattice) -> None:
        """Raise ValueError where the model cannot run on ``lattice`` with these parameters."""
        reason = self.unsupported(lattice)
        if reason:
            raise ValueError(reason)


def register_collision(name: str) -> Callable[[type], type]:
    """Class decorator: make a :class:`CollisionModel` subclass available as ``name``."""

    def decorate(cls: type) -> type:
        existing = _MODELS.get(name)
        if existing is not None and existing is not cls:
            raise ValueError(f"collision model {name!r} is already registered by "
                             f"{existing.__module__}.{existing.__qualname__}")
        _MODELS[name] = cls
        return cls

    return decorate


MODEL_PACKAGE = "thelma_py.modules.compute.lbm.collisions"
MODEL_FILES = ("bgk", "trt", "mrt", "regularized", "recursive", "cumulant")
"""The built-in collision models: one file each in :data:`MODEL_PACKAGE`, imported by name on
first use (so this module never imports the package that imports it)."""


def _registered_name(cls: type) -> str:
    for name, model in _MODELS.items():
        if model is cls:
            return name
    raise TypeError(f"{cls.__qualname__} is not a registered collision model: decorate it "
                    "with @register_collision(name)")


def collision_models() -> dict[str, type[CollisionModel]]:
    """The registered collision models by name (the built-in files imported on first use)."""
    for module in MODEL_FILES:
        importlib.import_module(f"{MODEL_PACKAGE}.{module}")
    return dict(sorted(_MODELS.items()))


def collision_model(spec: str | dict | CollisionModel) -> CollisionModel:
    """A model from a name (default parameters), a dict ``{"name": ..., **parameters}`` (as
    checkpoints record it) or an instance (returned as is)."""
    if isinstance(spec, CollisionModel):
        return spec
    models = collision_models()
    params = dict(spec) if isinstance(spec, dict) else {}
    name = params.pop("name", None) if isinstance(spec, dict) else spec
    if not isinstance(name, str):
        raise TypeError(f"collision must be a model name, a dict with 'name' or a "
                        f"CollisionModel, got {spec!r}")
    if name not in models:
        raise ValueError(f"unknown collision model {name!r}; valid: {', '.join(models)}")
    valid = [a.alias for a in attrs.fields(models[name]) if a.init]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(f"collision model {name!r} takes no parameter(s) {unknown}; valid: "
                         f"{', '.join(valid) or '(none)'}")
    return models[name](**params)


@attrs.frozen
class Relaxation:
    """A collision model bound to a lattice: the operator K that :func:`collide` applies."""

    lattice: Lattice
    model: CollisionModel = attrs.field(converter=collision_model)
    les: Smagorinsky | None = attrs.field(default=None, converter=subgrid_model)
    """Subgrid model giving each node its own ω (None: the run-time ω everywhere)."""

    def __attrs_post_init__(self) -> None:
        self.model.check(self.lattice)
        if self.les is not None and not self.model.supports_les:
            able = [n for n, m in collision_models().items() if m.supports_les]
            raise ValueError(f"collision model {self.model.name!r} has no LES; use les=None or "
                             f"one of the collision models {', '.join(able)}")

    @property
    def kind(self) -> str:
        """The model's name (it names the generated kernels)."""
        return self.model.name

    @property
    def shifts(self) -> bool:
        """Whether :func:`collide` takes populations shifted by −w_i: models that relax
        f − f_eq (every one but those colliding whole populations, the cumulant)."""
        return type(self.model).post_collision is CollisionModel.post_collision

    def uniform_values(self, omega) -> tuple | None:
        """The model's :meth:`~CollisionModel.uniforms` at the run's ω (give it as a scalar of
        the run's dtype: NumPy scalar arithmetic then rounds in that precision, so the NumPy
        and CUDA engines hold the same values), or None with LES, where ω is each node's own
        and the model evaluates them at the node."""
        return None if self.les is not None else self.model.uniforms(omega)

    def apply(self, g: Sequence, let: Callable, omega, omega_minus=None, rho=None,
              u: Sequence | None = None) -> list:
        """K g for non-equilibrium populations ``g`` at a node of density ``rho``, velocity
        ``u``."""
        return self.model.relax_at(self.lattice, g, let, omega, omega_minus, rho, u)


def stress_norm(lattice: Lattice, g: Sequence, let: Callable):
    """|Π| = √(Π : Π) of Π = Σ_i c_i c_i g_i (the off-diagonal entries count twice)."""
    c, d = lattice.c, lattice.d
    total = 0.0
    for a in range(d):
        for b in range(a, d):
            pab = let(dot(c[:, a] * c[:, b], g))
            term = pab * pab if a == b else 2.0 * (pab * pab)
            total = term if isinstance(total, float) and total == 0.0 else total + term
    return sqrt(total)


def local_rates(relax: Relaxation, g: Sequence, let: Callable, omega, rho):
    """(ω, ω⁻) of one node under the subgrid model: τ from τ₀ = 1/ω and |Π⁽¹⁾| of ``g``."""
    tau = let(relax.les.tau_from_stress(1.0 / omega, stress_norm(relax.lattice, g, let), rho),
              "tau_les")
    omega_les = let(1.0 / tau, "omega_les")
    minus = relax.model.omega_minus(omega_les)
    return omega_les, (minus if minus is omega_les else let(minus, "omega_minus_les"))


def _nonequilibrium(lat: Lattice, f: Sequence, let: Callable, rho, u: Sequence,
                    force: Sequence[float] | None, delta=None):
    """(f_eq, Guo's F or None, f − f_eq + F/2); with ``delta`` (δρ) f and f_eq less w_i."""
    feq = lat.equilibrium(rho, u) if delta is None else lat.equilibrium_shifted(delta, rho, u)
    forcing = guo_forcing(lat, rho, u, force) if force is not None and any(force) else None
    if forcing is None:
        neq = [let(fi - ei) for fi, ei in zip(f, feq, strict=True)]
    else:
        neq = [let(fi - ei + 0.5 * Fi) for fi, ei, Fi in zip(f, feq, forcing, strict=True)]
    return feq, forcing, neq


def uniform_arguments(relax: Relaxation) -> tuple[str, ...]:
    """Names of the kernel arguments (``real_t``) that carry the model's uniforms
    (:meth:`Relaxation.uniform_values`): none for most models and with LES."""
    traced = relax.uniform_values(Expr("omega", atom=True))
    return tuple(f"uniform{k}" for k in range(len(traced or ())))


def hold_uniforms(engine, relax: Relaxation) -> tuple[str, ...]:
    """Set ``engine.uniform0…`` to :meth:`Relaxation.uniform_values` at ``engine.omega`` (a
    scalar of the run's dtype), in ``engine.dtype``: a CUDA engine's kernels read their
    arguments from its attributes. Returns the argument names (:func:`uniform_arguments`)."""
    names = uniform_arguments(relax)
    for name, value in zip(names, relax.uniform_values(engine.omega) or (), strict=True):
        setattr(engine, name, engine.dtype.type(value))
    return names


def collide(relax: Relaxation, f: Sequence, let: Callable, omega, omega_minus=None,
            force: Sequence[float] | None = None, shifted: bool = False,
            uniforms: tuple | None = None):
    """One collision: returns (post-collision populations, ρ, u). ``shifted``: ``f`` and the
    result hold f_i − w_i (16-bit storage's values: no w_i added at each read and taken away
    at each write; :meth:`Relaxation.shifts`), the equilibrium f_eq − w_i from δρ = Σ_i f_i.
    ``uniforms``: :meth:`Relaxation.uniform_values` at ``omega`` (kernel arguments or
    numbers; ignored with LES, whose ω is local)."""
    lat = relax.lattice
    if shifted and not relax.shifts:
        raise ValueError(f"collision model {relax.kind!r} collides whole populations; it "
                         "takes no shifted ones")
    delta = let(sum(f[1:], f[0]), "drho") if shifted else None
    rho, u = moments(lat, f, let, force, delta)
    forcing = None
    neq = None
    if relax.les is not None:  # the local rates come from f − f_eq, for every model
        feq, forcing, neq = _nonequilibrium(lat, f, let, rho, u, force, delta)
        omega, omega_minus = local_rates(relax, neq, let, omega, rho)
        uniforms = None
    whole = relax.model.post_collision(lat, f, rho, u, let, omega, omega_minus, force,
                                       uniforms=uniforms or None)
    if whole is not None:  # a model that does not relax f − f_eq (cumulant)
        return whole, rho, u
    if neq is None:
        feq, forcing, neq = _nonequilibrium(lat, f, let, rho, u, force, delta)
    relaxed = relax.apply(neq, let, omega, omega_minus, rho, u)
    post = [fi - ri for fi, ri in zip(f, relaxed, strict=True)]
    if forcing is not None:
        post = [p + Fi for p, Fi in zip(post, forcing, strict=True)]
    return post, rho, u


def wall_momentum(lattice: Lattice, i: int, velocity: Sequence, rho_wall) -> object:
    """Ladd's moving-wall term for population i leaving a wall: 2 w_i ρ_w (c_i · u_w) / c_s²."""
    cu = dot(lattice.c[i], velocity)
    return (2.0 * float(lattice.w[i]) / lattice.cs2) * rho_wall * cu


def trt_omega_minus(omega: float, magic: float) -> float:
    """ω⁻ from ω⁺ and the magic parameter Λ = (1/ω⁺ − ½)(1/ω⁻ − ½)."""
    return 1.0 / (magic / (1.0 / omega - 0.5) + 0.5)

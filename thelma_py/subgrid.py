"""Subgrid-scale models for large-eddy simulation, shared by the compute plug-ins.

A model is a parameter of a compute plug-in (``Lbm(les=...)``, ``Lwacm(les=...)``): None (the
default) runs the resolved equations, ``"smagorinsky"`` the Smagorinsky model with its default
constant, ``{"name": "smagorinsky", "c_s": 0.1}`` (what checkpoints record) or an instance sets it.

Smagorinsky (1963): the eddy viscosity ν_t = (C_s Δ)² |S|, |S| = √(2 S:S), with Δ = 1 lattice
spacing. The effective relaxation time is τ = τ₀ + 3 ν_t. The functions below are plain
arithmetic, so they run on NumPy arrays and on traced CUDA expressions alike.
"""

from __future__ import annotations

import math

import attrs

from thelma_py.codegen.expr import sqrt

DEFAULT_C_S = 0.16
"""Lilly's estimate for isotropic turbulence is about 0.17; wall-bounded flows (channels) are
usually run with 0.1."""


def _check_c_s(instance, attribute, value) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"les c_s must be a Smagorinsky constant in [0, 1] (usually 0.1-0.17), "
                         f"got {value!r}")


@attrs.frozen(kw_only=True)
class Smagorinsky:
    """Smagorinsky eddy viscosity ν_t = (C_s Δ)² |S| (Δ = one lattice spacing)."""

    c_s: float = attrs.field(default=DEFAULT_C_S, validator=_check_c_s)
    """The Smagorinsky constant C_s."""

    name = "smagorinsky"

    def tau_from_stress(self, tau0, stress_norm, rho):
        """τ from the non-equilibrium momentum flux of a lattice Boltzmann node (no neighbour
        reads): with S = −Π⁽¹⁾ / (2 ρ c_s² τ) and c_s² = 1/3, τ = τ₀ + 3 C_s² |S| is the
        positive root of τ² − τ₀ τ − (9/√2) C_s² |Π⁽¹⁾| / ρ = 0 (Hou et al. 1996), where
        ``stress_norm`` is |Π⁽¹⁾| = √(Π⁽¹⁾ : Π⁽¹⁾)."""
        k = 18.0 * math.sqrt(2.0) * self.c_s * self.c_s
        return 0.5 * (tau0 + sqrt(tau0 * tau0 + k * stress_norm / rho))

    def tau_from_strain(self, tau0, strain_norm):
        """τ from a strain rate given directly (a velocity gradient): ``strain_norm`` is
        |S| = √(2 S:S)."""
        return tau0 + 3.0 * self.c_s * self.c_s * strain_norm

    def as_dict(self) -> dict:
        """The model as a checkpoint records it."""
        return {"name": self.name, "c_s": self.c_s}


MODELS = {"smagorinsky": Smagorinsky}


def subgrid_model(spec) -> Smagorinsky | None:
    """attrs converter: None, a model name, ``{"name": ..., **parameters}`` or an instance."""
    if spec is None or isinstance(spec, Smagorinsky):
        return spec
    params = dict(spec) if isinstance(spec, dict) else {}
    name = params.pop("name", None) if isinstance(spec, dict) else spec
    if name not in MODELS:
        raise ValueError(f"unknown les model {name!r}; valid: None (no subgrid model), "
                         f"{', '.join(repr(n) for n in MODELS)}")
    valid = [a.name for a in attrs.fields(MODELS[name])]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(f"les model {name!r} takes no parameter(s) {unknown}; valid: "
                         f"{', '.join(valid)}")
    return MODELS[name](**params)

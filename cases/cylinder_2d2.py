"""Schäfer & Turek (1996) benchmark 2D-2: flow around a cylinder at Re = 100 (vortex shedding).

The geometry of :mod:`thelma_py.cases.cylinder` (``n`` nodes per diameter, interpolated
bounce-back on the cylinder, parabolic Zou-He inflow, pressure outlet). The forces plug-in
records c_D and c_L every n/4 steps; the report gives the Strouhal number from the lift period
and the maximum c_D and c_L over the second half of the run, against the published intervals
(St 0.295-0.305, c_D,max 3.22-3.24, c_L,max 0.99-1.01).

The default u_max = 0.05 is the validated setting (docs/validation/schaefer_turek.md): at
n = 20, τ = 0.52 and St lies inside the published interval; n = 40 (τ = 0.54) also brings c_L,max
inside it. u_max = 0.1 doubles the compressibility error of c_D,max (+3.5 % against +1.9 %).

Run::

    thelma run cases/cylinder_2d2.py --device cuda --set n=40 --steps 320000
    thelma run cases/cylinder_2d2.py --device cuda --set n=40 --set compute=lwacm-fused \
        --set u_max=0.0125 --steps 480000              # LW-ACM, curved cylinder, 30 periods

``compute`` "lwacm" / "lwacm-fused" runs LW-ACM, whose compressibility goes with u_max / √(2ν):
its runs take :func:`lwacm_u_max` (n / 3200, at most 0.05).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

import thelma_py as tp
from thelma_py.cases import run
from thelma_py.cases.cylinder import CYLINDER_ID
from thelma_py.cases.cylinder import build as cylinder

DEFAULT_STEPS = 160_000
"""400 n / u_max at the defaults (n = 20, u_max = 0.05), about 40 shedding periods: the
shedding grows from round-off and is periodic over the second half."""

SCHAEFER_TUREK_2D2 = {"St": (0.295, 0.305), "c_D_max": (3.22, 3.24), "c_L_max": (0.99, 1.01)}
"""Published intervals of benchmark 2D-2 (Re = 100, periodic vortex shedding)."""

LWACM_U_PER_N = 1.0 / 3200.0
"""LW-ACM's inflow centre speed per node per diameter (:func:`lwacm_u_max`)."""

__all__ = ["DEFAULT_STEPS", "LWACM_U_PER_N", "SCHAEFER_TUREK_2D2", "build", "force_history",
           "lwacm_u_max", "report", "shedding_measures"]


def lwacm_u_max(n: int) -> float:
    """The inflow centre speed of the LW-ACM runs: n / 3200, at most 0.05 (LBM's setting).

    LW-ACM's pressure waves travel at c_a = √(2ν) (docs/validation/lwacm_energy.md), and at
    Re = 100 ν = 2 u_max n / 300, so u_max / c_a = √(75 u_max / n); u_max ∝ n holds it at
    0.153 at every n, and a shedding period takes 16 000 steps. St falls with (u_max / c_a)²:
    single step, n = 20 (CPU, NumPy), St 0.2929 / 0.2969 / 0.2993 at u_max = 0.025 / 0.0125 /
    0.00625 (u_max / c_a = 0.31 / 0.22 / 0.153), linear in u_max towards 0.3013 (LBM TRT at
    u_max = 0.05: 0.3011), about −28 % (u_max / c_a)²; at 0.153 −0.59 % against LBM, inside
    the 1 % bar (docs/validation/schaefer_turek.md, "LW-ACM")."""
    return min(0.05, LWACM_U_PER_N * n)


def build(*, n: int = 20, u_max: float = 0.05, collision: str = "trt", interpolated: bool = True,
          results: Sequence = (), device: str = "auto", precision: str = "float64",
          compute: str = "lbm", every: int | None = None) -> tp.Solver:
    """The 2D-1 channel at Re = 100, with a forces plug-in recording c_D and c_L every
    ``every`` steps (default n/4: at least 100 samples per shedding period at u_max ≤ 0.1);
    ``results`` are added to the run.
    ``compute``: "lbm" (with ``collision``), or "lwacm" / "lwacm-fused" (curved walls with
    ``interpolated``; their channel is one spacing longer, :func:`.cylinder.build`)."""
    history = tp.plugin("results", "forces", every=every or max(1, n // 4), bodies=[CYLINDER_ID],
                        velocity=2.0 * u_max / 3.0, area=float(n))
    return cylinder(n=n, reynolds=100.0, u_max=u_max, collision=collision,
                    interpolated=interpolated, tolerance=None, results=[history, *results],
                    device=device, precision=precision, compute=compute)


# -- measures ----------------------------------------------------------------------------------
def force_history(solver: tp.Solver) -> tuple[list, list, list]:
    """(steps, c_D, c_L) of the cylinder from the case's forces plug-in."""
    records = next(r for r in solver.results if getattr(r, "history", None) is not None).history
    return ([r["step"] for r in records], [r[CYLINDER_ID]["cD"] for r in records],
            [r[CYLINDER_ID]["cL"] for r in records])


def shedding_measures(steps, c_d, c_l, n: int, u_mean: float) -> dict[str, float]:
    """St = D f / U (D = ``n`` nodes, U = ``u_mean``), max c_D and max c_L over the second half
    of a force history (step, c_D, c_L arrays), where shedding is periodic. The period is the
    mean spacing of the upward zero crossings of c_L − mean(c_L), each located by linear
    interpolation between samples; NaN with fewer than three crossings."""
    t, cd, cl = (np.asarray(v, dtype=np.float64) for v in (steps, c_d, c_l))
    late = t >= t[0] + (t[-1] - t[0]) / 2
    t, cd, cl = t[late], cd[late], cl[late]
    s = cl - cl.mean()
    up = np.flatnonzero((s[:-1] < 0) & (s[1:] >= 0))
    crossings = t[up] + (t[up + 1] - t[up]) * (-s[up]) / (s[up + 1] - s[up])
    period = float(np.diff(crossings).mean()) if len(crossings) >= 3 else math.nan
    return {"St": n / (period * u_mean), "c_D_max": float(cd.max()),
            "c_L_max": float(cl.max()), "periods": max(len(crossings) - 1, 0)}


def report(solver: tp.Solver, *, n: int, u_max: float, **_) -> str:
    m = shedding_measures(*force_history(solver), n, 2.0 * u_max / 3.0)
    return ", ".join(f"{k} = {m[k]:.4f} (published {lo}-{hi})"
                     for k, (lo, hi) in SCHAEFER_TUREK_2D2.items()) + \
        f" over {m['periods']} periods"


if __name__ == "__main__":
    run(sys.modules[__name__])

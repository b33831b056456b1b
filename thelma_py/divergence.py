"""Divergence checks of a run: non-finite values and speeds above a bound, with the first node.

In a distributed run every rank learns whether any rank found a bad node, so that all ranks
stop together; the position is named by the rank that holds it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from thelma_py.units import STABILITY_ADVICE

if TYPE_CHECKING:
    from thelma_py.solver import Solver


class DivergenceError(RuntimeError):
    """The run produced NaN or infinity, or a speed above ``max_velocity``; the message gives
    the step and the first bad node."""


def _mpi_lor():
    from mpi4py import MPI

    return MPI.LOR


def anywhere(solver: Solver, flag: bool) -> bool:
    """True on every rank when ``flag`` holds on any (so that all ranks stop together)."""
    if solver.rank_box is None:
        return flag
    return bool(solver.rank_box.cart.allreduce(flag, op=_mpi_lor()))


def first_position(solver: Solver, bad) -> tuple[int, ...]:
    """Global (x, y[, z]) of the first True node of a backend boolean array."""
    flat = int(solver.backend.xp.argmax(bad.reshape(-1)))
    index = np.unravel_index(flat, bad.shape)
    return tuple(int(i) + lo for i, lo in zip(reversed(index), solver.tags.lower, strict=True))


def _advice(solver: Solver) -> str:
    """What to change, for the scheme in use: its compute plug-in's ``stability_advice()``."""
    advice = getattr(solver.compute, "stability_advice", None)
    return advice() if callable(advice) else STABILITY_ADVICE


def _axes(position: tuple[int, ...]) -> str:
    return f"x, y{', z' if len(position) == 3 else ''}"


def check_finite(solver: Solver) -> None:
    """Raise :class:`DivergenceError` naming the first node where ρ or u is not finite.

    An engine that keeps its populations in 16 bits (``lean``) first checks its codes
    (``all_finite()``, no decode): where every f_i is finite, so are ρ = Σ f_i and u = Σ c_i
    f_i / ρ but at ρ = 0, which no finite run reaches without an infinite population a step
    later. Only a failed check decodes ρ and u to name the node (a whole-state decode of a
    100 M-node D3Q27 state took 0.5 s every 1000 steps, a tenth of the stepping)."""
    engine = solver.engine
    if getattr(engine, "lean", False) and engine.all_finite():
        return
    rho, u = engine.macroscopic()
    xp = solver.backend.xp
    bad = ~xp.isfinite(rho) | ~xp.isfinite(u).all(axis=0)
    if not anywhere(solver, bool(bad.any())):
        return
    position = first_position(solver, bad) if bool(bad.any()) else "(on another rank)"
    raise DivergenceError(
        f"the run diverged: first non-finite value at step {solver.time_step}, node "
        f"({_axes(position)}) = {position}. To stabilise it: {_advice(solver)}.")


def check_velocity(solver: Solver) -> None:
    """Raise :class:`DivergenceError` at the first node where |u| > ``max_velocity``."""
    limit = solver.max_velocity
    if limit is None:
        return
    u = solver.engine.macroscopic()[1]
    speed2 = (u * u).sum(axis=0)
    bad = speed2 > limit**2
    if not anywhere(solver, bool(bad.any())):
        return
    if not bool(bad.any()):
        raise DivergenceError(f"|u| exceeds max_velocity = {limit} at step "
                              f"{solver.time_step} on another rank")
    position = first_position(solver, bad)
    speed = math.sqrt(float(speed2.reshape(-1)[int(solver.backend.xp.argmax(bad.reshape(-1)))]))
    raise DivergenceError(
        f"|u| = {speed:.4g} exceeds max_velocity = {limit} at step "
        f"{solver.time_step}, first at node ({_axes(position)}) = "
        f"{position}. The run is going unstable: {_advice(solver)}.")

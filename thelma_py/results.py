"""The results contract: what the solver calls on a results plug-in, and what it may declare.

A results plug-in subclasses :class:`Results`. Every hook has a no-op default, so a plug-in
defines only the ones it needs, and the solver, the checkpoint format and distributed runs
call them without asking whether they exist. Capabilities are class attributes:

- ``supports_distributed``: it runs on every rank of a distributed run (the others are
  refused there);
- ``runs_last``: it is called after the other results due at the same step (checkpoints, so
  that a resumed run does not repeat outputs of that step).

A plain object with a ``schedule`` and ``__call__(solver)`` is still accepted: the solver
adapts it with :func:`as_results`, which also takes over what was documented before the base
class (optional ``start``, ``begin_run``, ``finish`` and a ``supports_distributed`` flag).
Saved state, ``flush``, ``on_interrupt`` and ``runs_last`` need the base class.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from thelma_py.solver import Solver


class Schedule(Protocol):
    """When a results plug-in is due (:class:`thelma_py.schedule.Every` is one)."""

    def due(self, step: int) -> bool: ...

    def next_after(self, step: int) -> int: ...


class Results:
    """Base class of results plug-ins: no-op hooks and declared capabilities."""

    supports_distributed: ClassVar[bool] = False
    """Runs on every rank of a distributed run (it uses only rank-aware solver methods)."""
    runs_last: ClassVar[bool] = False
    """Called after the other results due at the same step."""
    plugin_name: ClassVar[str | None] = None
    """Set by :func:`thelma_py.registry.register`."""
    schedule: Schedule | None = None
    """When :meth:`__call__` is due; None: never (the plug-in acts only in its hooks)."""

    def start(self, solver: Solver) -> None:
        """Once, before the first step of the first run (check output directories here)."""

    def begin_run(self, solver: Solver, end_step: int) -> None:
        """At the start of every :meth:`Solver.run`, with the step it will end at."""

    def __call__(self, solver: Solver) -> None:
        """Write or record the output of this step (when :attr:`schedule` is due)."""

    def finish(self, solver: Solver) -> None:
        """Close files and indexes (:meth:`Solver.finish`)."""

    def flush(self) -> None:
        """Complete queued output now (a checkpoint is about to record this plug-in's state)."""

    def state_dict(self) -> dict | None:
        """What a checkpoint saves to resume this plug-in (JSON types), or None."""
        return None

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""

    def state_arrays(self) -> dict[str, Any]:
        """Arrays a checkpoint keeps beside :meth:`state_dict` (host copies), or none: they go
        into the checkpoint's state file, under its checksum."""
        return {}

    def load_state_arrays(self, solver: Solver, arrays: dict[str, Any]) -> None:
        """Restore what :meth:`state_arrays` returned (after :meth:`load_state_dict`)."""

    def on_interrupt(self, solver: Solver) -> Path | None:
        """SIGINT/SIGTERM stopped the run at this step: write a checkpoint and return its
        directory, or None (the default: nothing to write)."""
        return None

    @property
    def label(self) -> str:
        """Registered name, else the class name (keys saved state in checkpoints)."""
        return self.plugin_name or type(self).__name__


class _Adapted(Results):
    """A plain results object seen through the :class:`Results` interface."""

    def __init__(self, plain: Any):
        self.plain = plain
        # the documented optional hooks of plain objects, looked up once here
        self._hooks: dict[str, Callable] = {
            name: hook for name in ("start", "begin_run", "finish")
            if callable(hook := getattr(plain, name, None))}
        self._distributed = bool(getattr(plain, "supports_distributed", False))

    @property
    def supports_distributed(self) -> bool:  # type: ignore[override]
        return self._distributed

    @property
    def schedule(self) -> Schedule | None:  # type: ignore[override]
        return getattr(self.plain, "schedule", None)

    @property
    def label(self) -> str:
        return type(self.plain).__name__

    def start(self, solver: Solver) -> None:
        if "start" in self._hooks:
            self._hooks["start"](solver)

    def begin_run(self, solver: Solver, end_step: int) -> None:
        if "begin_run" in self._hooks:
            self._hooks["begin_run"](solver, end_step)

    def __call__(self, solver: Solver) -> None:
        self.plain(solver)

    def finish(self, solver: Solver) -> None:
        if "finish" in self._hooks:
            self._hooks["finish"](solver)


def as_results(plugin: Any) -> Results:
    """``plugin`` itself if it is a :class:`Results`, else a plain callable adapted to one."""
    if isinstance(plugin, Results):
        return plugin
    if not callable(plugin):
        raise TypeError(f"results must be results plug-ins (tp.Results subclasses, or callables "
                        f"with a schedule; see tp.plugin('results', ...)), got {plugin!r}")
    return _Adapted(plugin)


def distributable(factory: object) -> bool:
    """Whether a registered results factory declares ``supports_distributed``."""
    return isinstance(factory, type) and issubclass(factory, Results) and \
        factory.supports_distributed

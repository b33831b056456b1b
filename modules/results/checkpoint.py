"""The ``checkpoint`` results plug-in: a schedule over the core checkpoint store.

The format (atomic directories, ``meta.json``, hashes, the ``latest`` pointer, ``keep``, the
checks on resume) lives in :mod:`thelma_py.checkpoints`; this plug-in decides when to write.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from thelma_py.checkpoints import CheckpointStore, check_keep
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule


@register("results", "checkpoint")
@attrs.define(kw_only=True)
class Checkpoint(Results):
    """Checkpoint every N steps into <path>/step_<n>/ (latest in <path>/latest); also on
    SIGINT/SIGTERM during a run. Resume with ``thelma run --resume <path>``.

    In a distributed run each rank writes its own ``rank_<r>.npz`` into the same directory;
    it restarts on the same decomposition only."""

    supports_distributed = True
    runs_last = True  # a checkpoint at step n follows every other output of step n

    path: Path = attrs.field(converter=Path)
    """Root directory of the checkpoints."""
    schedule: Every = attrs.field(
        alias="every",
        default=10_000,
        converter=as_schedule,
        validator=attrs.validators.instance_of(Every),
    )
    """When to write: every N steps (an int) or an :class:`~thelma_py.schedule.Every`."""
    keep: int = attrs.field(default=2, validator=check_keep)
    """How many of the newest checkpoints to retain."""
    written: list[Path] = attrs.field(factory=list, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.schedule.at_start:  # step 0 holds nothing a rerun would not reproduce
            self.schedule = Every(self.schedule.steps, at_start=False)

    @property
    def store(self) -> CheckpointStore:
        return CheckpointStore(self.path, self.keep)

    def start(self, solver) -> None:
        self.store.prepare()

    def __call__(self, solver) -> None:
        self.write_now(solver)

    def on_interrupt(self, solver) -> Path:
        return self.write_now(solver)

    def write_now(self, solver) -> Path:
        """Write the checkpoint of the current step and point ``latest`` at it."""
        target = self.store.write(solver, exclude=self)
        self.written = [p for p in self.written if p != target] + [target]
        return target

"""When results plug-ins run: every N steps, optionally also at the end."""

from __future__ import annotations

import attrs


def _check_steps(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"every must be a positive whole number of steps (e.g. every=100), "
                         f"got {value!r}")


@attrs.frozen
class Every:
    """Due on steps that are multiples of ``steps`` (and on step 0 if ``at_start``)."""

    steps: int = attrs.field(validator=_check_steps)
    at_start: bool = True

    def due(self, step: int) -> bool:
        return step % self.steps == 0 and (step > 0 or self.at_start)

    def next_after(self, step: int) -> int:
        """First due step strictly after ``step``."""
        return (step // self.steps + 1) * self.steps


def as_schedule(every: int | Every | None) -> Every | None:
    if every is None or isinstance(every, Every):
        return every
    if isinstance(every, float) and every.is_integer():
        every = int(every)
    return Every(every)

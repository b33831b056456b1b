"""Geometry plug-ins: named builders that return a :class:`Geometry`, for config scripts and
the command line (``thelma list``)."""

from __future__ import annotations

from thelma_py.geometry.domain import cavity, channel, periodic_box
from thelma_py.registry import register

register("geometry", "cavity")(cavity)
register("geometry", "channel")(channel)
register("geometry", "periodic-box")(periodic_box)

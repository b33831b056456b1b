"""Geometry plug-ins: shapes, node tags, domains (installed as thelma_py.geometry)."""

from thelma_py.geometry.domain import FACES, Geometry, NodeTags, cavity, channel, periodic_box
from thelma_py.geometry.shapes import Box, Cylinder, Everything, Function, Mask, Shape, Sphere
from thelma_py.geometry.tags import NodeKind, TagLayout

__all__ = ["FACES", "Box", "Cylinder", "Everything", "Function", "Geometry", "Mask", "NodeKind",
           "NodeTags", "Shape", "Sphere", "TagLayout", "cavity", "channel", "periodic_box"]

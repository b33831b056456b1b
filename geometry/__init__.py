"""Geometry plug-ins: shapes, node tags, domains (installed as thelma_py.geometry)."""

from thelma_py.geometry.domain import Geometry, cavity, channel, periodic_box
from thelma_py.geometry.shapes import Box, Cylinder, Everything, Function, Mask, Shape, Sphere
from thelma_py.geometry.stl import MeshNotClosedError, StlShape
from thelma_py.nodes import FACES, NodeTags
from thelma_py.tags import NodeKind, TagLayout

__all__ = ["FACES", "Box", "Cylinder", "Everything", "Function", "Geometry", "Mask",
           "MeshNotClosedError", "NodeKind", "NodeTags", "Shape", "Sphere", "StlShape",
           "TagLayout", "cavity", "channel", "periodic_box"]

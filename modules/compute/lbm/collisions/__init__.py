"""Collision models of the LBM plug-in, one file each.

Each module defines one :class:`~thelma_py.modules.compute.lbm.collision.CollisionModel`
subclass, registered by name with
:func:`~thelma_py.modules.compute.lbm.collision.register_collision`.
``collision.MODEL_FILES`` is the table of built-in model files: a new model is a file here
and its name in that tuple. The classes
import from here by class name (``from thelma_py.modules.compute.lbm.collisions import Trt``).
"""


def __getattr__(name: str):
    from thelma_py.modules.compute.lbm.collision import collision_models

    for model in collision_models().values():
        if model.__name__ == name:
            return model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

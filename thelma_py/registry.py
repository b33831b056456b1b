"""The plug-in registry: four kinds (init, geometry, compute, results), looked up by name.

Built-in plug-ins register with the :func:`register` decorator when their module is imported.
Third-party packages declare an entry point in the group ``thelma_py.plugins``; the value is a
module (or object) whose import registers its plug-ins. Discovery runs once, lazily, on the first
lookup.

>>> sorted(available("compute"))[:3]
['lbm', 'lwacm', 'lwacm-fused']
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from importlib.metadata import entry_points

import attrs

KINDS = ("init", "geometry", "compute", "results")
ENTRY_POINT_GROUP = "thelma_py.plugins"
BUILTIN_MODULES = (
    "thelma_py.modules.init.fields",
    "thelma_py.modules.compute.lbm",
    "thelma_py.modules.compute.lwacm",
    "thelma_py.geometry.builders",
    "thelma_py.modules.results.vtk",
    "thelma_py.modules.results.monitors",
    "thelma_py.modules.results.checkpoint",
    "thelma_py.modules.results.convergence",
    "thelma_py.modules.results.timings",
    "thelma_py.modules.results.probes",
    "thelma_py.modules.results.forces",
    "thelma_py.modules.results.statistics",
    "thelma_py.modules.results.image",
)

_registry: dict[str, dict[str, Callable]] = {kind: {} for kind in KINDS}
_loaded = False


class UnknownPluginError(KeyError):
    """Raised for a name that is not registered; the message lists the names that are."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class PluginParameterError(TypeError):
    """Raised when a plug-in is created with parameters it does not take."""


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown plug-in kind {kind!r}; valid kinds: {list(KINDS)}")


def register(kind: str, name: str) -> Callable:
    """Class or function decorator: make ``name`` creatable as a plug-in of ``kind``."""
    _check_kind(kind)

    def decorate(factory: Callable) -> Callable:
        existing = _registry[kind].get(name)
        if existing is not None and existing is not factory:
            raise ValueError(f"{kind} plug-in {name!r} is already registered by "
                             f"{existing.__module__}.{existing.__qualname__}")
        _registry[kind][name] = factory
        factory.plugin_kind, factory.plugin_name = kind, name
        return factory

    return decorate


def load_plugins() -> None:
    """Import the built-in plug-ins and every entry point of the ``thelma_py.plugins`` group."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except Exception as error:  # a broken third-party plug-in must not break the others
            warnings.warn(f"thelma_py plug-in entry point {point.name!r} ({point.value}) failed "
                          f"to load: {error}", stacklevel=2)


def available(kind: str) -> dict[str, Callable]:
    """Registered plug-ins of one kind, by name."""
    _check_kind(kind)
    load_plugins()
    return dict(sorted(_registry[kind].items()))


def get(kind: str, name: str) -> Callable:
    """The factory registered under ``name``; an unknown name lists the valid ones."""
    plugins = available(kind)
    if name not in plugins:
        raise UnknownPluginError(f"no {kind} plug-in named {name!r}; available {kind} plug-ins: "
                                 f"{', '.join(plugins) or '(none)'}")
    return plugins[name]


def plugin_name(plugin: object) -> str:
    """The name ``plugin`` (or its class) was registered under, else its class name."""
    return getattr(plugin, "plugin_name", type(plugin).__name__)


def parameters(factory: Callable) -> dict[str, inspect.Parameter]:
    """Keyword parameters a factory accepts (attrs fields or the call signature)."""
    if attrs.has(factory):
        return {a.alias or a.name: a for a in attrs.fields(factory) if a.init}
    return dict(inspect.signature(factory).parameters)


def create(kind: str, name: str, **params):
    """Create a plug-in by name; wrong parameter names get a message listing the valid ones."""
    factory = get(kind, name)
    valid = parameters(factory)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise PluginParameterError(f"{kind} plug-in {name!r} takes no parameter(s) {unknown}; "
                                   f"valid parameters: {', '.join(valid) or '(none)'}")
    try:
        return factory(**params)
    except (TypeError, ValueError) as error:
        if type(error) not in (TypeError, ValueError):
            raise  # a subclass may not take a message alone: keep it as it is
        # attrs validators raise (message, attribute, expected, value), which prints as a tuple
        message = error.args[0] if error.args else str(error)
        raise type(error)(f"{kind} plug-in {name!r}: {message}") from error


def describe(kind: str) -> list[str]:
    """One line per plug-in of ``kind``: name, parameters and the docstring's first paragraph."""
    lines = []
    for name, factory in available(kind).items():
        summary = " ".join((inspect.getdoc(factory) or "").split("\n\n")[0].split())
        lines.append(f"{name}({', '.join(parameters(factory))}): {summary}")
    return lines

"""A case file and the values given for its ``build()`` on the command line (``--set
key=value``): loading the file, converting each value by the type of its parameter, and
refusing values, names and plug-in parameters that do not fit, each with one line that says
what is wrong.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import os
import re
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from thelma_py.registry import available
from thelma_py.registry import parameters as plugin_parameters


class CliError(Exception):
    """A mistake in the command line or the case file; printed without a traceback."""


_BOOLS = {
    "true": True,
    "false": False,
    "yes": True,
    "no": False,
    "on": True,
    "off": False,
    "1": True,
    "0": False,
}


def _literal(text: str) -> object:
    """A Python literal if ``text`` parses as one, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def type_text(expected: object) -> str:
    """How an expected type reads in a message: ``int``, ``tuple[float, ...]``, ``one of 'a',
    'b'``."""
    if typing.get_origin(expected) is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(expected)))
    if isinstance(expected, type) and not typing.get_args(expected):
        return expected.__name__
    return str(expected).replace("typing.", "")


def convert_value(text: str, expected: object = typing.Any) -> object:
    """``text`` (a --set value) as a value of the type ``expected`` (an annotation).

    bool takes true/false, yes/no, on/off, 1/0; int refuses 12.5; float takes any number;
    str takes the text (quotes optional); tuples and lists take Python or comma-separated
    literals and convert their items; ``X | None`` takes ``None``; a union tries ``str`` last
    (it takes any text), so ``str | dict`` takes a dict literal as a dict; ``typing.Any``
    (nothing known) takes a Python literal or else the text. ValueError when ``text`` is not
    such a value.

    >>> convert_value("12", float), convert_value("0.1, 0", tuple[float, ...])
    (12.0, (0.1, 0.0))
    """
    text = text.strip()
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if expected in (typing.Any, object):
        return _literal(text)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and text in ("None", "none"):
            return None
        for option in sorted(args, key=lambda option: option is str):
            if option is not type(None):
                with contextlib.suppress(ValueError):
                    return convert_value(text, option)
        raise ValueError(text)
    if origin is typing.Literal:
        for option in args:
            with contextlib.suppress(ValueError):
                if convert_value(text, type(option)) == option:
                    return option
        raise ValueError(text)
    value = _literal(text)
    if expected is bool:
        if text.lower() in _BOOLS:
            return _BOOLS[text.lower()]
    elif expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif expected is float:
        with contextlib.suppress(ValueError):
            return float(text)  # also 1e-3, inf, nan
    elif expected is str:
        return value if isinstance(value, str) else text
    elif tuple in (origin, expected) or list in (origin, expected):
        if isinstance(value, tuple | list):
            items = [repr(item) for item in value]
            if not args:
                kinds = [typing.Any] * len(items)
            elif origin is list or (len(args) == 2 and args[1] is Ellipsis):
                kinds = [args[0]] * len(items)
            elif len(args) == len(items):
                kinds = list(args)
            else:
                raise ValueError(text)
            container = origin or expected
            return container(convert_value(i, k) for i, k in zip(items, kinds, strict=True))
    elif isinstance(expected, type) and issubclass(expected, os.PathLike):
        return expected(text)
    elif isinstance(origin or expected, type):
        if isinstance(value, origin or expected):
            return value
    else:  # an annotation this does not know: as for Any
        return value
    raise ValueError(text)


def parameter_types(function: Callable) -> dict[str, object]:
    """The expected type of each parameter of ``function``: its annotation (also when written
    as a string), else the type of its default, else ``typing.Any``."""
    namespace = getattr(function, "__globals__", {})
    found = {}
    for name, parameter in inspect.signature(function).parameters.items():
        expected = parameter.annotation
        if isinstance(expected, str):
            try:
                expected = eval(expected, namespace)  # what inspect's eval_str does
            except Exception:  # a name the case does not import: use the default's type
                expected = parameter.empty
        if expected is parameter.empty:
            default = parameter.default
            unknown = default is parameter.empty or default is None
            expected = typing.Any if unknown else type(default)
        found[name] = expected
    return found


def parse_assignment(text: str, expected: object = typing.Any) -> tuple[str, object]:
    """``key=value`` -> (key, value), the value converted to ``expected`` by
    :func:`convert_value`; a wrong value names the key, the expected type and the value.

    >>> parse_assignment("n=64"), parse_assignment("collision=mrt")
    (('n', 64), ('collision', 'mrt'))
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise CliError(f"--set expects key=value with a Python name as key, got {text!r}")
    try:
        return key, convert_value(value, expected)
    except ValueError:
        value = value.strip()
        raise CliError(
            f"--set {key}={value}: {key} expects {type_text(expected)}, got {value!r}"
        ) from None


def load_case(path: str | Path) -> ModuleType:
    """Import a case script by file path, with its directory on ``sys.path`` (as ``python``)."""
    path = Path(path)
    if not path.is_file():
        raise CliError(f"case file '{path}' does not exist")
    name = "thelma_case_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"'{path}' cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # attrs/dataclasses in the case look their module up here
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        sys.modules.pop(name, None)
        raise CliError(
            f"{error.filename or path}:{error.lineno}: {type(error).__name__}: {error.msg}"
        ) from error
    if not callable(getattr(module, "build", None)):
        raise CliError(f"{path} defines no build(**parameters) function returning a Solver")
    return module


def _signature_text(function: Callable) -> str:
    parts = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = parameter.default
        parts.append(name if default is parameter.empty else f"{name}={default!r}")
    return ", ".join(parts)


def check_build_parameters(build: Callable, kwargs: dict, case: str, set_keys=()) -> None:
    """Refuse keywords that ``build`` does not take, listing the ones it does."""
    parameters = inspect.signature(build).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = {
        name
        for name, p in parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    unknown = [key for key in kwargs if key not in accepted]
    if not unknown:
        return
    from_set = [key for key in unknown if key in set_keys]
    what = (
        f"unknown --set key(s) {from_set}"
        if from_set
        else f"build() does not take {unknown} (a case's build() must accept device and precision)"
    )
    raise CliError(f"{case}: {what}; build() parameters: {_signature_text(build)}")


def check_compute_parameters(build: Callable, kwargs: dict, set_keys=()) -> None:
    """Refuse --set keys that the case's compute plug-in would not receive.

    When build() has a ``compute`` parameter naming a registered compute plug-in, a key that
    other compute plug-ins take but the chosen one does not (``collision`` with
    ``compute=lwacm-fused``) would be dropped without a word.
    """
    parameters = inspect.signature(build).parameters
    chosen = kwargs.get("compute", getattr(parameters.get("compute"), "default", None))
    plugins = available("compute")
    if not isinstance(chosen, str) or chosen not in plugins:
        return
    own = list(plugin_parameters(plugins[chosen]))
    for key in set_keys:
        takers = [name for name, factory in plugins.items() if key in plugin_parameters(factory)]
        if takers and key not in own:
            raise CliError(
                f"--set {key}: the compute plug-in {chosen!r} takes no {key!r} (taken by "
                f"{', '.join(takers)}); its parameters: {', '.join(own)}"
            )

"""Kernel arguments declared once: the C parameter list and the checked launch tuple.

A :class:`KernelArgs` is a table of :class:`Arg` rows (name, C type, where the value comes
from), grouped as the lines of the generated signature. :meth:`KernelArgs.signature` writes the
``extern "C" __global__`` declaration; :meth:`KernelArgs.bind` fixes the host dtypes of the
typedefs (``real_t``, ``tag_t``, ``node_t``) and gives a :class:`BoundArgs` whose
:meth:`~BoundArgs.pack` collects the values in declaration order, each checked before the
launch (array or scalar, dtype, C contiguity; ints must fit), so a wrong argument is an error
that names it, not a kernel reading garbage.

>>> args = KernelArgs("demo", [[Arg("src", "const real_t*", GIVEN), Arg("n", "int")]])
>>> print(args.signature("demo_step", "__launch_bounds__(128)"))
extern "C" __global__ void __launch_bounds__(128) demo_step(
    const real_t* __restrict__ src, int n)
>>> import numpy as np
>>> class Engine: n = 4
>>> args.bind(real_t=np.float32).pack(Engine(), src=np.zeros(4, np.float32))[1]
np.int32(4)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

GIVEN = None
"""``Arg.source`` of a value given at each launch (``pack(..., name=value)``)."""
_ABSENT = object()
BUILTIN = {"int": np.dtype(np.int32), "unsigned": np.dtype(np.uint32),
           "unsigned char": np.dtype(np.uint8)}
"""Host dtypes of the C types that are not typedefs."""


class KernelArgumentError(TypeError):
    """A launch value does not match its kernel argument."""


@attrs.frozen
class Arg:
    """One kernel argument: its ``name`` in the C source, its C type (a pointer type such as
    ``"const real_t*"`` or a scalar type such as ``"int"``), and ``source``, the attribute of
    the engine that holds the value (default: ``name``; :data:`GIVEN`: passed per launch)."""

    name: str
    ctype: str
    source: str | None = attrs.field(
        default=attrs.Factory(lambda self: self.name, takes_self=True))

    @property
    def pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def element(self) -> str:
        """The C type of the value, or of the elements pointed to."""
        return self.ctype.removeprefix("const ").removesuffix("*").strip()

    @property
    def declaration(self) -> str:
        restrict = " __restrict__" if self.pointer else ""
        return f"{self.ctype}{restrict} {self.name}"


class KernelArgs:
    """The arguments of a family of kernels (``label`` names it in errors), as the lines of
    their signature: one declaration gives the C text and the launch tuple."""

    def __init__(self, label: str, lines: Sequence[Sequence[Arg]]):
        self.label = label
        self.lines = tuple(tuple(line) for line in lines)
        self.args = tuple(arg for line in self.lines for arg in line)
        names = [arg.name for arg in self.args]
        if len(set(names)) != len(names):
            raise ValueError(f"{label}: an argument name repeats in {names}")

    def signature(self, name: str, bounds: str) -> str:
        """``extern "C" __global__ void <bounds> <name>(...)``, the declaration lines indented
        by four spaces (no body)."""
        body = ",\n    ".join(", ".join(arg.declaration for arg in line) for line in self.lines)
        return f'extern "C" __global__ void {bounds} {name}(\n    {body})'

    def bind(self, **typedefs: np.dtype) -> BoundArgs:
        """The launch side for the host dtypes of the typedefs used (``real_t=np.float32``...)."""
        return BoundArgs(self, {k: np.dtype(v) for k, v in typedefs.items()})


class BoundArgs:
    """:class:`KernelArgs` with host dtypes: :meth:`pack` checks and orders launch values."""

    def __init__(self, args: KernelArgs, typedefs: dict[str, np.dtype]):
        self.label = args.label
        types = {**BUILTIN, **typedefs}
        missing = sorted({a.element for a in args.args} - types.keys())
        if missing:
            raise ValueError(f"{args.label}: give the host dtype of {missing} to bind()")
        self._plan = [(a.name, a.source, _checker(args.label, a, types[a.element]))
                      for a in args.args]
        self._names = frozenset(a.name for a in args.args)

    def pack(self, owner: object = None, /, **given) -> tuple:
        """The launch tuple: each argument from ``given`` or else from ``owner``'s attribute
        ``source``, checked against its declaration."""
        unknown = given.keys() - self._names
        if unknown:
            raise KernelArgumentError(f"{self.label}: no kernel argument {sorted(unknown)}")
        values = []
        for name, source, check in self._plan:
            value = given.get(name, _ABSENT)
            if value is _ABSENT:
                if source is GIVEN:
                    raise KernelArgumentError(f"{self.label}: {name} must be given at each launch")
                value = getattr(owner, source, _ABSENT)
                if value is _ABSENT:
                    raise KernelArgumentError(
                        f"{self.label}: no value for {name} (neither given nor held as "
                        f"{type(owner).__name__}.{source})")
            values.append(check(value))
        return tuple(values)


def _describe(value) -> str:
    if isinstance(value, np.generic):
        return f"{value.dtype} scalar {value!r}"
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"{value.dtype} {type(value).__name__} of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"


def _checker(label: str, arg: Arg, dtype: np.dtype) -> Callable:
    """A function that returns the launch value of ``arg`` or raises KernelArgumentError
    (fast paths first: it runs for every argument of every launch)."""
    where = f"{label}: argument {arg.name} ({arg.ctype})"

    def fail(need: str, value):
        raise KernelArgumentError(f"{where} needs {need}, got {_describe(value)}")

    if arg.pointer:
        def array(value):
            held = getattr(value, "dtype", None)
            if held is not dtype and held != dtype or not getattr(value, "shape", ()):
                fail(f"a {dtype} array", value)
            if not value.flags.c_contiguous:
                fail("a C-contiguous array", value)
            return value
        return array
    scalar = dtype.type
    if dtype.kind in "iu":
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max

        def integer(value):
            if type(value) is not scalar and (isinstance(value, bool | np.bool_) or not
                                              isinstance(value, int | np.integer)
                                              or not low <= value <= high):
                fail(f"an integer that fits {dtype}", value)
            return scalar(value)
        return integer

    def real(value):
        if type(value) is not scalar and (isinstance(value, np.generic) and value.dtype != dtype
                                          or isinstance(value, bool)
                                          or not isinstance(value, float | int | np.floating)):
            fail(f"a {dtype} scalar (or a Python number)", value)
        return scalar(value)
    return real

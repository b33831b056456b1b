"""A tiny expression tracer: the same Python arithmetic runs on NumPy arrays or emits CUDA C.

Physics is written once, as plain functions of number-like values (``rho = sum(f)``,
``feq = lattice.equilibrium(rho, u)``). Called with NumPy arrays, they are the CPU reference.
Called with :class:`Expr` leaves, they record C expressions; :class:`Emitter.let` names an
intermediate (``const real_t t3 = ...;``) so expressions stay small. Constants are folded:
multiplying by 0 or 1 and adding 0 disappear, so velocity tables never reach the generated code
as data, only as the terms they leave behind.
"""

from __future__ import annotations

import math
from numbers import Number

import attrs


def literal(value: float) -> str:
    """A C literal for a Python number, exact in double precision."""
    value = float(value)
    if value == int(value) and abs(value) < 2**31:
        return f"((real_t){int(value)})"
    return f"((real_t){value!r})"


def _wrap(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, Number):
        return Expr(literal(value), atom=True)
    raise TypeError(f"cannot use {type(value).__name__} in a traced expression")


def _is(value, number: float) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool) and value == number


@attrs.frozen
class Expr:
    """A C expression of type real_t. ``atom`` marks names and literals (no parentheses)."""

    text: str
    atom: bool = False

    def __str__(self) -> str:
        return self.text

    def _p(self) -> str:
        return self.text if self.atom else f"({self.text})"

    def __add__(self, other):
        if _is(other, 0):
            return self
        return Expr(f"{self._p()} + {_wrap(other)._p()}")

    def __radd__(self, other):
        if _is(other, 0):
            return self
        return Expr(f"{_wrap(other)._p()} + {self._p()}")

    def __sub__(self, other):
        if _is(other, 0):
            return self
        return Expr(f"{self._p()} - {_wrap(other)._p()}")

    def __rsub__(self, other):
        if _is(other, 0):
            return -self
        return Expr(f"{_wrap(other)._p()} - {self._p()}")

    def __mul__(self, other):
        if _is(other, 0):
            return 0.0
        if _is(other, 1):
            return self
        if _is(other, -1):
            return -self
        return Expr(f"{self._p()} * {_wrap(other)._p()}")

    __rmul__ = __mul__

    def __truediv__(self, other):
        if _is(other, 1):
            return self
        if isinstance(other, Number):
            return self * (1.0 / float(other))
        return Expr(f"{self._p()} / {_wrap(other)._p()}")

    def __rtruediv__(self, other):
        return Expr(f"{_wrap(other)._p()} / {self._p()}")

    def __neg__(self):
        return Expr(f"-{self._p()}")

    def __pos__(self):
        return self


class Emitter:
    """Collects ``const real_t`` statements for one generated kernel body."""

    def __init__(self, prefix: str = "t", ctype: str = "real_t") -> None:
        self.lines: list[str] = []
        self._prefix = prefix
        self._ctype = ctype
        self._count = 0

    def let(self, value, name: str | None = None):
        """Bind ``value`` to a new named constant; numbers pass through unchanged."""
        if isinstance(value, Number):
            return value
        if name is None:
            name = f"{self._prefix}{self._count}"
            self._count += 1
        self.lines.append(f"const {self._ctype} {name} = {value};")
        return Expr(name, atom=True)

    def raw(self, line: str) -> None:
        self.lines.append(line)

    def code(self, indent: int = 4) -> str:
        pad = " " * indent
        return "\n".join(pad + line for line in self.lines)


def identity_let(value, name: str | None = None):
    """The NumPy stand-in for :meth:`Emitter.let`: values are computed eagerly anyway."""
    return value


def dot(coefficients, values):
    """Σ a_k v_k with zero coefficients skipped and ±1 kept as plain additions.

    For traced values this yields sums with small integer weights instead of multiplications.
    """
    total = 0.0
    for a, v in zip(coefficients, values, strict=True):
        a = float(a)
        if a == 0.0:
            continue
        term = v if a == 1.0 else (-v if a == -1.0 else v * a)
        total = term if _is(total, 0) else total + term
    return total


def sqrt(value):
    """Square root of a traced expression (C ``sqrt``, overloaded for float and double) or of a
    NumPy value."""
    if isinstance(value, Expr):
        return Expr(f"sqrt({value.text})", atom=True)
    import numpy as np

    return np.sqrt(value)


def absolute(value):
    """|x| of a traced expression (C ``fabs``, overloaded for float and double) or of a NumPy
    value: one instruction, where ``sqrt(x * x)`` (equal in binary floating point but for
    underflow) costs a correctly rounded square root."""
    if isinstance(value, Expr):
        return Expr(f"fabs({value.text})", atom=True)
    import numpy as np

    return np.abs(value)


def rsqrt(value):
    """1/√x of a traced expression (CUDA ``rsqrt``, overloaded for float and double; a few ulps
    in fp32) or of a NumPy value."""
    if isinstance(value, Expr):
        return Expr(f"rsqrt({value.text})", atom=True)
    import numpy as np

    return 1.0 / np.sqrt(value)


def is_finite_number(value) -> bool:
    return isinstance(value, Number) and math.isfinite(float(value))

"""Elementwise functions computed by iteration -- a recurrence, a power series, a continued
fraction -- whose number of steps differs from element to element: written once, as
Python functions over an *arithmetic* ``m`` and its values, and evaluated by numpy (the
graph op's reference, here) or as a kernel's scalar code (``lowering/dense_linalg/iterative.py``),
so the interpreter and the compiled kernel run the same steps.

Values support ``+ - * /`` (with Python numbers), ``<, >, <=, ==, !=`` (C++'s: ordered,
``!=`` unordered), ``& | ~`` on conditions and ``abs``; the arithmetic adds selections,
the math functions and :meth:`Arithmetic.iterate`, a loop that stops per element. Branches
of the C++ originals become ``where`` between both sides, computed everywhere; a loop whose
branch is not taken gets no steps.

Users: ``polynomials.py`` (torch.special's orthogonal polynomials), ``incomplete_gamma.py``
(``igamma``/``igammac``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import ParsePropInAttrDict, prop_def
from xdsl.utils.exceptions import VerifyException

from .base import OpPatternKind
from .elementwise import BinaryOp

#: a value of an arithmetic: a numpy array, or a kernel's scalar
Value = Any
#: one step of a loop: the step number ``k`` (1, 2, ..., a float) and the state -> the next state
LoopStep = Callable[..., Sequence[Value]]


class Arithmetic(Protocol):
    """What the definitions use beyond the values' operators."""

    #: the float type computed in
    dtype: np.dtype

    def where(self, condition: Value, on_true: Value | float, on_false: Value | float) -> Value: ...

    def acos(self, x: Value) -> Value: ...
    def cos(self, x: Value) -> Value: ...
    def sin(self, x: Value) -> Value: ...
    def exp(self, x: Value) -> Value: ...
    def expm1(self, x: Value) -> Value: ...
    def log(self, x: Value) -> Value: ...
    def log1p(self, x: Value) -> Value: ...
    def sqrt(self, x: Value) -> Value: ...
    def pow(self, x: Value, y: Value) -> Value: ...
    def lgamma(self, x: Value) -> Value: ...
    def erfc(self, x: Value) -> Value: ...
    def trunc(self, x: Value) -> Value: ...
    def fmod(self, x: Value, y: Value | float) -> Value: ...
    def isnan(self, x: Value) -> Value: ...

    def iterate(
        self, state: Sequence[Value | float], step: LoopStep, trips: Value, stop: Callable[..., Value] | None, most: int,
        settled: bool = False,
    ) -> tuple[Value, ...]:
        """``state`` after ``for k in 1..trips: if stop(*state): break; state = step(k, *state)``
        per element (``stop`` None: never); ``trips`` (integral floats) is at most ``most``.
        ``settled``: steps after ``stop`` holds would not change the state (a NaN stays NaN),
        so a kernel need not hold it (it may check ``stop`` only now and then)."""
        ...


def isinf(m: Arithmetic, x: Value) -> Value:
    return abs(x) == math.inf


def even(m: Arithmetic, n: Value) -> Value:
    """Whether the integral ``n`` is even."""
    return m.fmod(n, 2.0) == 0.0


def first_case(m: Arithmetic, cases: Sequence[tuple[Value, Value | float]], otherwise: Value) -> Value:
    """The value of the first ``(condition, value)`` whose condition holds, else ``otherwise``
    (an ``if ... else if ...`` chain of returns)."""
    result = otherwise
    for condition, value in reversed(cases):
        result = m.where(condition, value, result)
    return result


def only_where(m: Arithmetic, condition: Value, compute: Callable[[], Value]) -> Value:
    """``compute()`` where ``condition`` holds (0 elsewhere), computed only there: the body of a
    loop of one step or none (for a costly branch taken by few elements)."""
    trips = m.where(condition, 1.0, 0.0)
    return m.iterate((0.0,), lambda k, _: (compute(),), trips, None, most=1)[0]


def any_of(conditions: Sequence[Value]) -> Value:
    result = conditions[0]
    for condition in conditions[1:]:
        result = result | condition
    return result


@dataclass(frozen=True)
class NumpyArithmetic:
    """The arithmetic of numpy arrays of one float dtype (Python numbers stay weak)."""

    dtype: np.dtype

    def where(self, condition, on_true, on_false):
        out = np.where(condition, on_true, on_false)
        return out if out.dtype == bool else out.astype(self.dtype, copy=False)

    def acos(self, x):
        return np.arccos(x)

    def cos(self, x):
        return np.cos(x)

    def sin(self, x):
        return np.sin(x)

    def exp(self, x):
        return np.exp(x)

    def expm1(self, x):
        return np.expm1(x)

    def log(self, x):
        return np.log(x)

    def log1p(self, x):
        return np.log1p(x)

    def sqrt(self, x):
        return np.sqrt(x)

    def pow(self, x, y):
        return np.power(x, y)

    def lgamma(self, x):
        return np.vectorize(_lgamma, otypes=[self.dtype])(x)

    def erfc(self, x):
        return np.vectorize(math.erfc, otypes=[self.dtype])(x)

    def trunc(self, x):
        return np.trunc(x)

    def fmod(self, x, y):
        return np.fmod(x, y)

    def isnan(self, x):
        return np.isnan(x)

    def iterate(self, state, step, trips, stop, most, settled=False):
        state = [np.array(v, dtype=self.dtype) for v in np.broadcast_arrays(*state, trips)[:-1]]
        k = 1
        while True:
            active = k <= trips
            if stop is not None:
                active &= ~stop(*state)
            if not active.any():
                return tuple(state)
            new = step(self.dtype.type(k), *state)
            state = [np.where(active, n, s).astype(self.dtype, copy=False) for n, s in zip(new, state)]
            k += 1


class IterativeOp(BinaryOp):
    """The shape of the ops computed by iteration: two float operands broadcast together,
    a ``kind`` naming the function among :attr:`KINDS`, one kernel each (opaque to fusion;
    ``te.dense_linalg`` with the op's name as routine). Subclasses define :meth:`evaluate`
    over an arithmetic; the reference runs it on numpy, the kernel on scalar code."""

    kind = prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    FLOAT_ONLY: ClassVar[bool] = True
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE
    #: the functions of the op, and what one is called in errors
    KINDS: ClassVar[Sequence[str]]
    KIND_NOUN: ClassVar[str]

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, kind: str):
        self._build([lhs, rhs], {"kind": StringAttr(kind)})

    def infer_result_type(self):
        if self.kind.data not in self.KINDS:
            raise VerifyException(f"unknown {self.KIND_NOUN} '{self.kind.data}' (expected one of {', '.join(self.KINDS)})")
        return super().infer_result_type()

    @classmethod
    def evaluate(cls, kind: str, m: Arithmetic, lhs: Value, rhs: Value) -> Value:
        """The function ``kind`` of the two operands, elementwise in ``m``."""
        raise NotImplementedError

    def reference(self, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        lhs, rhs = np.broadcast_arrays(lhs, rhs)
        m = NumpyArithmetic(np.dtype(lhs.dtype))
        with np.errstate(all="ignore"):
            return self.evaluate(self.kind.data, m, lhs.astype(m.dtype), rhs.astype(m.dtype))


def _lgamma(v: float) -> float:
    """C's ``lgamma``: +inf at the poles (Python raises)."""
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


__all__ = [
    "Arithmetic", "IterativeOp", "LoopStep", "NumpyArithmetic", "Value", "any_of", "even", "first_case", "isinf", "only_where",
]  # fmt: skip

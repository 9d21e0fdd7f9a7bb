"""Kernels of the elementwise functions computed by iteration (``dialects/graph/iterative.py``):
per element, the function's definition evaluated in scalar code. Every branch's value is
computed and selected (no branches in the loop dialect); a loop is a serial loop whose trip
count is 0 where its branch is not taken, and which stops once its condition holds
(``ScalarCode.range_until``: nested blocks whose counts are 0 once stopped; within a block
a stopped state is selected back, so every step after the stop changes nothing, unless the
steps leave it unchanged anyway: ``settled``)::

    <the element's inputs; every case's value>
    loop.for %t = 0 to <blocks of the steps, none once stopped> name("scan0") {
      ...
      loop.for %s = 0 to ... name("scan<levels - 1>") {
        %state' = select(stop(state), state, step(k, state))
      }
    }
    <select the first case that holds>

Routines: ``orthogonal_polynomial`` (``graph.orthogonal_polynomial``), ``incomplete_gamma``
(``graph.incomplete_gamma``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import SSAValue

from ...dialects.graph.incomplete_gamma import IncompleteGammaOp
from ...dialects.graph.iterative import IterativeOp, LoopStep
from ...dialects.graph.polynomials import OrthogonalPolynomialOp
from ...dialects.graph.types import numpy_dtype
from ...dialects.scalar import ErfcOp, LgammaOp, RemFOp
from .code import KernelArgs, ScalarCode, routine


@dataclass(frozen=True, eq=False)
class Scalar:
    """A float (or ``i1`` condition) of the kernel with Python's operators, so the
    definitions read as formulas. Each operation is emitted where its arithmetic
    currently emits (inside a loop's body while its step is built); Python numbers become
    constants."""

    m: KernelArithmetic
    value: SSAValue

    def _apply(self, op: type, other: Scalar | float, reverse: bool = False) -> Scalar:
        a, b = self.value, self.m.lift(other).value
        return self.m.emit(op(b, a) if reverse else op(a, b))

    def _compare(self, other: Scalar | float, predicate: str) -> Scalar:
        return Scalar(self.m, self.m.c.compare(self.value, self.m.lift(other).value, predicate))

    def __add__(self, other): return self._apply(arith.AddfOp, other)  # fmt: skip
    def __radd__(self, other): return self._apply(arith.AddfOp, other, reverse=True)  # fmt: skip
    def __sub__(self, other): return self._apply(arith.SubfOp, other)  # fmt: skip
    def __rsub__(self, other): return self._apply(arith.SubfOp, other, reverse=True)  # fmt: skip
    def __mul__(self, other): return self._apply(arith.MulfOp, other)  # fmt: skip
    def __rmul__(self, other): return self._apply(arith.MulfOp, other, reverse=True)  # fmt: skip
    def __truediv__(self, other): return self._apply(arith.DivfOp, other)  # fmt: skip
    def __rtruediv__(self, other): return self._apply(arith.DivfOp, other, reverse=True)  # fmt: skip
    def __neg__(self): return self.m.emit(arith.NegfOp(self.value))  # fmt: skip
    def __abs__(self): return self.m.emit(math.AbsFOp(self.value))  # fmt: skip
    # ordered comparisons (false for NaN), ``!=`` unordered (true for NaN), as C++'s
    def __lt__(self, other): return self._compare(other, "olt")  # fmt: skip
    def __le__(self, other): return self._compare(other, "ole")  # fmt: skip
    def __gt__(self, other): return self._compare(other, "ogt")  # fmt: skip
    def __ge__(self, other): return self._compare(other, "oge")  # fmt: skip
    def __eq__(self, other): return self._compare(other, "oeq")  # type: ignore[override]  # fmt: skip
    def __ne__(self, other): return self._compare(other, "une")  # type: ignore[override]  # fmt: skip
    def __and__(self, other): return self.m.emit(arith.AndIOp(self.value, other.value))  # fmt: skip
    def __or__(self, other): return self.m.emit(arith.OrIOp(self.value, other.value))  # fmt: skip
    def __invert__(self): return self.m.emit(arith.XOrIOp(self.value, self.m.c.ins(arith.ConstantOp.from_int_and_width(1, 1))))  # fmt: skip


@dataclass(eq=False)
class KernelArithmetic:
    """The definitions' arithmetic (``iterative.Arithmetic``) in a kernel: ``c`` is where it
    emits, moved into a loop's body while :meth:`iterate` builds the step."""

    c: ScalarCode

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(numpy_dtype(self.c.element))

    def emit(self, op) -> Scalar:
        return Scalar(self, self.c.ins(op))

    def lift(self, v: Scalar | float) -> Scalar:
        return v if isinstance(v, Scalar) else Scalar(self, self.c.float(float(v)))

    def where(self, condition: Scalar, on_true: Scalar | float, on_false: Scalar | float) -> Scalar:
        return self.emit(arith.SelectOp(condition.value, self.lift(on_true).value, self.lift(on_false).value))

    def _unary(op: type) -> Callable[[KernelArithmetic, Scalar], Scalar]:  # noqa: N805
        return lambda self, x: self.emit(op(x.value))

    acos, cos, sin = _unary(math.AcosOp), _unary(math.CosOp), _unary(math.SinOp)
    exp, expm1, log, log1p = _unary(math.ExpOp), _unary(math.ExpM1Op), _unary(math.LogOp), _unary(math.Log1pOp)
    sqrt, trunc, lgamma, erfc = _unary(math.SqrtOp), _unary(math.TruncOp), _unary(LgammaOp), _unary(ErfcOp)

    def pow(self, x: Scalar, y: Scalar | float) -> Scalar:
        return self.emit(math.PowFOp(x.value, self.lift(y).value))

    def fmod(self, x: Scalar, y: Scalar | float) -> Scalar:
        return self.emit(RemFOp(x.value, self.lift(y).value))

    def isnan(self, x: Scalar) -> Scalar:
        return x != x

    def iterate(
        self, state: Sequence[Scalar | float], step: LoopStep, trips: Scalar, stop: Callable[..., Scalar] | None, most: int,
        settled: bool = False,
    ) -> tuple[Scalar, ...]:
        c = self.c
        cells = [c.local(c.element) for _ in state]
        for cell, value in zip(cells, state):
            c.store(self.lift(value).value, cell)
        count = c.ins(arith.IndexCastOp(c.ins(arith.FPToSIOp(trips.value, IntegerType(64))), IndexType()))

        def stopped(code: ScalarCode) -> SSAValue:
            self.c = code  # ``stop`` emits at each level's entry, where ``range_until`` asks
            if stop is None:
                return code.ins(arith.ConstantOp.from_int_and_width(0, 1))
            return stop(*(Scalar(self, code.load(cell)) for cell in cells)).value

        # blocks of 16 steps for short loops (a stop within 16 steps of convergence), of 2**16 for long ones
        bits = 4 if most <= 1 << 20 else 16
        t, body = c.range_until(count, stopped, "scan", block_bits=bits, levels=-(-most.bit_length() // bits))
        self.c = body
        now = [Scalar(self, body.load(cell)) for cell in cells]
        k = body.ins(arith.SIToFPOp(body.ins(arith.IndexCastOp(body.next(t), IntegerType(64))), c.element))
        new = [self.lift(v) for v in step(Scalar(self, k), *now)]
        if stop is not None and not settled:  # a stopped state stays (the rest of a block)
            done = stop(*now)
            new = [self.where(done, old, v) for old, v in zip(now, new)]
        for cell, v in zip(cells, new):
            body.store(v.value, cell)
        self.c = c
        return tuple(Scalar(self, c.load(cell)) for cell in cells)


def _iterative_routine(op_class: type[IterativeOp]) -> None:
    """Register the routine of ``op_class`` (named after it): its ``evaluate`` per element."""

    def emit(k: KernelArgs) -> None:
        m = KernelArithmetic(k.c)
        lhs, rhs = (Scalar(m, v.load(k.c)) for v in k.inputs)
        k.out.store(k.c, op_class.evaluate(k.op.kind.data, m, lhs, rhs).value)

    routine(op_class.name.removeprefix("graph."))(emit)


for _op in (OrthogonalPolynomialOp, IncompleteGammaOp):
    _iterative_routine(_op)

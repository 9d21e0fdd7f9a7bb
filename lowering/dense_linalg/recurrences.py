"""The orthogonal polynomials' kernel (``graph.orthogonal_polynomial``, routine
``orthogonal_polynomial``): per element, the family's definition
(``dialects/graph/polynomials.py``) evaluated in scalar code. Every special value and
closed form is computed and selected (no branches); the recurrence is a serial loop whose
trip count is ``n - 1`` where no earlier case applies and 0 elsewhere, stopping once the
value is NaN as torch's loop does::

    <x, n: the element's inputs; every case's value>
    loop.for %t = 0 to <blocks of the n - 1 steps, none once q is NaN> name("scan0") {
      ...                                              // 2**48, 2**32, 2**16 blocks, then:
      loop.for %s = 0 to ... name("scan3") {
        %r = <step(x, k, p, q)>; p = q; q = r
      }
    }
    <select the first case that holds, else q>
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import SSAValue

from ...dialects.graph.polynomials import POLYNOMIALS, Step, evaluate
from ...dialects.graph.types import numpy_dtype
from ...dialects.scalar import RemFOp
from .code import KernelArgs, ScalarCode, routine


@dataclass(frozen=True, eq=False)
class Scalar:
    """A float (or ``i1`` condition) of the kernel with Python's operators, so the
    polynomial definitions read as formulas; Python numbers become constants."""

    c: ScalarCode
    value: SSAValue

    def _lift(self, other: Scalar | float) -> Scalar:
        return other if isinstance(other, Scalar) else Scalar(self.c, self.c.float(float(other)))

    def _apply(self, op: type, other: Scalar | float, reverse: bool = False) -> Scalar:
        a, b = (self._lift(other), self) if reverse else (self, self._lift(other))
        return Scalar(self.c, self.c.ins(op(a.value, b.value)))

    def _compare(self, other: Scalar | float, predicate: str) -> Scalar:
        return Scalar(self.c, self.c.compare(self.value, self._lift(other).value, predicate))

    def __add__(self, other): return self._apply(arith.AddfOp, other)  # fmt: skip
    def __radd__(self, other): return self._apply(arith.AddfOp, other, reverse=True)  # fmt: skip
    def __sub__(self, other): return self._apply(arith.SubfOp, other)  # fmt: skip
    def __rsub__(self, other): return self._apply(arith.SubfOp, other, reverse=True)  # fmt: skip
    def __mul__(self, other): return self._apply(arith.MulfOp, other)  # fmt: skip
    def __rmul__(self, other): return self._apply(arith.MulfOp, other, reverse=True)  # fmt: skip
    def __truediv__(self, other): return self._apply(arith.DivfOp, other)  # fmt: skip
    def __neg__(self): return Scalar(self.c, self.c.ins(arith.NegfOp(self.value)))  # fmt: skip
    def __abs__(self): return Scalar(self.c, self.c.abs(self.value))  # fmt: skip
    # ordered comparisons (false for NaN), ``!=`` unordered (true for NaN), as C++'s
    def __lt__(self, other): return self._compare(other, "olt")  # fmt: skip
    def __gt__(self, other): return self._compare(other, "ogt")  # fmt: skip
    def __eq__(self, other): return self._compare(other, "oeq")  # type: ignore[override]  # fmt: skip
    def __ne__(self, other): return self._compare(other, "une")  # type: ignore[override]  # fmt: skip
    def __and__(self, other): return Scalar(self.c, self.c.ins(arith.AndIOp(self.value, other.value)))  # fmt: skip
    def __or__(self, other): return Scalar(self.c, self.c.ins(arith.OrIOp(self.value, other.value)))  # fmt: skip


@dataclass(frozen=True)
class KernelArithmetic:
    """The definitions' arithmetic (``polynomials.Arithmetic``) at one point of the kernel."""

    c: ScalarCode

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(numpy_dtype(self.c.element))

    def _float(self, v: Scalar | float) -> Scalar:
        return v if isinstance(v, Scalar) else Scalar(self.c, self.c.float(float(v)))

    def _unary(self, op: type, x: Scalar) -> Scalar:
        return Scalar(self.c, self.c.ins(op(x.value)))

    def where(self, condition: Scalar, on_true: Scalar | float, on_false: Scalar | float) -> Scalar:
        return Scalar(self.c, self.c.select(condition.value, self._float(on_true).value, self._float(on_false).value))

    def acos(self, x: Scalar) -> Scalar:
        return self._unary(math.AcosOp, x)

    def cos(self, x: Scalar) -> Scalar:
        return self._unary(math.CosOp, x)

    def sin(self, x: Scalar) -> Scalar:
        return self._unary(math.SinOp, x)

    def degree(self, n: Scalar) -> Scalar:
        return self.where(abs(n) < 2.0**63, self._unary(math.TruncOp, n), -1.0)

    def even(self, n: Scalar) -> Scalar:
        return Scalar(self.c, self.c.ins(RemFOp(n.value, self.c.float(2.0)))) == 0.0

    def recurrence(self, first: Scalar, step: Step, x: Scalar, trips: Scalar) -> Scalar:
        c = self.c
        p, q = c.local(c.element), c.local(c.element)
        c.store(c.float(1.0), p)
        c.store(first.value, q)
        count = c.ins(arith.IndexCastOp(c.ins(arith.FPToSIOp(trips.value, IntegerType(64))), IndexType()))
        t, body = c.range_until(count, lambda code: _is_nan(code, code.load(q)), "scan")
        k = body.ins(arith.SIToFPOp(body.ins(arith.IndexCastOp(body.next(t), IntegerType(64))), c.element))
        previous, current = body.load(p), body.load(q)
        inside = (Scalar(body, v) for v in (x.value, k, previous, current))
        body.store(step(*inside).value, q)
        body.store(current, p)
        return Scalar(c, c.load(q))


def _is_nan(c: ScalarCode, v: SSAValue) -> SSAValue:
    return c.compare(v, v, "uno")


@routine("orthogonal_polynomial")
def _orthogonal_polynomial(k: KernelArgs) -> None:
    c, (x, n) = k.c, k.inputs
    m = KernelArithmetic(c)
    value = evaluate(POLYNOMIALS[k.op.kind.data], m, Scalar(c, x.load(c)), Scalar(c, n.load(c)))
    k.out.store(c, value.value)

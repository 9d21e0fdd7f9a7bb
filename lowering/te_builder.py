"""A small Python DSL for writing ``te.compute`` bodies (like TVM's ``te.compute`` lambdas).

Compute rules describe each element of a result with scalar arithmetic::

    def rule(t: TEBuilder, op: graph.MatMulOp) -> SSAValue:
        a, b = op.lhs, op.rhs
        def element(s: Scalar, (i, j), (A, B)):
            k = s.dim(A, 1)
            return s.reduce("add", [k], s.zero(A), lambda s, (k,): s.mul(s.read(A, [i, k]), s.read(B, [k, j])))
        return t.compute("matmul", op.result.type, [a, b], element)

:class:`Scalar` picks the right ``arith`` op for the element type (``addf`` for floats,
``addi`` for integers and indices), so one rule serves every dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from ..dialects import te
from ..dialects.graph.types import is_bool, is_float
from ..dialects.scalar import RemFOp

FLOAT_MAX = {"f16": 65504.0, "f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308}

# Elementwise float math may contract a*b+c into an FMA (as C compilers do at -O2 with
# -ffp-contract=fast); reductions may also reassociate, which lets them vectorize.
CONTRACT = FastMathFlagsAttr((FastMathFlag.ALLOW_CONTRACT,))
REASSOC = FastMathFlagsAttr((FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT))

Body = Callable[["Scalar", tuple[SSAValue, ...], tuple[SSAValue, ...]], SSAValue]
ReduceBody = Callable[["Scalar", tuple[SSAValue, ...]], SSAValue]


class Scalar:
    """Inserts scalar ops at the end of a te body block."""

    def __init__(self, block: Block):
        self.block = block
        self._b = Builder(InsertPoint.at_end(block))

    def _insert(self, op: Operation) -> SSAValue:
        self._b.insert(op)
        return op.results[0]

    # -- constants -----------------------------------------------------------------

    def const(self, value: float | int | bool, t: Attribute) -> SSAValue:
        if isinstance(t, IndexType):
            return self._insert(arith.ConstantOp(IntegerAttr(int(value), t)))
        if is_float(t):
            return self._insert(arith.ConstantOp(FloatAttr(float(value), t)))
        if isinstance(t, IntegerType) and t.width.data == 1:
            return self._insert(arith.ConstantOp(IntegerAttr(-1 if value else 0, t)))
        return self._insert(arith.ConstantOp(IntegerAttr(int(value), t)))

    def index(self, value: int) -> SSAValue:
        return self.const(value, IndexType())

    def lowest(self, t: Attribute) -> SSAValue:
        """The identity of max: -inf for floats, the smallest integer otherwise."""
        return self.const(lowest_value(t), t)

    def highest(self, t: Attribute) -> SSAValue:
        return self.const(highest_value(t), t)

    # -- tensors -------------------------------------------------------------------

    def read(self, tensor: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return self._insert(te.ReadOp(tensor, list(indices)))

    def dim(self, tensor: SSAValue, axis: int) -> SSAValue:
        """Size of ``tensor`` along ``axis``: a constant when static, ``te.dim`` when symbolic."""
        size = tensor.type.get_shape()[axis]
        return self.index(size) if size >= 0 else self._insert(te.DimOp(tensor, axis))

    def read_padded(
        self, tensor: SSAValue, indices: Sequence[SSAValue], check_axes: Sequence[int], pad: SSAValue
    ) -> SSAValue:
        """``tensor[indices]``, or ``pad`` where an index on ``check_axes`` is outside the
        tensor. The read itself uses clamped indices, so it never leaves the buffer."""
        indices = list(indices)
        inside = None
        for axis in check_axes:
            size = self.dim(tensor, axis)
            idx = indices[axis]
            ok = self._insert(arith.AndIOp(self.cmp("ge", idx, self.index(0)), self.cmp("lt", idx, size)))
            inside = ok if inside is None else self._insert(arith.AndIOp(inside, ok))
            indices[axis] = self.clamp(idx, self.index(0), self.sub(size, self.index(1)))
        value = self.read(tensor, indices)
        return value if inside is None else self.select(inside, value, pad)

    def clamp(self, x: SSAValue, low: SSAValue, high: SSAValue) -> SSAValue:
        """``min(max(x, low), high)`` (the form ``schedule/padding.py`` recognises)."""
        return self.min(self.max(x, low), high)

    def index_to(self, x: SSAValue, t: Attribute) -> SSAValue:
        """An ``index`` value as a number of type ``t`` (float or integer)."""
        as_int = self._insert(arith.IndexCastOp(x, IntegerType(64)))
        return self.cast(as_int, t)

    def reduce(
        self, combiner: str, extents: Sequence[SSAValue | int], init: float | int, body: ReduceBody, t: Attribute
    ) -> SSAValue:
        """Combine ``body(axes)`` over the axes' extents, starting from ``init``."""
        extents = [self.index(e) if isinstance(e, int) else e for e in extents]
        block = te.ReduceOp.build_body(len(extents))
        inner = Scalar(block)
        value = body(inner, tuple(block.args))
        inner._b.insert(te.YieldOp(value))
        init_attr = FloatAttr(float(init), t) if is_float(t) else IntegerAttr(int(init), t)
        return self._insert(te.ReduceOp(combiner, extents, init_attr, Region(block)))

    # -- arithmetic (dispatch on the element type) -----------------------------------------

    def _binary(self, a: SSAValue, b: SSAValue, float_op, int_op) -> SSAValue:
        if is_float(a.type):
            return self._insert(float_op(a, b, CONTRACT))
        return self._insert(int_op(a, b))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_bool(a.type):
            return self._insert(arith.OrIOp(a, b))  # numpy: True + True is True
        return self._binary(a, b, arith.AddfOp, arith.AddiOp)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary(a, b, arith.SubfOp, arith.SubiOp)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary(a, b, arith.MulfOp, arith.MuliOp)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Float division; integer division rounds toward zero and x/0 = 0."""
        if is_float(a.type):
            return self._insert(arith.DivfOp(a, b, CONTRACT))
        # Neither x/0 nor MIN/-1 may reach the division: both trap on x86 (SIGFPE).
        # x/-1 is -x instead, wrapping for MIN as numpy does.
        zero = self.const(0, b.type)
        is_zero = self.cmp("eq", b, zero)
        is_minus_one = self.cmp("eq", b, self.const(-1, b.type))
        unsafe = self._insert(arith.OrIOp(is_zero, is_minus_one))
        safe = self.select(unsafe, self.const(1, b.type), b)
        quotient = self.select(is_minus_one, self.neg(a), self._insert(arith.DivSIOp(a, safe)))
        return self.select(is_zero, zero, quotient)

    def floordiv(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Integer (index) division rounding toward -inf; ``b`` must be positive."""
        return self._insert(arith.FloorDivSIOp(a, b))

    def rem(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._insert(arith.RemSIOp(a, b))

    def fmod(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """C's ``fmod`` (the sign of ``a``); integers: the truncated remainder, x fmod 0 = 0."""
        if is_float(a.type):
            return self._insert(RemFOp(a, b))
        # As in div: neither x % 0 nor MIN % -1 may reach the division (SIGFPE on x86);
        # x % -1 is 0.
        zero = self.const(0, b.type)
        unsafe = self._insert(arith.OrIOp(self.cmp("eq", b, zero), self.cmp("eq", b, self.const(-1, b.type))))
        remainder = self.rem(a, self.select(unsafe, self.const(1, b.type), b))
        return self.select(unsafe, zero, remainder)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self._insert(arith.MaximumfOp(a, b))
        if is_bool(a.type):
            return self._insert(arith.MaxUIOp(a, b))  # i1 is unsigned: false < true
        return self._insert(arith.MaxSIOp(a, b))

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self._insert(arith.MinimumfOp(a, b))
        if is_bool(a.type):
            return self._insert(arith.MinUIOp(a, b))
        return self._insert(arith.MinSIOp(a, b))

    def neg(self, a: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self._insert(arith.NegfOp(a))
        return self.sub(self.const(0, a.type), a)

    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """``eq ne lt le gt ge``; ordered for floats (NaN is false except for ne)."""
        if is_float(a.type):
            fp = {"ne": "une"}.get(predicate, "o" + predicate)
            return self._insert(arith.CmpfOp(a, b, fp))
        # i1 compares unsigned (false < true, as in numpy); as signed, true would be -1.
        ip = {"eq": "eq", "ne": "ne"}.get(predicate, ("u" if is_bool(a.type) else "s") + predicate)
        return self._insert(arith.CmpiOp(a, b, ip))

    def select(self, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._insert(arith.SelectOp(condition, a, b))

    def math(self, op_class: type[Operation], *args: SSAValue) -> SSAValue:
        """A ``math`` dialect op (``math.ExpOp`` ...) on these operands."""
        return self._insert(op_class(*args))

    def cast(self, x: SSAValue, to: Attribute) -> SSAValue:
        """Convert a scalar: float->int rounds toward zero, bool->number is 0/1, number->bool is != 0."""
        frm = x.type
        if frm == to:
            return x
        if isinstance(to, IntegerType) and to.width.data == 1:
            return self.cmp("ne", x, self.const(0, frm))
        if isinstance(frm, IntegerType) and frm.width.data == 1:
            if is_float(to):
                return self._insert(arith.UIToFPOp(x, to))
            return self._insert(arith.ExtUIOp(x, to))
        if is_float(frm) and is_float(to):
            widen = frm.bitwidth < to.bitwidth
            return self._insert(arith.ExtFOp(x, to) if widen else arith.TruncFOp(x, to))
        if is_float(frm):
            return self._insert(arith.FPToSIOp(x, to))
        if is_float(to):
            return self._insert(arith.SIToFPOp(x, to))
        widen = frm.width.data < to.width.data
        return self._insert(arith.ExtSIOp(x, to) if widen else arith.TruncIOp(x, to))


def lowest_value(t: Attribute) -> float | int:
    if is_float(t):
        return float("-inf")
    if is_bool(t):
        return False
    return -(1 << (t.width.data - 1))


def highest_value(t: Attribute) -> float | int:
    if is_float(t):
        return float("inf")
    if is_bool(t):
        return True
    return (1 << (t.width.data - 1)) - 1


class TEBuilder:
    """Inserts ``te.compute`` ops into a function, where a graph op stood."""

    def __init__(self, builder: Builder):
        self.builder = builder

    def compute(
        self, tag: str, result_type: TensorType, inputs: Sequence[SSAValue], body: Body
    ) -> SSAValue:
        """A ``te.compute`` named ``tag`` whose element at ``indices`` is ``body(s, indices, inputs)``."""
        block = te.ComputeOp.build_body(result_type, [v.type for v in inputs])
        rank = result_type.get_num_dims()
        s = Scalar(block)
        value = body(s, tuple(block.args[:rank]), tuple(block.args[rank:]))
        s._b.insert(te.YieldOp(value))
        op = te.ComputeOp(list(inputs), result_type, Region(block))
        op.attributes["tag"] = StringAttr(tag)
        self.builder.insert(op)
        return op.result


def broadcast_indices(s: Scalar, shape: Sequence[int], out_indices: Sequence[SSAValue]) -> list[SSAValue]:
    """Indices into a tensor of ``shape`` for an element of a result it was broadcast to
    (numpy rules; symbolic dims, ``-1``, never broadcast)."""
    offset = len(out_indices) - len(shape)
    zero = None
    indices = []
    for axis, size in enumerate(shape):
        if size == 1:
            zero = zero or s.index(0)
            indices.append(zero)
        else:
            indices.append(out_indices[offset + axis])
    return indices

"""TE rules of the elementwise graph ops: one scalar function per op, broadcasting reads."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from ...dialects import scalar
from ...dialects.graph import elementwise as ew
from ..te_builder import Scalar, TEBuilder, broadcast_indices
from .registry import compute_rule, tag_of


def _sigmoid(s: Scalar, x: SSAValue) -> SSAValue:
    one = s.const(1.0, x.type)
    return s.div(one, s.add(one, s.math(math.ExpOp, s.neg(x))))


def _rsqrt(s: Scalar, x: SSAValue) -> SSAValue:
    return s.div(s.const(1.0, x.type), s.math(math.SqrtOp, x))


def _abs(s: Scalar, x: SSAValue) -> SSAValue:
    return s.select(s.cmp("lt", x, s.const(0, x.type)), s.neg(x), x)


UNARY: dict[type[ew.UnaryOp], Callable[[Scalar, SSAValue], SSAValue]] = {
    ew.NegOp: lambda s, x: s.neg(x),
    ew.AbsOp: _abs,
    ew.ReluOp: lambda s, x: s.max(x, s.const(0, x.type)),
    ew.ExpOp: lambda s, x: s.math(math.ExpOp, x),
    ew.LogOp: lambda s, x: s.math(math.LogOp, x),
    ew.SqrtOp: lambda s, x: s.math(math.SqrtOp, x),
    ew.RsqrtOp: _rsqrt,
    ew.TanhOp: lambda s, x: s.math(math.TanhOp, x),
    ew.SigmoidOp: _sigmoid,
    ew.ErfOp: lambda s, x: s.math(math.ErfOp, x),
    ew.FloorOp: lambda s, x: s.math(math.FloorOp, x),
    ew.RoundOp: lambda s, x: s.math(math.RoundEvenOp, x),
    ew.CeilOp: lambda s, x: s.math(math.CeilOp, x),
    ew.TruncOp: lambda s, x: s.math(math.TruncOp, x),
    ew.SinOp: lambda s, x: s.math(math.SinOp, x),
    ew.CosOp: lambda s, x: s.math(math.CosOp, x),
    ew.TanOp: lambda s, x: s.math(math.TanOp, x),
    ew.AtanOp: lambda s, x: s.math(math.AtanOp, x),
    ew.Log1pOp: lambda s, x: s.math(math.Log1pOp, x),
    ew.Expm1Op: lambda s, x: s.math(math.ExpM1Op, x),
    ew.Exp2Op: lambda s, x: s.math(math.Exp2Op, x),
    ew.Log2Op: lambda s, x: s.math(math.Log2Op, x),
    ew.Log10Op: lambda s, x: s.math(math.Log10Op, x),
    ew.AsinOp: lambda s, x: s.math(math.AsinOp, x),
    ew.AcosOp: lambda s, x: s.math(math.AcosOp, x),
    ew.SinhOp: lambda s, x: s.math(math.SinhOp, x),
    ew.CoshOp: lambda s, x: s.math(math.CoshOp, x),
    ew.AsinhOp: lambda s, x: s.math(math.AsinhOp, x),
    ew.AcoshOp: lambda s, x: s.math(math.AcoshOp, x),
    ew.AtanhOp: lambda s, x: s.math(math.AtanhOp, x),
    ew.ErfcOp: lambda s, x: s.math(scalar.ErfcOp, x),
    ew.LgammaOp: lambda s, x: s.math(scalar.LgammaOp, x),
}

BINARY: dict[type[ew.BinaryOp], Callable[[Scalar, SSAValue, SSAValue], SSAValue]] = {
    ew.AddOp: Scalar.add,
    ew.SubOp: Scalar.sub,
    ew.MulOp: Scalar.mul,
    ew.DivOp: Scalar.div,
    ew.MaxOp: Scalar.max,
    ew.MinOp: Scalar.min,
    ew.PowOp: lambda s, a, b: s.math(math.PowFOp, a, b),
    ew.FmodOp: Scalar.fmod,
    ew.Atan2Op: lambda s, a, b: s.math(math.Atan2Op, a, b),
    ew.CopysignOp: lambda s, a, b: s.math(math.CopySignOp, a, b),
    ew.BitwiseAndOp: lambda s, a, b: s.math(arith.AndIOp, a, b),
    ew.BitwiseOrOp: lambda s, a, b: s.math(arith.OrIOp, a, b),
    ew.BitwiseXorOp: lambda s, a, b: s.math(arith.XOrIOp, a, b),
}


@compute_rule(*UNARY)
def unary(t: TEBuilder, op: ew.UnaryOp) -> SSAValue:
    fn = UNARY[type(op)]
    return t.compute(
        tag_of(op), op.result.type, [op.input], lambda s, idx, ins: fn(s, s.read(ins[0], idx))
    )


def _broadcast_reads(s: Scalar, idx: tuple[SSAValue, ...], ins: tuple[SSAValue, ...]) -> list[SSAValue]:
    return [s.read(x, broadcast_indices(s, x.type.get_shape(), idx)) for x in ins]


@compute_rule(*BINARY)
def binary(t: TEBuilder, op: ew.BinaryOp) -> SSAValue:
    fn = BINARY[type(op)]
    return t.compute(
        tag_of(op), op.result.type, [op.lhs, op.rhs], lambda s, idx, ins: fn(s, *_broadcast_reads(s, idx, ins))
    )


@compute_rule(ew.CompareOp)
def compare(t: TEBuilder, op: ew.CompareOp) -> SSAValue:
    predicate = op.predicate.data
    return t.compute(
        "compare",
        op.result.type,
        [op.lhs, op.rhs],
        lambda s, idx, ins: s.cmp(predicate, *_broadcast_reads(s, idx, ins)),
    )


@compute_rule(ew.WhereOp)
def where(t: TEBuilder, op: ew.WhereOp) -> SSAValue:
    return t.compute(
        "where",
        op.result.type,
        [op.condition, op.on_true, op.on_false],
        lambda s, idx, ins: s.select(*_broadcast_reads(s, idx, ins)),
    )


@compute_rule(ew.CastOp)
def cast(t: TEBuilder, op: ew.CastOp) -> SSAValue:
    to = op.result.type.element_type
    return t.compute("cast", op.result.type, [op.input], lambda s, idx, ins: s.cast(s.read(ins[0], idx), to))

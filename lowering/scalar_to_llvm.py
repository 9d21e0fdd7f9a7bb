"""Scalar ``arith`` and ``math`` ops to xDSL's ``llvm`` dialect, one converter per op.

xDSL 0.74 has no arith/math -> llvm conversion, so these are ours. Each converter
receives the op and its operands already converted, inserts llvm ops with a builder,
and returns the converted result. ``index`` is ``i64``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

from ..dialects.scalar import ErfcOp, LgammaOp, RemFOp
from . import llvm_ops

Converter = Callable[[Builder, Operation, Sequence[SSAValue]], SSAValue]

SCALAR_CONVERTERS: dict[type[Operation], Converter] = {}

def converts(*op_classes: type[Operation]) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for c in op_classes:
            SCALAR_CONVERTERS[c] = fn
        return fn

    return register


def llvm_type(t: Attribute) -> Attribute:
    return i64 if isinstance(t, IndexType) else t


def _ins(b: Builder, op: Operation) -> SSAValue:
    b.insert(op)
    return op.results[0]


def _fastmath(op: Operation) -> llvm.FastMathAttr:
    flags = getattr(op, "fastmath", None)
    if flags is None:
        return llvm.FastMathAttr(None)
    return llvm.FastMathAttr(tuple(FastMathFlag(f) for f in flags.data))


def _type_suffix(t: Attribute) -> str:
    return str(llvm_type(t))


def intrinsic(b: Builder, name: str, args: Sequence[SSAValue], result: Attribute) -> SSAValue:
    """Call an LLVM intrinsic, e.g. ``intrinsic(b, "llvm.maximum.f32", [x, y], f32)``."""
    return _ins(b, llvm.CallIntrinsicOp(name, list(args), [result]))


def int_constant(b: Builder, value: int, t: Attribute = i64) -> SSAValue:
    return _ins(b, llvm_ops.constant(value, t))


# ---------------------------------------------------------------------------
# constants and casts


@converts(arith.ConstantOp)
def _constant(b: Builder, op: arith.ConstantOp, _: Sequence[SSAValue]) -> SSAValue:
    value = op.value
    t = llvm_type(value.type)
    if isinstance(value, FloatAttr):
        return _ins(b, llvm.ConstantOp(FloatAttr(value.value.data, t), t))
    if isinstance(value, IntegerAttr):
        v = value.value.data
        if t == i1:
            v = 1 if v else 0
        return _ins(b, llvm_ops.constant(v, t))
    raise NotImplementedError(f"arith.constant of {value}")


@converts(arith.IndexCastOp)
def _index_cast(b: Builder, op: arith.IndexCastOp, args: Sequence[SSAValue]) -> SSAValue:
    (x,) = args
    frm, to = llvm_type(op.input.type), llvm_type(op.result.type)
    if frm == to:
        return x
    if frm.width.data < to.width.data:
        return _ins(b, llvm.SExtOp(x, to))
    return _ins(b, llvm.TruncOp(x, to))


_CASTS: dict[type[Operation], type[Operation]] = {
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.BitcastOp: llvm.BitcastOp,
}


@converts(*_CASTS)
def _cast(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    if isinstance(op, arith.TruncFOp) and op.input.type == f64 and op.result.type == f16:
        return _truncate_f64_to_f16(b, args[0])
    return _ins(b, _CASTS[type(op)](args[0], op.results[0].type))


def _truncate_f64_to_f16(b: Builder, x: SSAValue) -> SSAValue:
    """``fptrunc double to half`` without its libcall (``__truncdfhf2``, which the JIT
    does not resolve: the call jumped to address 0).

    Round to f32 *to odd* (toward zero, then set the last bit if inexact), then to f16
    to nearest: correctly rounded, since f32 keeps more than 11 + 2 bits. NaN and
    infinities pass through; values beyond the f32 range become inf as they should.
    """
    y = _ins(b, llvm.FPTruncOp(x, f32))
    back = _ins(b, llvm.FPExtOp(y, f64))
    rounded_up = _ins(
        b,
        llvm.FCmpOp(
            intrinsic(b, "llvm.fabs.f64", [back], f64), intrinsic(b, "llvm.fabs.f64", [x], f64), _fcmp("ogt")
        ),
    )
    inexact = _ins(b, llvm.FCmpOp(back, x, _fcmp("one")))
    bits = _ins(b, llvm.BitcastOp(y, i32))
    toward_zero = _ins(b, llvm.SubOp(bits, _ins(b, llvm.ZExtOp(rounded_up, i32))))
    odd = _ins(b, llvm.OrOp(toward_zero, _ins(b, llvm.ZExtOp(inexact, i32))))
    return _ins(b, llvm.FPTruncOp(_ins(b, llvm.BitcastOp(odd, f32)), f16))


def _fcmp(name: str) -> IntegerAttr:
    return IntegerAttr(llvm.FCmpPredicateFlag(name).to_int(), i64)


@converts(arith.UIToFPOp)
def _uitofp(b: Builder, op: arith.UIToFPOp, args: Sequence[SSAValue]) -> SSAValue:
    # Only booleans reach here (cast of i1): widen with zeros, then convert as signed.
    wide = _ins(b, llvm.ZExtOp(args[0], i32))
    return _ins(b, llvm.SIToFPOp(wide, op.result.type))


@converts(arith.FPToSIOp)
def _fptosi(b: Builder, op: arith.FPToSIOp, args: Sequence[SSAValue]) -> SSAValue:
    # The saturating form: defined for every input (NaN -> 0, out of range -> min/max).
    to, frm = op.result.type, op.input.type
    return intrinsic(b, f"llvm.fptosi.sat.{to}.{frm}", args, to)


# ---------------------------------------------------------------------------
# arithmetic

_FLOAT_BINARY = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}


@converts(*_FLOAT_BINARY)
def _float_binary(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    return _ins(b, llvm_ops.make(_FLOAT_BINARY[type(op)], args[0], args[1], _fastmath(op)))


@converts(arith.NegfOp)
def _negf(b: Builder, op: arith.NegfOp, args: Sequence[SSAValue]) -> SSAValue:
    return _ins(b, llvm.FNegOp(args[0]))


_INT_BINARY = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}


@converts(*_INT_BINARY)
def _int_binary(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    return _ins(b, llvm_ops.make(_INT_BINARY[type(op)], args[0], args[1]))


@converts(arith.FloorDivSIOp)
def _floordiv(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    """a // b rounding toward -inf: the truncated quotient, minus one when the
    remainder is non-zero and the signs differ."""
    a, d = args
    t = a.type
    q = _ins(b, llvm.SDivOp(a, d))
    r = _ins(b, llvm.SRemOp(a, d))
    zero = int_constant(b, 0, t)
    inexact = _ins(b, llvm.ICmpOp(r, zero, llvm_ops.icmp_predicate("ne")))
    signs_differ = _ins(b, llvm.ICmpOp(_ins(b, llvm.XOrOp(r, d)), zero, llvm_ops.icmp_predicate("slt")))
    adjust = _ins(b, llvm.AndOp(inexact, signs_differ))
    return _ins(b, llvm.SubOp(q, _ins(b, llvm.ZExtOp(adjust, t))))



def _select_by(predicate: str) -> Converter:
    def convert(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
        a, c = args
        return _ins(b, llvm_ops.make(llvm.SelectOp, _ins(b, llvm_ops.make(llvm.ICmpOp, a, c, llvm_ops.icmp_predicate(predicate))), a, c))

    return convert


converts(arith.MaxSIOp)(_select_by("sgt"))
converts(arith.MinSIOp)(_select_by("slt"))
converts(arith.MaxUIOp)(_select_by("ugt"))
converts(arith.MinUIOp)(_select_by("ult"))


def _float_intrinsic(name: str) -> Converter:
    def convert(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
        t = op.results[0].type
        return intrinsic(b, f"llvm.{name}.{_type_suffix(t)}", args, t)

    return convert


# NaN-propagating min/max, like numpy and torch.
converts(arith.MaximumfOp)(_float_intrinsic("maximum"))
converts(arith.MinimumfOp)(_float_intrinsic("minimum"))
converts(arith.MaxnumfOp)(_float_intrinsic("maxnum"))
converts(arith.MinnumfOp)(_float_intrinsic("minnum"))


@converts(arith.CmpfOp)
def _cmpf(b: Builder, op: arith.CmpfOp, args: Sequence[SSAValue]) -> SSAValue:
    # arith and llvm number the predicates alike.
    return _ins(b, llvm_ops.make(llvm.FCmpOp, args[0], args[1], llvm_ops.integer(op.predicate.value.data)))


@converts(arith.CmpiOp)
def _cmpi(b: Builder, op: arith.CmpiOp, args: Sequence[SSAValue]) -> SSAValue:
    return _ins(b, llvm_ops.make(llvm.ICmpOp, args[0], args[1], llvm_ops.integer(op.predicate.value.data)))


@converts(arith.SelectOp)
def _select(b: Builder, op: arith.SelectOp, args: Sequence[SSAValue]) -> SSAValue:
    return _ins(b, llvm_ops.make(llvm.SelectOp, *args))


# ---------------------------------------------------------------------------
# math

converts(math.ExpOp)(_float_intrinsic("exp"))
converts(math.LogOp)(_float_intrinsic("log"))
converts(math.SqrtOp)(_float_intrinsic("sqrt"))
converts(math.FloorOp)(_float_intrinsic("floor"))
converts(math.RoundEvenOp)(_float_intrinsic("roundeven"))
converts(math.CeilOp)(_float_intrinsic("ceil"))
converts(math.AbsFOp)(_float_intrinsic("fabs"))
converts(math.FmaOp)(_float_intrinsic("fma"))
converts(math.PowFOp)(_float_intrinsic("pow"))
converts(math.CopySignOp)(_float_intrinsic("copysign"))
converts(math.TruncOp)(_float_intrinsic("trunc"))
# LLVM's code generator turns these into the C library's sinf/cosf/exp2f... calls (a vector
# of them into one call per lane): libm's accuracy, resolved by the JIT from the process.
converts(math.SinOp)(_float_intrinsic("sin"))
converts(math.CosOp)(_float_intrinsic("cos"))
converts(math.Exp2Op)(_float_intrinsic("exp2"))
converts(math.Log2Op)(_float_intrinsic("log2"))
converts(math.Log10Op)(_float_intrinsic("log10"))


def _libm(stem: str) -> Converter:
    """A call to the C library's ``tanhf``/``tanh``... (declared by the module converter).

    Scalar calls stop vectorisation; expand-math replaces them in hot code."""

    def convert(b: Builder, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
        t = op.results[0].type
        if t == f16:  # libm has no half variant: compute in f32 and round back
            wide = [_ins(b, llvm.FPExtOp(a, f32)) for a in args]
            return _ins(b, llvm.FPTruncOp(_ins(b, llvm.CallOp(stem + "f", *wide, return_type=f32)), t))
        name = stem + ("f" if t == f32 else "")
        return _ins(b, llvm.CallOp(name, *args, return_type=t))

    return convert


converts(math.TanhOp)(_libm("tanh"))
converts(math.ErfOp)(_libm("erf"))
converts(math.TanOp)(_libm("tan"))
converts(math.AtanOp)(_libm("atan"))
converts(math.Atan2Op)(_libm("atan2"))
converts(math.Log1pOp)(_libm("log1p"))
converts(math.ExpM1Op)(_libm("expm1"))
converts(math.AsinOp)(_libm("asin"))
converts(math.AcosOp)(_libm("acos"))
converts(math.SinhOp)(_libm("sinh"))
converts(math.CoshOp)(_libm("cosh"))
converts(math.AsinhOp)(_libm("asinh"))
converts(math.AcoshOp)(_libm("acosh"))
converts(math.AtanhOp)(_libm("atanh"))
converts(ErfcOp)(_libm("erfc"))
# lgammaf also stores the sign of gamma in the global ``signgam``, which nothing reads:
# parallel lanes race on it harmlessly (lgammaf_r is glibc-only).
converts(LgammaOp)(_libm("lgamma"))


@converts(RemFOp)
def _remf(b: Builder, op: RemFOp, args: Sequence[SSAValue]) -> SSAValue:
    # frem: the C library's fmodf/fmod (exact); a vector of it becomes one call per lane
    return _ins(b, llvm.FRemOp(args[0], args[1], _fastmath(op)))


@converts(math.RsqrtOp)
def _rsqrt(b: Builder, op: math.RsqrtOp, args: Sequence[SSAValue]) -> SSAValue:
    t = op.result.type
    one = _ins(b, llvm.ConstantOp(FloatAttr(1.0, t), t))
    return _ins(b, llvm.FDivOp(one, intrinsic(b, f"llvm.sqrt.{t}", args, t)))


__all__ = ["SCALAR_CONVERTERS", "intrinsic", "int_constant", "llvm_type"]

"""``lowp`` dot products to LLVM: one x86 instruction per vector where the op's ``isa``
says the target has it, widened arithmetic elsewhere (any target, same results).

Registered into loop-to-llvm's converter tables (scalar and vectorized loops):

* ``lowp.dot4_u8s8`` on vectors of 16 words with ``isa = "avx512_vnni"``:
  ``llvm.x86.avx512.vpdpbusd.512`` (8 words: ``.256``); otherwise the bytes are
  zero/sign-extended to i32, multiplied, and each lane's 4 products summed
  (shuffles + adds: LLVM picks ``vpmaddwd`` or plain multiplies for the target);
* ``lowp.dot2_bf16`` on 16 words with ``isa = "avx512_bf16"``:
  ``llvm.x86.avx512bf16.dpbf16ps.512``; otherwise each bfloat16 half is made a float32
  by a shift or a mask (exact) and the two products are added in order.

Scalars (a remainder loop, a kernel left serial) take the widened form with 1 lane.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i8, i32
from xdsl.ir import Attribute, Operation, SSAValue

from ..dialects.lowp import BF16, VNNI, Dot2BF16Op, Dot4U8S8Op
from . import llvm_ops
from .scalar_to_llvm import SCALAR_CONVERTERS, intrinsic
from .vectorize import VECTOR_CONVERTERS, vector_constant

#: VNNI / BF16 intrinsics by the number of 32-bit lanes
_VPDPBUSD = {16: "llvm.x86.avx512.vpdpbusd.512", 8: "llvm.x86.avx512.vpdpbusd.256"}
_DPBF16PS = {16: "llvm.x86.avx512bf16.dpbf16ps.512", 8: "llvm.x86.avx512bf16.dpbf16ps.256"}


def _ins(b: Builder, op: Operation) -> SSAValue:
    b.insert(op)
    return op.results[0]


def _isa(op: Operation) -> str | None:
    return op.isa.data if op.isa is not None else None


def _lanes_of(value: SSAValue) -> int:
    return value.type.get_shape()[0] if isinstance(value.type, VectorType) else 1


def _widened_dot4(b: Builder, acc: SSAValue, a: SSAValue, w: SSAValue) -> SSAValue:
    """acc + per-lane sum of u8(a bytes) * s8(w bytes) (lanes: 1 for scalars)."""
    lanes = _lanes_of(acc)
    bytes_type = VectorType(i8, [4 * lanes])
    wide = VectorType(i32, [4 * lanes])
    ua = _ins(b, llvm.ZExtOp(_ins(b, llvm.BitcastOp(a, bytes_type)), wide))
    sw = _ins(b, llvm.SExtOp(_ins(b, llvm.BitcastOp(w, bytes_type)), wide))
    products = _ins(b, llvm.MulOp(ua, sw))
    total = acc
    for j in range(4):
        if lanes == 1:
            part = _ins(b, llvm.BitcastOp(_shuffle(b, products, [j], i32), i32))
        else:
            part = _shuffle(b, products, list(range(j, 4 * lanes, 4)), i32)
        total = _ins(b, llvm.AddOp(total, part))
    return total


def _shuffle(b: Builder, v: SSAValue, mask: list[int], element: Attribute) -> SSAValue:
    return _ins(b, llvm.ShuffleVectorOp(v, v, DenseArrayBase.from_list(i32, mask), VectorType(element, [len(mask)])))


def _dot4_vector(b: Builder, op: Dot4U8S8Op, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    acc, a, w = args
    if _isa(op) == VNNI and lanes in _VPDPBUSD:
        return intrinsic(b, _VPDPBUSD[lanes], [acc, a, w], acc.type)
    return _widened_dot4(b, acc, a, w)


def _dot4_scalar(b: Builder, op: Dot4U8S8Op, args: Sequence[SSAValue]) -> SSAValue:
    return _widened_dot4(b, *args)


def _bf16_halves(b: Builder, word: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(high, low) bfloat16 halves of i32 word(s) as float32 (exact: the bits moved)."""
    lanes = _lanes_of(word)
    t = VectorType(f32, [lanes]) if lanes > 1 else f32

    def constant(value: int) -> SSAValue:
        if lanes > 1:
            return vector_constant(b, [value] * lanes, i32)
        return _ins(b, llvm_ops.constant(value, i32))

    high = _ins(b, llvm.BitcastOp(_ins(b, llvm.AndOp(word, constant(-65536))), t))
    low = _ins(b, llvm.BitcastOp(_ins(b, llvm.ShlOp(word, constant(16))), t))
    return high, low


def _widened_dot2(b: Builder, acc: SSAValue, a: SSAValue, w: SSAValue) -> SSAValue:
    a_high, a_low = _bf16_halves(b, a)
    w_high, w_low = _bf16_halves(b, w)
    total = _ins(b, llvm.FAddOp(acc, _ins(b, llvm.FMulOp(a_high, w_high))))
    return _ins(b, llvm.FAddOp(total, _ins(b, llvm.FMulOp(a_low, w_low))))


def _dot2_vector(b: Builder, op: Dot2BF16Op, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    acc, a, w = args
    if _isa(op) == BF16 and lanes in _DPBF16PS:
        return intrinsic(b, _DPBF16PS[lanes], [acc, a, w], acc.type)
    return _widened_dot2(b, acc, a, w)


def _dot2_scalar(b: Builder, op: Dot2BF16Op, args: Sequence[SSAValue]) -> SSAValue:
    return _widened_dot2(b, *args)


SCALAR_CONVERTERS[Dot4U8S8Op] = _dot4_scalar
SCALAR_CONVERTERS[Dot2BF16Op] = _dot2_scalar
VECTOR_CONVERTERS[Dot4U8S8Op] = _dot4_vector
VECTOR_CONVERTERS[Dot2BF16Op] = _dot2_vector

__all__: list[str] = []

"""The ``lowp`` dialect: low-precision dot products of packed words, the scalar form of
x86's ``vpdpbusd`` (int8) and ``vdpbf16ps`` (bfloat16).

Each op accumulates a short dot product of the narrow values packed in two 32-bit
words. In a kernel they are scalar ops like ``arith.addi``: the vectorizer turns a
loop of them into one SIMD instruction per vector of accumulators (the word of one
operand broadcast, the other loaded), which is how an int8 GEMM reaches VNNI's 4x the
float32 multiply-add rate (``lowering/lowp_to_llvm.py``). The ``isa`` property says
which instruction the target has (``"avx512_vnni"``, ``"avx512_bf16"``); without it the
same results come from widened arithmetic on any target.

Examples::

    %s = lowp.dot4_u8s8 %acc, %a, %b : i32
    %t = lowp.dot2_bf16 %acc, %a, %b {isa = "avx512_bf16"} : f32
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import StringAttr, f32, i32
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

#: isa property values
VNNI = "avx512_vnni"
BF16 = "avx512_bf16"


class _DotOp(IRDLOperation):
    isa = opt_prop_def(StringAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$acc `,` $a `,` $b attr-dict `:` type($result)"

    def __init__(self, acc: SSAValue, a: SSAValue, b: SSAValue, isa: str | None = None):
        super().__init__(
            operands=[acc, a, b],
            result_types=[acc.type],
            properties={"isa": StringAttr(isa)} if isa else {},
        )


@irdl_op_definition
class Dot4U8S8Op(_DotOp):
    """``acc + sum_j u8(a.byte[j]) * s8(b.byte[j])`` over the 4 bytes of the words ``a`` and
    ``b`` (byte 0 the lowest), in i32 (wrapping): ``vpdpbusd``'s lane.

    Example: ``%s = lowp.dot4_u8s8 %acc, %a, %b : i32``
    """

    name = "lowp.dot4_u8s8"
    acc = operand_def(i32)
    a = operand_def(i32)
    b = operand_def(i32)
    result = result_def(i32)


@irdl_op_definition
class Dot2BF16Op(_DotOp):
    """``acc + bf16(a.hi) * bf16(b.hi) + bf16(a.lo) * bf16(b.lo)`` over the two bfloat16
    halves of the words ``a`` and ``b``, in float32 (each step rounded): ``vdpbf16ps``'s lane.

    Example: ``%t = lowp.dot2_bf16 %acc, %a, %b : f32``
    """

    name = "lowp.dot2_bf16"
    acc = operand_def(f32)
    a = operand_def(i32)
    b = operand_def(i32)
    result = result_def(f32)


def dot4_u8s8_reference(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numpy semantics of ``lowp.dot4_u8s8`` on int32 arrays."""
    a, b = np.ascontiguousarray(a, np.int32), np.ascontiguousarray(b, np.int32)
    ua = a.view(np.uint8).reshape(*a.shape, 4).astype(np.int64)
    sb = b.view(np.int8).reshape(*b.shape, 4).astype(np.int64)
    return (np.asarray(acc, np.int64) + (ua * sb).sum(-1)).astype(np.int32)


LowP = Dialect("lowp", [Dot4U8S8Op, Dot2BF16Op], [])

__all__ = ["BF16", "VNNI", "Dot2BF16Op", "Dot4U8S8Op", "LowP", "dot4_u8s8_reference"]

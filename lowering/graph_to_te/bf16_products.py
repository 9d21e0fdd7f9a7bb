"""TE rule of ``graph.bf16_dense``: products of bfloat16-rounded operands summed in float32.

With a constant weight the weight is packed at compile time into words of two
bfloat16 values along k (``P[n / b, k / 2, n % b]``, b = 64 or 16 channels as for int8:
``quant_products.py``), and the reduction is a chain of ``lowp.dot2_bf16``: one
``vdpbf16ps`` per vector of 16 float32 accumulators on AVX512_BF16 (the strategy's
``accumulate_dots``), the exact widened products elsewhere. The activation's two
values of a word are read as they are stored when bfloat16 (a float32 input is rounded
to nearest even in the kernel: slower, the same numbers). Otherwise (a run-time
weight) each operand is rounded through a bfloat16 cast and the float32 products summed.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import bf16, f32, i32
from xdsl.ir import SSAValue

from ...dialects.graph import ConstantOp
from ...dialects.graph.quant_bf16 import BF16DenseOp
from ...dialects.graph.types import bfloat16_dtype
from ...dialects.lowp import Dot2BF16Op
from .. import lowp_to_llvm  # noqa: F401  (the lowp ops this form makes get their LLVM conversions)
from ..te_builder import Scalar, TEBuilder
from .quant_products import channel_block
from .registry import compute_rule

#: bfloat16 values per word
PAIR = 2


def pack_pairs(w: np.ndarray) -> np.ndarray:
    """(N, K) float -> int32 words (ceil(N/b), ceil(K/2), b) of bfloat16 pairs (k even in
    the low half), rounded to nearest even, zero padded; b = ``channel_block(N)``."""
    n, k = w.shape
    block = channel_block(n)
    blocks, words = -(-n // block), -(-k // PAIR)
    padded = np.zeros((blocks * block, words * PAIR), bfloat16_dtype())
    padded[:n, :k] = np.asarray(w).astype(bfloat16_dtype())
    pairs = padded.view(np.uint16).reshape(blocks, block, words, PAIR).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(pairs).view(np.int32).reshape(blocks, words, block)


def _rounded(s: Scalar, x: SSAValue) -> SSAValue:
    """A float32 or bfloat16 scalar as the float32 value of its bfloat16 rounding."""
    if x.type == bf16:
        return s.cast(x, f32)
    return s.cast(s.cast(x, bf16), f32)


def _bits(s: Scalar, x: SSAValue) -> SSAValue:
    """The bfloat16 bits of ``x`` in the high half of an i32 (the low half is zero for a
    bfloat16 value, rounding garbage for a float32 one: masked or shifted out)."""
    if x.type == bf16:
        return s._insert(arith.BitcastOp(s.cast(x, f32), i32))
    bits = s._insert(arith.BitcastOp(x, i32))
    lowest_kept = s._insert(arith.AndIOp(s._insert(arith.ShRUIOp(bits, s.const(16, i32))), s.const(1, i32)))
    return s.add(bits, s.add(lowest_kept, s.const(0x7FFF, i32)))


def _word(s: Scalar, low: SSAValue, high: SSAValue) -> SSAValue:
    """Two values' bfloat16 bits in one word, ``low`` in the low half."""
    high_half = s._insert(arith.AndIOp(_bits(s, high), s.const(-65536, i32)))
    low_half = s._insert(arith.ShRUIOp(_bits(s, low), s.const(16, i32)))
    return s._insert(arith.OrIOp(high_half, low_half))


def _plain(t: TEBuilder, op: BF16DenseOp) -> SSAValue:
    inputs = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])

    def body(s: Scalar, idx, ins):
        x, w, *bias = ins
        *rows, n = idx

        def term(r: Scalar, axes):
            return r.mul(_rounded(r, r.read(x, [*rows, axes[0]])), _rounded(r, r.read(w, [n, axes[0]])))

        acc = s.reduce("add", [s.dim(x, len(idx) - 1)], 0, term, f32)
        return s.add(acc, s.read(bias[0], [n])) if bias else acc

    return t.compute("bf16_dense", op.result.type, inputs, body)


@compute_rule(BF16DenseOp)
def bf16_dense(t: TEBuilder, op: BF16DenseOp) -> SSAValue:
    weight = op.weight.owner.array() if isinstance(op.weight.owner, ConstantOp) else None
    if weight is None:
        return _plain(t, op)
    words = pack_pairs(weight)
    packed = t.builder.insert(ConstantOp.from_array(words, "bf16_dense.words")).result
    k = op.input.type.get_shape()[-1]
    block = words.shape[-1]
    inputs = [op.input, packed] + ([op.bias] if op.bias is not None else [])

    def body(s: Scalar, idx, ins):
        x, w, *bias = ins
        *rows, n = idx
        axis = len(idx) - 1
        zero = s.const(0, x.type.element_type)

        def term(r: Scalar, axes):
            first = r.mul(axes[0], r.index(PAIR))
            low = r.read(x, [*rows, first])
            at = [*rows, r.add(first, r.index(1))]
            high = r.read_padded(x, at, [axis], zero) if k % PAIR else r.read(x, at)
            block_index = r._insert(arith.DivUIOp(n, r.index(block)))
            lane = r._insert(arith.RemUIOp(n, r.index(block)))
            return r._insert(Dot2BF16Op(r.const(0.0, f32), _word(r, low, high), r.read(w, [block_index, axes[0], lane])))

        acc = s.reduce("add", [words.shape[1]], 0, term, f32)
        return s.add(acc, s.read(bias[0], [n])) if bias else acc

    return t.compute("bf16_dense", op.result.type, inputs, body)


__all__ = ["bf16_dense", "pack_pairs"]

"""fold-qdq's third part: a quantized sum of two dequantized 8-bit tensors (the residual
add of a QDQ ResNet: ``quantize(dequantize(a) + dequantize(b), s, z)``) divides by ``s``
with a multiplication by ``1/s`` where that gives the same numbers for every input.

``quantize`` divides (``round(x / s)``, as ONNX defines it), and a vector division is
the slowest float instruction: ``vdivps`` on 16 lanes takes ~10 cycles on Zen 4, which
made the add kernels of an ORT-quantized ResNet-50 division-bound (0.18 ns per element).
``x * (1/s)`` may differ from ``x / s`` in the last bit, which moves the rounded result
only where ``x / s`` lies next to a half-integer; here ``x`` takes at most 256 x 256
values, so each one is checked at compile time -- the sum as written and as a fused
multiply-add (LLVM may contract either product into the addition) -- and the quantize
becomes ``quantize(x * (1/s), 1)`` only where all agree (``x / 1`` is ``x`` exactly).
"""

from __future__ import annotations

import numpy as np
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph import ConstantOp
from ..dialects.graph.elementwise import AddOp, MulOp
from ..dialects.graph.quant import DequantizeOp, QuantizeOp, as_values, qrange
from .fold_qdq_selections import scalar_constant


def _byte_terms(dq: DequantizeOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(the centered integers, their dequantized float32 values) of every value an 8-bit
    per-tensor dequantize with constant parameters can read; None otherwise."""
    if dq.dtype.data not in ("i8", "ui8") or dq.channel_axis(dq.input.type.get_shape()) is not None:
        return None
    scale, zero_point = scalar_constant(dq.scale), scalar_constant(dq.zero_point)
    if scale is None or zero_point is None:
        return None
    zero = int(as_values(np.asarray(zero_point), dq.dtype.data))
    low, high = qrange(dq.dtype.data)
    centered = np.arange(low, high + 1, dtype=np.int64) - zero
    return centered, (centered.astype(np.float32) * np.float32(scale)).astype(np.float32)


def _fused_sum(centered: np.ndarray, scale: float, other: np.ndarray) -> np.ndarray | None:
    """``fma(centered, scale, other)`` rounded once to float32 (all pairs), or None where
    float64 cannot hold a sum exactly (then the check cannot vouch for it)."""
    product = centered.astype(np.float64)[:, None] * np.float64(np.float32(scale))  # exact: 9 x 24 bits
    addend = other.astype(np.float64)[None, :]
    total = product + addend
    product, addend = np.broadcast_arrays(product, addend)
    if not (np.array_equal(total - addend, product) and np.array_equal(total - product, addend)):
        return None
    return total.astype(np.float32)


def _quantized(x: np.ndarray, divide: bool, factor: np.float32, zero: int, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = (x / factor) if divide else (x * factor)
    low, high = qrange(dtype)
    return np.clip(np.rint(scaled.astype(np.float32)).astype(np.float64) + zero, low, high)


def quantize_by_reciprocal(quantize: QuantizeOp) -> bool:
    """Rewrite ``quantize`` as described in the module doc where it may; whether it did."""
    add = quantize.input.owner
    if not isinstance(add, AddOp) or len(list(add.result.uses)) != 1:
        return False
    if not all(isinstance(v.owner, DequantizeOp) for v in add.operands):
        return False
    terms = [_byte_terms(v.owner) for v in add.operands]
    scale, zero_point = scalar_constant(quantize.scale), scalar_constant(quantize.zero_point)
    if any(t is None for t in terms) or scale is None or zero_point is None or not np.isfinite(scale) or not scale > 0:
        return False
    (ca, fa), (cb, fb) = terms
    sums = [fa[:, None] + fb[None, :]]
    scale_a, scale_b = (scalar_constant(v.owner.scale) for v in add.operands)
    sums += [_fused_sum(ca, scale_a, fb), _fused_sum(cb, scale_b, fa)]
    if any(s is None for s in sums):
        return False
    s = np.float32(scale)
    reciprocal = np.float32(np.float32(1) / s)
    dtype, zero = quantize.dtype.data, int(as_values(np.asarray(zero_point), quantize.dtype.data))
    if not all(np.array_equal(_quantized(x, True, s, zero, dtype), _quantized(x, False, reciprocal, zero, dtype)) for x in sums):
        return False
    factor = ConstantOp.from_array(np.asarray(reciprocal, np.float32), "quantize.reciprocal")
    one = ConstantOp.from_array(np.ones(quantize.scale.type.get_shape(), np.float32), "one")
    scaled = MulOp(add.result, factor.result)
    new = QuantizeOp(scaled.result, one.result, quantize.zero_point)
    Rewriter.insert_op([factor, one, scaled, new], InsertPoint.before(quantize))
    quantize.result.replace_all_uses_with(new.result)
    Rewriter.erase_op(quantize)
    return True


__all__ = ["quantize_by_reciprocal"]

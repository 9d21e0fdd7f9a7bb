"""torch's quantized_decomposed ops (what PT2E's ``convert_pt2e`` leaves in an exported
program: torchao's X86InductorQuantizer and others): quantize / dequantize per tensor
and per channel, as ``graph.quantize`` / ``graph.dequantize``; ``fold-qdq`` then turns the
islands around convolutions and linear layers into int8 kernels.

torch quantizes as ``clamp(round(x * (1 / scale)) + zero_point, quant_min, quant_max)``;
``graph.quantize`` divides by the scale, as ONNX does: the two can differ by one step
where ``x / scale`` lies within a rounding of a half-way point. A quantization range
narrower than the type's (``reduce_range``, a symmetric [-127, 127] activation) is refused
for ``quantize`` (naming the node and the range); ``dequantize`` does not depend on it.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph import ConstantOp
from ....errors import UnsupportedOperatorError
from ..context import ImportContext
from ..registry import converter

#: torch's quantized dtypes, as numpy dtypes, with their full ranges
_DTYPES = {"torch.uint8": (np.uint8, 0, 255), "torch.int8": (np.int8, -128, 127), "torch.int32": (np.int32, -(2**31), 2**31 - 1)}


class UnsupportedQuantization(UnsupportedOperatorError):
    """A quantization scheme tensorkiln does not compile; the message names the node."""


def _dtype(node, dtype, allowed=("torch.uint8", "torch.int8")) -> tuple[type, int, int]:
    if str(dtype) not in allowed:
        raise UnsupportedQuantization(f"{node.name}: quantization to {dtype} is not supported (int8 and uint8 are)")
    return _DTYPES[str(dtype)]


def _as_constant(ctx: ImportContext, node, value, dtype, what: str, scalar: bool = False) -> SSAValue:
    """A scale or zero point (a Python number, or a constant tensor) as a constant of
    ``dtype`` (0-d with ``scalar``: a per-tensor one)."""
    if isinstance(value, SSAValue):
        if not isinstance(value.owner, ConstantOp):
            raise UnsupportedQuantization(f"{node.name}: a {what} computed at run time (choose_qparams) is not supported")
        value = value.owner.array()
    array = np.asarray(value).astype(dtype)
    if scalar:
        if array.size != 1:
            raise UnsupportedQuantization(f"{node.name}: a per-tensor {what} of {array.size} values")
        array = array.reshape(())
    return ctx.constant(array, f"{node.name}.{what}")


def _check_range(node, quant_min: int, quant_max: int, dtype) -> None:
    _, low, high = _dtype(node, dtype)
    if (quant_min, quant_max) != (low, high):
        raise UnsupportedQuantization(
            f"{node.name}: quantization range [{quant_min}, {quant_max}] narrower than {dtype}'s [{low}, {high}] "
            "(reduce_range or a restricted range) is not supported"
        )


@converter("quantized_decomposed.quantize_per_tensor.default", "quantized_decomposed.quantize_per_tensor.tensor")
def quantize_per_tensor(ctx: ImportContext, node, x, scale, zero_point, quant_min, quant_max, dtype):
    _check_range(node, quant_min, quant_max, dtype)
    numpy_type = _dtype(node, dtype)[0]
    s = _as_constant(ctx, node, scale, np.float32, "scale", scalar=True)
    return ctx.b.quantize(x, s, _as_constant(ctx, node, zero_point, numpy_type, "zero_point", scalar=True))


@converter("quantized_decomposed.dequantize_per_tensor.default", "quantized_decomposed.dequantize_per_tensor.tensor")
def dequantize_per_tensor(ctx: ImportContext, node, x, scale, zero_point, quant_min, quant_max, dtype, out_dtype=None):
    numpy_type = _dtype(node, dtype, ("torch.uint8", "torch.int8", "torch.int32"))[0]
    s = _as_constant(ctx, node, scale, np.float32, "scale", scalar=True)
    z = _as_constant(ctx, node, zero_point, numpy_type, "zero_point", scalar=True)
    return _out(ctx, node, ctx.b.dequantize(x, s, z), out_dtype)


def _out(ctx: ImportContext, node, y: SSAValue, out_dtype) -> SSAValue:
    if out_dtype is None or str(out_dtype) == "torch.float32":
        return y
    raise UnsupportedQuantization(f"{node.name}: dequantizing to {out_dtype} is not supported (float32 is)")


@converter("quantized_decomposed.quantize_per_channel.default")
def quantize_per_channel(ctx: ImportContext, node, x, scales, zero_points, axis, quant_min, quant_max, dtype):
    _check_range(node, quant_min, quant_max, dtype)
    numpy_type = _dtype(node, dtype)[0]
    s = _as_constant(ctx, node, scales, np.float32, "scales")
    z = _as_constant(ctx, node, zero_points, numpy_type, "zero_points")
    return ctx.b.quantize(x, s, z, axis=axis)


@converter("quantized_decomposed.dequantize_per_channel.default")
def dequantize_per_channel(ctx: ImportContext, node, x, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype=None):
    numpy_type = _dtype(node, dtype)[0]
    s = _as_constant(ctx, node, scales, np.float32, "scales")
    z = _as_constant(ctx, node, zero_points, numpy_type, "zero_points")
    return _out(ctx, node, ctx.b.dequantize(x, s, z, axis=axis), out_dtype)

"""One ATen op on float16/bfloat16 computes in float32 and rounds once, as torch's.

torch's CPU kernels compute 16-bit floats in their "opmath" type, float32, and round
the op's result. ``legalize-16bit-floats`` does the same per *graph* op; but a
converter may build one ATen op from several graph ops (``layer_norm``: a mean, a
variance, an rsqrt, ...), which would then round between them. So when a converter
built more than one computing op on 16-bit floats, the importer converts the node
again on its 16-bit float operands cast to float32, and casts the float32 results to
the dtypes torch.export recorded. A converter that does not accept float32 operands
for a 16-bit node keeps its first conversion. A node whose conversion fails on mixed
16-bit and float32 operands (torch's layer_norm takes a bfloat16 input with float32
weights) is converted in float32 too; if that fails as well, the first error stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from ...dialects.graph.base import GraphOp
from ...dialects.graph.elementwise import CastOp
from ...passes.legalize_16bit_floats import is_16bit_float
from .context import TORCH_TO_NUMPY, ImportContext, opmath_dtype


def _is_16bit_float(value: Any) -> bool:
    return isinstance(value, SSAValue) and is_16bit_float(value.type)


def _computing_ops(ops: list[Operation]) -> int:
    """How many of ``ops`` compute on 16-bit float values (an index check on integer
    indices beside a bfloat16 table does not count)."""
    return sum(
        1
        for op in ops
        if isinstance(op, GraphOp) and not op.MOVES_DATA and not isinstance(op, CastOp)
        and any(is_16bit_float(v.type) for v in (*op.operands, *op.results))
    )


def _widened(ctx: ImportContext, arg: Any) -> Any:
    if _is_16bit_float(arg):
        return ctx.cast(arg, np.float32)
    if isinstance(arg, list | tuple):
        return type(arg)(_widened(ctx, a) for a in arg)
    return arg


def _rounded(ctx: ImportContext, result: Any, meta: Any) -> Any:
    """Float32 results cast to the dtypes torch recorded (``meta``: the node's value)."""
    if isinstance(result, list | tuple):
        metas = meta if isinstance(meta, list | tuple) else [meta] * len(result)
        return type(result)(_rounded(ctx, r, m) for r, m in zip(result, metas))
    if isinstance(result, SSAValue) and isinstance(result.type, TensorType) and result.type.element_type == f32:
        recorded = TORCH_TO_NUMPY.get(str(getattr(meta, "dtype", None)))
        if recorded is not None and opmath_dtype(recorded) != recorded:  # a 16-bit float
            return ctx.cast(result, recorded)
    return result


def _erase(ops: list[Operation]) -> None:
    # unsafe: a converter that failed may have left an uninserted op using these
    for op in reversed(ops):
        Rewriter.erase_op(op, safe_erase=False)


#: what a converter raises for a node it cannot convert
CONVERSION_ERRORS = (VerifyException, ValueError, NotImplementedError, TypeError, AttributeError, KeyError)


def convert_node(ctx: ImportContext, node: Any, convert: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``convert(ctx, node, *args, **kwargs)``; for a node on 16-bit floats, again in
    float32 when that built several computing ops, or when it failed (torch's kernels
    take mixed 16-bit and float32 operands, e.g. a float32 input and bfloat16 weights).
    A float32 result of a node torch records as 16-bit is rounded to that dtype (a
    converter may compute in float32, as ``_operand`` makes elementwise ops do)."""
    block = ctx.b._block
    before = block.last_op
    widened = any(_is_16bit_float(a) for a in _flat(args, kwargs))
    try:
        result = _rounded(ctx, convert(ctx, node, *args, **kwargs), node.meta.get("val"))
    except CONVERSION_ERRORS as error:
        if not widened:
            raise
        _erase(ops_after(block, before))
        try:
            return _in_float32(ctx, node, convert, args, kwargs)
        except CONVERSION_ERRORS:
            _erase(ops_after(block, before))
            raise error from None
    emitted = ops_after(block, before)
    if not widened or _computing_ops(emitted) < 2:
        return result
    _erase(emitted)
    try:
        return _in_float32(ctx, node, convert, args, kwargs)
    except CONVERSION_ERRORS:  # a converter that wants its own dtype: convert it as it was
        _erase(ops_after(block, before))
        return _rounded(ctx, convert(ctx, node, *args, **kwargs), node.meta.get("val"))


def _in_float32(ctx: ImportContext, node: Any, convert: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    result = convert(ctx, node, *_widened(ctx, args), **{k: _widened(ctx, v) for k, v in kwargs.items()})
    return _rounded(ctx, result, node.meta.get("val"))


def _flat(args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for a in [*args, *kwargs.values()]:
        out.extend(a if isinstance(a, list | tuple) else [a])
    return out


def ops_after(block: Any, before: Operation | None) -> list[Operation]:
    """The ops of ``block`` after ``before`` (all of them when it is None)."""
    ops = []
    op = before.next_op if before is not None else block.first_op
    while op is not None:
        ops.append(op)
        op = op.next_op
    return ops

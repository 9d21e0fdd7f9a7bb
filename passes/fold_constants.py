"""``fold-constants``: evaluate graph ops whose operands are all constants, at compile time.

Each op is evaluated with its own numpy reference semantics (``GraphOp.reference``, the
interpreter's), so there is no folding code per op: whatever the interpreter can run,
this pass can fold. The result becomes a new ``graph.constant`` holding the numpy array
by reference (``#graph.weight<...>``); chains fold one op after another (weight
transposes, batch-norm scale/shift arithmetic, shape computations).

Not folded:

- ops whose result is much larger than their inputs (``broadcast_to`` of a scalar to a
  big tensor, a ``concat`` of a splat with itself...): a result over ``max_growth`` times
  the total input bytes *and* over ``min_bytes_to_limit`` bytes stays an op, so the
  constant data in memory does not blow up. A ``broadcast_to`` of a constant that stays
  an op still folds into consumers that mix it with other constants of more than one
  element: they read it as a broadcast view of its source (counted at the source's
  bytes) and are held to ``max_bytes`` (1 MB) instead. A mask assembled from a splat and
  constants by concatenations and slices (Swin3D's shifted windows: 8x56x56) so folds
  whole, where the splat alone (8x49x49, 77 KB) would not; a broadcast only moved,
  copied, or read by computed values stays a broadcast, read as one element;
- ops with a symbolic result shape, ops with regions, ops without reference semantics,
  and ops whose result is unused (``dce`` removes those).

The constants an op consumed are left in place (other ops may use them); ``dce`` removes
the dead ones. Example::

    %w = graph.constant #graph.weight<"fc.weight"> : tensor<10x32xf32>
    %t = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<10x32xf32> -> tensor<32x10xf32>

becomes::

    %t = graph.constant #graph.weight<"fc.weight.transpose"> : tensor<32x10xf32>

With ``inline_limit=N``, results of at most N elements become ``dense<...>`` literals
instead (readable in printed IR and FileCheck tests).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from ..dialects.graph import ConstantOp, GraphOp
from ..dialects.graph.shape import BroadcastToOp
from ..dialects.graph.types import WeightAttr, element_type_of, num_elements, numpy_dtype, shape_of

#: name of folded constants longer than this fall back to the first input's name
_MAX_NAME = 64


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The numpy value of ``value`` if a ``graph.constant`` defines it, else None."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        return owner.array()
    return None


def _constant_source(value: SSAValue) -> SSAValue:
    """The constant a ``broadcast_to`` of a constant to a static shape reads, else
    ``value`` itself."""
    owner = value.owner
    if (
        isinstance(owner, BroadcastToOp)
        and isinstance(owner.operands[0].owner, ConstantOp)
        and num_elements(shape_of(value.type)) is not None
    ):
        return owner.operands[0]
    return value


def _folding_operand(value: SSAValue) -> np.ndarray | None:
    """The value of an operand when it is constant or a broadcast of one (a view)."""
    source = _constant_source(value)
    array = constant_array(source)
    if array is None or source is value:
        return array
    return np.broadcast_to(array, tuple(shape_of(value.type)))


def static_nbytes(t: TensorType) -> int | None:
    """Bytes of a tensor of type ``t``, or None when its shape is symbolic."""
    n = num_elements(shape_of(t))
    if n is None:
        return None
    return n * numpy_dtype(t.element_type).itemsize


def constant_from_array(array: np.ndarray, name: str, inline_limit: int = 0) -> ConstantOp:
    """A ``graph.constant`` of ``array``: by reference, or ``dense<...>`` when it has at
    most ``inline_limit`` elements."""
    if array.size <= inline_limit:
        t = TensorType(element_type_of(array.dtype), array.shape)
        if array.dtype == np.bool_:
            attr = DenseIntOrFPElementsAttr.from_list(t, [int(v) for v in array.reshape(-1)])
        else:
            attr = DenseIntOrFPElementsAttr.from_list(t, array.reshape(-1).tolist())
        return ConstantOp(attr)
    return ConstantOp.from_array(array, name)


def _folded_name(op: Operation) -> str:
    """``<first weight input's name>.<op>``, e.g. ``fc.weight.transpose``."""
    short = op.name.removeprefix("graph.")
    for operand in op.operands:
        owner = operand.owner
        if isinstance(owner, ConstantOp) and isinstance(owner.value, WeightAttr):
            name = f"{owner.value.data.name}.{short}"
            return name if len(name) <= _MAX_NAME else f"{owner.value.data.name}.folded"
    return f"const.{short}"


@dataclass(frozen=True)
class FoldConstantsPattern(RewritePattern):
    """Replace a graph op whose operands are all constants by the constant it computes."""

    max_growth: float = 2.0
    min_bytes_to_limit: int = 64 * 1024
    inline_limit: int = 0
    max_bytes: int = 1 << 20

    def too_large(self, op: Operation) -> bool:
        result = static_nbytes(op.results[0].type)
        if result is None:
            return True
        sources = [_constant_source(v) for v in op.operands]
        inputs = sum(static_nbytes(v.type) or 0 for v in sources)
        # a splat mixed with other constants (not moved or copied alone: that stays a splat)
        mixes_a_splat = any(s is not v for s, v in zip(sources, op.operands)) and any(
            s is v and (num_elements(shape_of(v.type)) or 0) > 1 for s, v in zip(sources, op.operands)
        )
        limit = self.max_bytes if mixes_a_splat else self.min_bytes_to_limit
        return result > self.max_growth * inputs and result > limit

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (
            not isinstance(op, GraphOp)
            or isinstance(op, ConstantOp)
            or not op.operands
            or op.regions
            or len(op.results) != 1
            or not op.results[0].uses
        ):
            return
        arrays = [_folding_operand(v) for v in op.operands]
        if any(a is None for a in arrays) or self.too_large(op):
            return
        result_type = op.results[0].type
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = op.reference(*arrays)
        except NotImplementedError:
            return  # no reference semantics: leave the op to the compiler
        except Exception as e:
            raise PassFailedException(
                f"fold-constants: evaluating {op.name} on its constant operands failed: {e}"
            ) from e
        expected_shape = tuple(result_type.get_shape())
        value = np.asarray(value)
        if value.shape != expected_shape:
            raise PassFailedException(
                f"fold-constants: {op.name}'s reference gave shape {value.shape}, "
                f"its result type is {result_type}"
            )
        value = np.asarray(value.astype(numpy_dtype(result_type.element_type), copy=False), order="C")
        new = constant_from_array(value, _folded_name(op), self.inline_limit)
        rewriter.replace(op, new)


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Evaluate graph ops whose operands are all ``graph.constant`` (see module docstring).

    Options: ``max_growth`` and ``min_bytes_to_limit`` (a result over both ``max_growth``
    times its inputs' bytes and ``min_bytes_to_limit`` bytes is not folded),
    ``inline_limit`` (results of at most this many elements become ``dense<...>``).
    """

    name = "fold-constants"

    max_growth: float = 2.0
    min_bytes_to_limit: int = 64 * 1024
    inline_limit: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = FoldConstantsPattern(self.max_growth, self.min_bytes_to_limit, self.inline_limit)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([pattern], dce_enabled=False), apply_recursively=True
        ).rewrite_module(op)

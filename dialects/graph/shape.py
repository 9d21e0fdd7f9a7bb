"""Shape ops: reshape, transpose, broadcast_to, concat and slice (data movement, no arithmetic).

Properties are stored normalised (the constructors take Python-style values: negative
axes and indices, a ``-1`` to infer in a reshape, omitted slice ends), so lowering reads
plain non-negative numbers.

Target shapes (``reshape``, ``broadcast_to``) are an ``array<i64>`` ``shape`` where ``-1``
marks a symbolic dim, named by the ``dims`` property (``#graph.dims<n, _, _>``, ``_`` for
static dims), which is present only when the target shape has symbolic dims.

Examples::

    %r = graph.reshape %x {shape = array<i64: -1, 12>, dims = #graph.dims<n, _>} : tensor<?x3x4xf32, #graph.dims<n, _, _>> -> tensor<?x12xf32, #graph.dims<n, _>>
    %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x5xf32> -> tensor<5x2x3xf32>
    %b = graph.broadcast_to %x {shape = array<i64: 4, 3, 5>} : tensor<3x1xf32> -> tensor<4x3x5xf32>
    %c = graph.concat %a, %b {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
    %s = graph.slice %x {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 7>, steps = array<i64: 2>} : tensor<4x9xf32> -> tensor<4x3xf32>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import (
    GraphOp,
    OpPatternKind,
    expect_same_element,
    int_attr,
    ints,
    ints_attr,
    operand_element,
    operand_shape,
    shape_props,
    target_shape,
)
from ...runtime import dim_arith
from ...runtime.dim_expr import evaluate, free_symbols, is_symbol
from .types import (
    Dim,
    DimNamesAttr,
    Shape,
    format_shape,
    normalize_axis,
    tensor_type,
)

def _static_product(shape: Shape) -> int:
    return int(np.prod([d for d in shape if isinstance(d, int)], dtype=np.int64))


def _symbols(shape: Shape) -> list[str]:
    return [d for d in shape if isinstance(d, str)]


def _same_symbolic_count(x: Shape, target: Shape) -> bool:
    """Whether ``x`` and ``target``, whose dims include expressions of symbols (``4*n``),
    have the same element count for every value of the symbols: compared at three spread
    values of them (counts are products of the small expressions torch writes; agreeing
    at three points, they are the same expression)."""
    given = {s for d in _symbols(x) for s in free_symbols(d)}
    if any(not free_symbols(d) <= given for d in _symbols(target)):
        return False  # the target would need a symbol the input does not give

    def count(shape: Shape, values: dict[str, int]) -> int:
        return int(np.prod([evaluate(d, values) if isinstance(d, str) else d for d in shape], dtype=object))

    for base in (5, 11, 23):
        values = {name: base + 2 * i for i, name in enumerate(sorted(given))}
        if count(x, values) != count(target, values):
            return False
    return True


# ---------------------------------------------------------------------------
# reshape


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Reinterpret the elements (row-major) with a new shape.

    ``shape`` is the new shape (``-1`` = symbolic, named by ``dims``). Static shapes need
    only the same element count. Symbolic dims: the new shape must hold the input's
    symbols, with the same names and in the same order (at any positions), and the static
    dims on both sides must multiply to the same count; e.g. ``(n, 3, 4) -> (n, 12)`` or
    ``(2, n, 6) -> (12, n)``, but not ``(n, 4) -> (2, 2n)`` nor new symbols.

    The constructor takes ``int | str`` dims and infers one ``-1`` from the element count.

    Example::

        %r = graph.reshape %x {shape = array<i64: 5, 6, 7>} : tensor<7x30xf32> -> tensor<5x6x7xf32>
    """

    name = "graph.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    dims = opt_prop_def(DimNamesAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int | str]):
        x = operand_shape(SSAValue.get(input))
        self._build([input], shape_props(self._infer_minus_one(x, list(shape))))

    @staticmethod
    def _infer_minus_one(x: Shape, shape: list[int | str]) -> list[int | str]:
        holes = [i for i, d in enumerate(shape) if d == -1]
        if len(holes) > 1:
            raise VerifyException(f"graph.reshape: at most one -1 in shape, got {shape}")
        if holes:
            known = _static_product(tuple(d for d in shape if d != -1))
            total = _static_product(x)
            if known == 0 or total % known:
                raise VerifyException(
                    f"graph.reshape: cannot infer -1 in {shape}: input {format_shape(x)} has "
                    f"{total} static elements, not a multiple of {known}"
                )
            shape[holes[0]] = total // known
        return shape

    def target_shape(self) -> Shape:
        """The new shape as ints and symbol names."""
        return target_shape(self.shape, self.dims)

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        target = self.target_shape()
        if any(not is_symbol(d) for d in _symbols(x) + _symbols(target)):
            if not _same_symbolic_count(x, target):
                raise VerifyException(
                    f"cannot reshape {format_shape(x)} to {format_shape(target)}: the element "
                    "counts differ for some values of the symbols"
                )
            return tensor_type(target, operand_element(self.input))
        if _symbols(x) != _symbols(target):
            raise VerifyException(
                f"cannot reshape {format_shape(x)} to {format_shape(target)}: the new shape must "
                f"keep the input's symbolic dims {_symbols(x)} in order, got {_symbols(target)}"
            )
        if _static_product(x) != _static_product(target):
            what = "elements" if not _symbols(x) else "static elements (besides the symbolic dims)"
            raise VerifyException(
                f"cannot reshape {format_shape(x)} to {format_shape(target)}: "
                f"{_static_product(x)} vs {_static_product(target)} {what}"
            )
        return tensor_type(target, operand_element(self.input))

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The target dims evaluated with the symbols ``x``'s shape binds; a dim they do
        not determine is numpy's -1."""
        symbols = {d: n for d, n in zip(operand_shape(self.input), x.shape) if isinstance(d, str) and is_symbol(d)}

        def size(d: int | str) -> int:
            if isinstance(d, int):
                return d
            return evaluate(d, symbols) if free_symbols(d) <= symbols.keys() else -1

        return x.reshape([size(d) for d in self.target_shape()])


# ---------------------------------------------------------------------------
# transpose


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permute the axes: result dim ``i`` is input dim ``perm[i]``.

    The constructor's default ``perm`` reverses the axes; negative entries are normalised.

    Example::

        %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x5xf32> -> tensor<5x2x3xf32>
    """

    name = "graph.transpose"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, perm: Sequence[int] | None = None):
        rank = len(operand_shape(SSAValue.get(input)))
        if perm is None:
            perm = range(rank - 1, -1, -1)
        perm = [p % rank if rank and -rank <= p < 0 else p for p in perm]
        self._build([input], {"perm": ints_attr(perm)})

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        perm = ints(self.perm)
        if sorted(perm) != list(range(len(x))):
            raise VerifyException(
                f"perm {list(perm)} is not a permutation of the {len(x)} axes of {format_shape(x)}"
            )
        return tensor_type(tuple(x[p] for p in perm), operand_element(self.input))

    def reference(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x.transpose(ints(self.perm)), order="C")


# ---------------------------------------------------------------------------
# broadcast_to


@irdl_op_definition
class BroadcastToOp(GraphOp):
    """Broadcast to ``shape`` by numpy rules (align right; a dim of 1 stretches).

    ``shape`` uses ``-1`` for symbolic dims named by ``dims``; a symbol may come from
    the input (same name at the aligned position) or be new (stretching a 1 or a new
    leading axis). The constructor also takes symbol names, and ``-1`` to keep the
    input's dim at that position (torch's ``expand``).

    Example::

        %b = graph.broadcast_to %x {shape = array<i64: -1, 3, 5>, dims = #graph.dims<n, _, _>} : tensor<3x1xf32> -> tensor<?x3x5xf32, #graph.dims<n, _, _>>
    """

    name = "graph.broadcast_to"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    dims = opt_prop_def(DimNamesAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int | str]):
        x = operand_shape(SSAValue.get(input))
        target = list(shape)
        offset = len(target) - len(x)
        for i, d in enumerate(target):
            if d == -1:
                if i < offset:
                    raise VerifyException(
                        f"graph.broadcast_to: -1 at new leading axis {i} of {target} "
                        f"(input {format_shape(x)}): nothing to keep"
                    )
                target[i] = x[i - offset]
        self._build([input], shape_props(target))

    def target_shape(self) -> Shape:
        """The target shape as ints and symbol names."""
        return target_shape(self.shape, self.dims)

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        target = self.target_shape()
        if len(target) < len(x):
            raise VerifyException(
                f"cannot broadcast {format_shape(x)} to {format_shape(target)}: fewer dims"
            )
        offset = len(target) - len(x)
        for i, d in enumerate(x):
            t = target[offset + i]
            if d != 1 and d != t:
                raise VerifyException(
                    f"cannot broadcast {format_shape(x)} to {format_shape(target)}: input dim {i} "
                    f"is {d}, target dim {offset + i} is {t} (expected {d} or an input dim of 1)"
                )
        return tensor_type(target, operand_element(self.input))

    def reference(self, x: np.ndarray, *, sizes: dict[str, int] | None = None) -> np.ndarray:
        """``sizes`` gives values of symbols not in the input (new symbolic dims)."""
        known = dict(sizes or {})
        for d, n in zip(operand_shape(self.input), x.shape):
            if isinstance(d, str):
                known[d] = n
        shape = []
        for d in self.target_shape():
            if isinstance(d, str) and d not in known:
                raise ValueError(
                    f"graph.broadcast_to: the size of new symbolic dim '{d}' is not known "
                    "from the input (pass sizes=...)"
                )
            shape.append(known[d] if isinstance(d, str) else d)
        return np.asarray(np.broadcast_to(x, shape), order="C")


# ---------------------------------------------------------------------------
# concat


@irdl_op_definition
class ConcatOp(GraphOp):
    """Join tensors along ``axis`` (normalised; the constructor takes negative axes).

    All inputs have one rank and element type and equal dims besides ``axis``; the
    ``axis`` dims must be static.

    Example::

        %r = graph.concat %a, %b, %c {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x5xf32> -> tensor<2x9xf32>
    """

    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` type($inputs) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int = 0):
        values = [SSAValue.get(v) for v in inputs]
        if values:
            rank = len(operand_shape(values[0]))
            if -rank <= axis < 0:
                axis += rank
        self._build([values], {"axis": int_attr(axis)})

    def infer_result_type(self) -> TensorType:
        if not self.inputs:
            raise VerifyException("needs at least one input")
        shapes = [operand_shape(v) for v in self.inputs]
        element = expect_same_element("inputs", *(v.type for v in self.inputs))
        rank = len(shapes[0])
        axis = self.axis.value.data
        if not 0 <= axis < rank:
            raise VerifyException(f"axis {axis} is out of range [0, {rank}) for rank {rank}")
        first = shapes[0]
        total: Dim = 0
        for k, s in enumerate(shapes):
            if len(s) != rank:
                raise VerifyException(
                    f"input {k} has shape {format_shape(s)}, expected rank {rank} like input 0 {format_shape(first)}"
                )
            for i, (a, b) in enumerate(zip(first, s)):
                if i != axis and a != b:
                    raise VerifyException(
                        f"input {k} has dim {i} = {b}, expected {a} like input 0 "
                        f"(shapes {format_shape(first)} and {format_shape(s)}, concat axis {axis})"
                    )
            total = dim_arith.add(total, s[axis])
        return tensor_type((*first[:axis], total, *first[axis + 1 :]), element)

    def reference(self, *xs: np.ndarray) -> np.ndarray:
        return np.concatenate(xs, axis=self.axis.value.data)


# ---------------------------------------------------------------------------
# slice

_BIG = 2**62


def symbolic_position(dim: str, bound: int) -> Dim:
    """Where a stored slice bound on a symbolic axis ``dim`` lies (see :class:`SliceOp`)."""
    if bound >= _BIG:
        return dim
    return bound if bound >= 0 else dim_arith.add(dim, bound)


def _symbolic_bound(dim: str, bound: int | str | None, default: int) -> int:
    """A Python slice bound on symbolic axis ``dim`` in the stored form: ints as they
    are (negative: from the end), an expression of ``dim`` as its distance from the end."""
    if bound is None:
        return default
    if isinstance(bound, int):
        return min(bound, _BIG)
    from_end = dim_arith.sub(bound, dim)
    if isinstance(from_end, int) and from_end <= 0:
        return _BIG if from_end == 0 else from_end
    start = dim_arith.canonical(bound)
    if isinstance(start, int):
        return start
    raise VerifyException(f"graph.slice: bound {bound} on axis {dim} is neither a constant nor {dim} minus a constant")


@irdl_op_definition
class SliceOp(GraphOp):
    """``x[start:end:step]`` on each of ``axes`` (other axes whole), steps >= 1.

    Stored normalised: ``axes`` strictly increasing, ``steps[i] >= 1``; on a static axis
    ``0 <= starts[i] <= ends[i] <= dim``; on a symbolic axis a negative start or end
    counts from the end (``dim + start``) and an end of ``2**62`` is the end, with no
    clamping (torch.export guards that the bounds lie inside the dim's range, and the
    runtime checks that range). The result dim is ``ceil((end - start) / step)``, an
    expression on a symbolic axis (``x[:, 1:]`` of ``(2, s0)``: ``s0 - 1``). The
    constructor takes Python slice values (negative, ``None`` or out-of-range
    starts/ends, negative axes) and, on a symbolic axis, bounds that are expressions of
    its dim (``s0 - 1``). A whole slice of a symbolic axis is dropped.

    Example::

        %s = graph.slice %x {axes = array<i64: 0, 2>, starts = array<i64: 1, 0>, ends = array<i64: 5, 7>, steps = array<i64: 1, 3>} : tensor<5x4x7xf32> -> tensor<4x4x3xf32>
    """

    name = "graph.slice"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(
        self,
        input: SSAValue | Operation,
        starts: Sequence[int | None],
        ends: Sequence[int | None],
        axes: Sequence[int] | None = None,
        steps: Sequence[int] | None = None,
    ):
        """Like ``x[starts[0]:ends[0]:steps[0]]`` on ``axes[0]`` (default axes 0, 1, ...)."""
        x = operand_shape(SSAValue.get(input))
        rank = len(x)
        axes = list(range(len(starts))) if axes is None else list(axes)
        steps = [1] * len(starts) if steps is None else list(steps)
        if not len(axes) == len(starts) == len(ends) == len(steps):
            raise VerifyException(
                f"graph.slice: axes, starts, ends and steps must have one length, got "
                f"{len(axes)}, {len(starts)}, {len(ends)}, {len(steps)}"
            )
        per_axis: dict[int, tuple[int, int, int]] = {}
        for a, start, end, step in zip(axes, starts, ends, steps):
            a = normalize_axis(a, rank, "slice axis")
            if a in per_axis:
                raise VerifyException(f"graph.slice: axis {a} is sliced twice (axes {axes})")
            if step is None:
                step = 1
            if step < 1:
                raise VerifyException(f"graph.slice: steps must be >= 1, got {step} on axis {a}")
            dim = x[a]
            if isinstance(dim, str):
                start, end = _symbolic_bound(dim, start, 0), _symbolic_bound(dim, end, _BIG)
                if start == 0 and end == _BIG and step == 1:
                    continue  # the whole symbolic axis: nothing to slice
                per_axis[a] = (start, end, step)
                continue
            if isinstance(start, str) or isinstance(end, str):
                raise VerifyException(f"graph.slice: axis {a} is static ({dim}); its bounds must be ints, got {start}, {end}")
            start, end, step = slice(start, end, step).indices(dim)
            per_axis[a] = (start, max(end, start), step)
        order = sorted(per_axis)
        self._build(
            [input],
            {
                "axes": ints_attr(order),
                "starts": ints_attr(per_axis[a][0] for a in order),
                "ends": ints_attr(per_axis[a][1] for a in order),
                "steps": ints_attr(per_axis[a][2] for a in order),
            },
        )

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        axes, starts, ends, steps = (ints(p) for p in (self.axes, self.starts, self.ends, self.steps))
        if not len(axes) == len(starts) == len(ends) == len(steps):
            raise VerifyException(
                f"axes, starts, ends and steps must have one length, got "
                f"{len(axes)}, {len(starts)}, {len(ends)}, {len(steps)}"
            )
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(x) for a in axes):
            raise VerifyException(
                f"axes {list(axes)} must be strictly increasing and in [0, {len(x)}) "
                f"for shape {format_shape(x)}"
            )
        result = list(x)
        for a, start, end, step in zip(axes, starts, ends, steps):
            dim = x[a]
            if step < 1:
                raise VerifyException(f"steps must be >= 1, got {step} on axis {a}")
            if isinstance(dim, str):
                length = dim_arith.sub(symbolic_position(dim, end), symbolic_position(dim, start))
                if isinstance(length, int) and length < 0:
                    raise VerifyException(f"axis {a} ({dim}): end {end} is before start {start}")
                result[a] = dim_arith.ceildiv(length, step)
                continue
            if not 0 <= start <= end <= dim:
                raise VerifyException(
                    f"axis {a}: start {start} and end {end} are not normalised, expected "
                    f"0 <= start <= end <= {dim} (dim {a} of {format_shape(x)})"
                )
            result[a] = -(-(end - start) // step)
        return tensor_type(result, operand_element(self.input))

    def size_requirements(self) -> list[Dim]:
        """Dims that must not be negative for the slice to lie inside a symbolic axis
        (``x[:, 2:7]`` of ``(2, n)``: ``n - 7``); checked at every call, with the other
        computed dims (``signature.py``)."""
        shape = operand_shape(self.input)
        needed: list[Dim] = []
        for a, start, end in zip(ints(self.axes), ints(self.starts), ints(self.ends)):
            if isinstance(shape[a], str):
                first, last = symbolic_position(shape[a], start), symbolic_position(shape[a], end)
                needed += [first, dim_arith.sub(last, first), dim_arith.sub(shape[a], last)]
        return needed

    def reference(self, x: np.ndarray) -> np.ndarray:
        index = [slice(None)] * x.ndim
        for a, start, end, step in zip(
            ints(self.axes), ints(self.starts), ints(self.ends), ints(self.steps)
        ):
            index[a] = slice(start, end, step)
        return np.asarray(x[tuple(index)], order="C")

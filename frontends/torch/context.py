"""What converters use: the graph builder, shapes and dtypes of fx nodes, constants."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.ir import SSAValue

from ...dialects.graph.types import Dim, element_type_of, numpy_dtype, shape_of
from ...runtime.dim_expr import DimExprError, free_symbols
from ...runtime.dim_arith import canonical
from ...runtime.signature import is_torch_bfloat16, torch_bfloat16_bits
from .. import sizes
from ..builder import GraphBuilder
from .dim_names import dim_text

#: a complex dtype -> the dtype of its real and imaginary parts (complex values are imported as pairs)
PART_DTYPES = {"torch.complex64": np.dtype(np.float32), "torch.complex128": np.dtype(np.float64)}

TORCH_TO_NUMPY = {
    "torch.float32": np.float32,
    "torch.float64": np.float64,
    "torch.float16": np.float16,
    "torch.bfloat16": ml_dtypes.bfloat16,
    "torch.int64": np.int64,
    "torch.int32": np.int32,
    "torch.int16": np.int16,
    "torch.int8": np.int8,
    "torch.uint8": np.uint8,
    "torch.bool": np.bool_,
}


class UnsupportedDtypeError(TypeError):
    pass


def numpy_dtype_of_torch(dtype: Any, where: str = "") -> np.dtype:
    """The numpy dtype of a torch dtype, or a clear error for the ones we do not compile."""
    try:
        return np.dtype(TORCH_TO_NUMPY[str(dtype)])
    except KeyError:
        supported = ", ".join(k.removeprefix("torch.") for k in TORCH_TO_NUMPY)
        raise UnsupportedDtypeError(
            f"{where}dtype {dtype} is not supported yet (supported: {supported})"
        ) from None


def opmath_dtype(dtype: np.dtype) -> np.dtype:
    """The type torch's kernels compute a floating dtype in: float32 for the 16-bit ones."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype in (np.float16, ml_dtypes.bfloat16) else dtype


def tensor_to_numpy(tensor: Any) -> np.ndarray:
    """A CPU torch tensor's data as a numpy array sharing its memory (bfloat16 as
    ml_dtypes' bfloat16, which torch's ``.numpy()`` refuses)."""
    tensor = tensor.detach().contiguous()
    if is_torch_bfloat16(tensor):
        return torch_bfloat16_bits(tensor).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def _integer_divisions(expr: Any) -> Any:
    """``expr`` with torch's float roundings of integer divisions (``CeilToInt(
    FloatTrueDiv(ToFloat(n), k))``: the length of ``arange(n, -n, -1.0)``) written as
    integer floor divisions, for a whole-valued divisor ``k``."""
    from torch.utils._sympy.functions import CeilToInt, FloatTrueDiv, FloorDiv, FloorToInt, ToFloat

    def integer(value: Any) -> Any:
        return value.args[0] if isinstance(value, ToFloat) else value

    def rounded(call: Any) -> Any:
        quotient = call.args[0]
        if not isinstance(quotient, FloatTrueDiv) or not quotient.args[1].is_number:
            return call
        k = float(quotient.args[1])
        if k == 0 or k != int(k):
            return call
        n, k = integer(quotient.args[0]), int(k)
        n, k = (n, k) if k > 0 else (-n, -k)
        return FloorDiv(n, k) if isinstance(call, FloorToInt) else -FloorDiv(-n, k)

    return expr.replace(lambda e: isinstance(e, CeilToInt | FloorToInt), rounded)


def symbol_name(size: Any) -> Dim:
    """A torch size (int or SymInt) as a graph dim: an int, the symbol's name, or the
    expression computing it from symbols (``4*s0``; ``runtime/dim_expr.py``)."""
    if isinstance(size, int):
        return size
    expr = getattr(getattr(size, "node", None), "expr", None)
    if expr is None:
        raise NotImplementedError(f"size {size!r} is neither an int nor a symbolic size")
    return dim_of_expression(_extrema_decided(expr, getattr(size.node, "shape_env", None)))


def _extrema_decided(expr: Any, shape_env: Any) -> Any:
    """``expr`` with each ``Max``/``Min`` of two terms whose order the symbols' ranges fix
    replaced by that term: MPT slices its ALiBi table of 2048 positions at
    ``max(0, 2048 - s)``, giving the size ``2048 - Max(0, 2048 - s)``, which is ``s`` for
    the ``s <= 2047`` torch.export assumed (and must be, to add it to an ``s``-sized axis)."""
    from torch.utils._sympy.functions import Max, Min  # (torch's own, not sympy's)
    from torch.utils._sympy.value_ranges import bound_sympy

    if shape_env is None or not expr.has(Max, Min):
        return expr
    recorded = _recorded_equal(expr, shape_env, (Max, Min))
    if recorded is not None:
        return recorded

    def decided(e: Any) -> Any:
        if len(e.args) != 2:
            return e
        a, b = e.args
        gap = bound_sympy(a - b, shape_env.var_to_range)
        larger = a if gap.lower >= 0 else b if gap.upper <= 0 else None
        if larger is None:
            return e
        return larger if isinstance(e, Max) else (b if larger is a else a)

    return expr.replace(lambda e: isinstance(e, Max | Min), decided)


def _recorded_equal(expr: Any, shape_env: Any, extrema: tuple) -> Any:
    """An expression without ``Max``/``Min`` that a guard of torch.export says equals
    ``expr`` (``Eq(s27, 16 - Max(0, 16 - s27))``, recorded where the size met an ``s27``
    axis), or None. torch 2.14 records the guard but no longer narrows the symbol's range
    to ``s27 <= 16`` after decomposition, so the range alone cannot decide the extrema."""
    for guard in getattr(shape_env, "guards", ()):
        equation = getattr(guard, "expr", None)
        if type(equation).__name__ != "Equality":
            continue
        lhs, rhs = equation.args
        for this, other in ((lhs, rhs), (rhs, lhs)):
            if this == expr and not other.has(*extrema):
                return other
    return None


def dim_of_expression(expr: Any) -> Dim:
    """A sympy size expression of torch's (``4*s0``, ``u0 + 1``) as a graph dim."""
    if getattr(expr, "is_Integer", False):
        return int(expr)
    text = dim_text(str(_integer_divisions(expr)))  # the user's Dim names for torch's symbols
    try:
        return canonical(text)
    except DimExprError as e:
        raise NotImplementedError(f"symbolic size {text}: {e}") from None


class ImportContext:
    """State of one import: the builder, and helpers every converter needs."""

    def __init__(self, builder: GraphBuilder):
        self.b = builder
        #: while an op is converted once per part of a complex value (``complex.py``), the
        #: complex dtypes of its nodes read as the float type of the parts
        self.complex_parts = False
        #: torch.export's range of every symbol (``u0``: ``(0, 12)``; None: unbounded)
        self.symbol_ranges: dict[str, tuple[int | None, int | None]] = {}
        #: the same as torch.export's: sympy symbol -> ValueRanges (to see what they imply)
        self.range_constraints: dict[Any, Any] = {}
        #: data-dependent symbols (``u0``: nonzero's count, an ``item()``) -> the 0-d int64
        #: tensor holding their value
        self.symbol_values: dict[str, SSAValue] = {}
        #: data-dependent symbols -> the size carrier (``graph.data_size``) giving them to ops
        self.size_carriers: dict[str, SSAValue] = {}
        #: symbols a run-time check found equal to another (``Eq(u1, u0)``) -> that one:
        #: torch.export writes the other from then on
        self.aliases: dict[str, str] = {}
        #: whether the indices the model is given are checked at run time (``index_checks.py``)
        self.check_indices = True
        self._unaliased: dict[SSAValue, SSAValue] = {}

    # -- fx node facts ------------------------------------------------------------

    @staticmethod
    def shape(node: Any) -> tuple[Dim, ...]:
        """The (possibly symbolic) shape of the tensor an fx node produces."""
        return tuple(symbol_name(d) for d in node.meta["val"].shape)

    def dtype(self, node: Any) -> np.dtype:
        dtype = node.meta["val"].dtype
        if self.complex_parts and str(dtype) in PART_DTYPES:
            return PART_DTYPES[str(dtype)]
        return numpy_dtype_of_torch(dtype, f"{node.name}: ")

    # -- values ---------------------------------------------------------------------

    def constant(self, array: Any, name: str | None = None) -> SSAValue:
        return self.b.constant(np.asarray(array), name)

    def scalar(self, value: float | int | bool, like: SSAValue) -> SSAValue:
        """A 0-d constant with the element type of ``like`` (torch's scalar promotion
        for same-kind scalars)."""
        dtype = numpy_dtype(like.type.element_type)
        if np.issubdtype(dtype, np.integer):  # wrapped into the type, as torch does (~x on uint8: x ^ -1 = x ^ 255)
            return self.b.constant(np.asarray(value).astype(dtype))
        return self.b.constant(np.asarray(value, dtype=dtype))

    def dim_sources(self, shape: Sequence[Dim], candidates: Sequence[SSAValue] = ()) -> list[SSAValue]:
        """Tensors whose dims give the symbols of ``shape``: ``candidates`` first, then the
        size carriers of data-dependent symbols, then the function's inputs."""
        carriers = [self.carrier(s) for s in sorted(sizes.needed_symbols(shape)) if s in self.symbol_values]
        return sizes.dim_sources(self.b, shape, [*candidates, *carriers])

    def positions(self, length: Dim, candidates: Sequence[SSAValue] = ()) -> SSAValue:
        """``0 .. length - 1`` as int64: a constant when ``length`` is static, else a
        ``graph.arange`` whose size comes from ``candidates`` or the inputs."""
        if isinstance(length, int):
            return sizes.positions(self.b, length)
        return sizes.positions(self.b, length, self.dim_sources((length,), candidates))

    def slice_bound(self, bound: Dim | None, size: Dim, default: Dim) -> SSAValue:
        """A slice's start or end as torch takes it (0-d int64): ``default`` for None,
        counted from the end where negative, then clamped into ``[0, size]``."""
        b = self.b
        value, size = self.size_value(default if bound is None else bound), self.size_value(size)
        zero = self.constant(np.int64(0))
        value = b.where(b.compare(value, zero, "lt"), b.add(value, size), value)
        return b.min(b.max(value, zero), size)

    def within(self, positions: SSAValue, low: SSAValue, high: SSAValue) -> SSAValue:
        """Booleans: ``low <= positions < high``."""
        b = self.b
        return b.where(b.compare(positions, low, "ge"), b.compare(positions, high, "lt"), b.constant(np.asarray(False)))

    def size_value(self, dim: Dim) -> SSAValue:
        """A 0-d int64 tensor holding ``dim`` (a size the model computes with, ``x.shape[1] - 1``):
        a data-dependent symbol is the tensor it was read from (``frontends/sizes.py``)."""
        return sizes.size_value(self.b, dim, self.symbol_values)

    # -- sizes read from data ---------------------------------------------------------

    def bind_data_symbol(self, symbol: str, value: SSAValue, at_most: Dim | None = None) -> None:
        """Record that the data-dependent ``symbol`` (``u0``) is the value of the 0-d
        integer tensor ``value``; ops whose shapes use it get a size carrier of it.
        ``at_most``: a static bound we know (a count of elements): it widens torch's
        range where torch's is too narrow (torch bounds ``masked_select`` of a broadcast
        mask by the input's own size)."""
        self.symbol_values[symbol] = self.cast(value, np.dtype(np.int64))
        lowest, highest = self.symbol_ranges.get(symbol, (0, None))
        if isinstance(at_most, int) and highest is not None and at_most > highest:
            self.symbol_ranges[symbol] = (lowest, at_most)

    def carrier(self, symbol: str) -> SSAValue:
        """The size carrier of a data-dependent symbol (a ``graph.data_size`` of its value,
        made once, checked against torch.export's range of it)."""
        if symbol not in self.size_carriers:
            lowest, highest = self.symbol_ranges.get(symbol, (0, None))
            self.size_carriers[symbol] = self.b.data_size(self.symbol_values[symbol], symbol, max(lowest or 0, 0), highest)
        return self.size_carriers[symbol]

    def alias(self, symbol: str, same_as: str) -> None:
        """From now on, write ``symbol`` (checked equal to ``same_as``) as ``same_as``."""
        self.aliases[symbol] = same_as
        self._unaliased.clear()

    def unaliased(self, value: SSAValue) -> SSAValue:
        """``value`` with its dims written in the symbols torch.export uses now: an axis
        of size ``u1`` checked equal to ``u0`` read whole as an axis of size ``u0``."""
        if not self.aliases or not hasattr(value.type, "get_shape"):
            return value
        if value not in self._unaliased:
            result = value
            for axis, dim in enumerate(shape_of(value.type)):
                renamed = self._renamed(dim)
                if renamed != dim:
                    result = self.b.take(result, self.positions(renamed), axis)
            self._unaliased[value] = result
        return self._unaliased[value]

    def _renamed(self, dim: Dim) -> Dim:
        if not isinstance(dim, str) or not free_symbols(dim) & set(self.aliases):
            return dim
        text = dim
        while names := free_symbols(text) & set(self.aliases):
            for name in names:
                text = re.sub(rf"\b{name}\b", self.aliases[name], text)
        return canonical(text)

    def cast(self, x: SSAValue, dtype: np.dtype) -> SSAValue:
        if numpy_dtype(x.type.element_type) == np.dtype(dtype):
            return x
        return self.b.cast(x, element_type_of(dtype))

    @staticmethod
    def rank(x: SSAValue) -> int:
        return len(x.type.get_shape())

    @staticmethod
    def axes(dims: int | Sequence[int] | None, rank: int) -> list[int]:
        """Normalised axes (None or [] means all)."""
        if dims is None:
            return list(range(rank))
        if isinstance(dims, int):
            dims = [dims]
        return [d % rank if rank else 0 for d in dims] or list(range(rank))

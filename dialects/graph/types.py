"""Tensor types of the graph dialect: static or symbolic shapes, element types, weights.

Graph tensors are builtin ``tensor`` types. A dimension is either a static size or a
named symbol (``n``, ``batch``) shared between values; a symbolic dimension is
stored as ``?`` in the builtin shape and its name in the ``#graph.dims`` encoding::

    tensor<4x8xf32>                                  // static
    tensor<?x784xf32, #graph.dims<n, _>>             // first dim is the symbol n
    tensor<?x8xf32, #graph.dims<"4*n", _>>           // first dim is 4 times n

Python code sees shapes as tuples of ``int | str`` (``(\"n\", 784)``) through
:func:`shape_of` and builds types with :func:`tensor_type`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    StringAttr,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    Signedness,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Data, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ...runtime.sizes import MAX_BYTES

Dim = int | str
Shape = tuple[Dim, ...]

_STATIC_MARK = "_"


@irdl_attr_definition
class DimNamesAttr(ParametrizedAttribute):
    """Names of the symbolic dimensions of a tensor type (``_`` marks a static one); a
    dim computed from symbols is a quoted expression (``runtime/dim_expr.py``).

    Example: ``#graph.dims<n, _>`` on ``tensor<?x784xf32>``;
    ``#graph.dims<"4*n", _>`` on a tensor whose first dim is 4 times n.
    """

    name = "graph.dims"
    names: ArrayAttr[StringAttr]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr[StringAttr]]:
        def parse_name() -> StringAttr:
            if parser.parse_optional_characters(_STATIC_MARK) is not None:
                return StringAttr("")
            expression = parser.parse_optional_str_literal()
            return StringAttr(expression if expression is not None else parser.parse_identifier())

        with parser.in_angle_brackets():
            names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parse_name)
        return (ArrayAttr(names),)

    def print_parameters(self, printer: Printer) -> None:
        def spelling(name: str) -> str:
            if not name:
                return _STATIC_MARK
            return name if name.isidentifier() else f'"{name}"'

        with printer.in_angle_brackets():
            printer.print_string(", ".join(spelling(n.data) for n in self.names.data))


class WeightRef:
    """A named numpy array held by reference from the IR (never copied into it).

    Equality is identity: two references are equal only if they hold the same array.
    """

    def __init__(self, name: str, array: np.ndarray):
        self.name = name
        self.array = array

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WeightRef) and other.array is self.array

    def __hash__(self) -> int:
        return id(self.array)


# Weights alive in this process, so that printed IR (``#graph.weight<"fc1.w">``) parses
# back to the same array. Weak: the IR that mentions a weight keeps it alive, not this table.
_LIVE_WEIGHTS: weakref.WeakValueDictionary[str, np.ndarray] = weakref.WeakValueDictionary()


def register_weight(name: str, array: np.ndarray) -> str:
    """Make ``array`` findable by name when IR is parsed; returns a unique name."""
    unique, n = name, 1
    while unique in _LIVE_WEIGHTS and _LIVE_WEIGHTS[unique] is not array:
        unique, n = f"{name}.{n}", n + 1
    _LIVE_WEIGHTS[unique] = array
    return unique


@irdl_attr_definition
class WeightAttr(Data[WeightRef]):
    """A constant tensor's data, by reference to a numpy array: ``#graph.weight<"fc1.w">``."""

    name = "graph.weight"

    @classmethod
    def from_array(cls, name: str, array: np.ndarray) -> WeightAttr:
        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        return cls(WeightRef(register_weight(name, array), array))

    @property
    def array(self) -> np.ndarray:
        return self.data.array

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> WeightRef:
        with parser.in_angle_brackets():
            name = parser.parse_str_literal()
        array = _LIVE_WEIGHTS.get(name)
        if array is None:
            parser.raise_error(
                f"weight '{name}' is not loaded in this process "
                "(weights are held by reference; write small constants as dense<...>)"
            )
        return WeightRef(name, array)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.data.name)


# ---------------------------------------------------------------------------
# element types

#: unsigned 8-bit integers (images, masks): stored as such, computed in i32
#: (``passes/legalize_unsigned.py``)
UI8 = IntegerType(8, Signedness.UNSIGNED)


def bfloat16_dtype() -> np.dtype:
    """ml_dtypes' bfloat16, the numpy dtype of bfloat16 arrays (numpy has none; the compiled
    code stores them as 16-bit integers and computes in float32: passes/legalize_16bit_floats.py).
    Imported when first needed: ml_dtypes' import registers casts between all its types and
    takes ~0.7 s, a third of a ``tensorkiln-opt`` run."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


_NUMPY_OF_ELEMENT = {
    f16: np.float16,
    f32: np.float32,
    f64: np.float64,
    i1: np.bool_,
    i8: np.int8,
    UI8: np.uint8,
    i16: np.int16,
    i32: np.int32,
    i64: np.int64,
}
_ELEMENT_OF_NUMPY = {np.dtype(v): k for k, v in _NUMPY_OF_ELEMENT.items()}

#: Element types a graph tensor may have.
ELEMENT_TYPES = (bf16, *_NUMPY_OF_ELEMENT)


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a graph element type (``f32`` -> ``float32``)."""
    if element_type == bf16:
        return bfloat16_dtype()
    try:
        return np.dtype(_NUMPY_OF_ELEMENT[element_type])
    except KeyError:
        raise VerifyException(f"unsupported element type {element_type}") from None


def _is_bfloat16(dtype: np.dtype | type | str) -> bool:
    """Without importing ml_dtypes: an array or type of it exists only once it is imported."""
    return dtype == "bfloat16" or getattr(dtype, "__name__", None) == "bfloat16" or (
        isinstance(dtype, np.dtype) and dtype.name == "bfloat16"
    )


def element_type_of(dtype: np.dtype | type | str) -> Attribute:
    """The graph element type of a numpy dtype (``float32`` -> ``f32``)."""
    if _is_bfloat16(dtype):
        return bf16
    try:
        dtype = np.dtype(dtype)
        return _ELEMENT_OF_NUMPY[dtype]
    except (KeyError, TypeError):
        supported = ", ".join(["bfloat16", *(str(d) for d in _ELEMENT_OF_NUMPY)])
        raise ValueError(f"unsupported dtype {dtype} (supported: {supported})") from None


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, BFloat16Type | Float16Type | Float32Type | Float64Type)


def is_float_dtype(dtype: np.dtype | type | str) -> bool:
    """Whether a numpy dtype is a floating type, bfloat16 included (numpy files ml_dtypes'
    types under ``np.generic``, so ``np.issubdtype(bfloat16, np.floating)`` is False)."""
    return _is_bfloat16(dtype) or np.dtype(dtype).kind == "f"


def is_int(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and element_type != i1


def is_bool(element_type: Attribute) -> bool:
    return element_type == i1


# ---------------------------------------------------------------------------
# shapes


def shape_of(t: Attribute) -> Shape:
    """The shape of a graph tensor type, symbolic dims as their names."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a tensor type, got {t}")
    dims = t.get_shape()
    if any(d > MAX_BYTES for d in dims):  # the generated code computes sizes in int64
        raise VerifyException(f"{t}: a dim larger than 2**63 - 1 (sizes are 64-bit)")
    if isinstance(t.encoding, DimNamesAttr):
        names = [n.data for n in t.encoding.names.data]
        if len(names) != len(dims):
            raise VerifyException(f"{t}: #graph.dims names {len(names)} dims, type has {len(dims)}")
        return tuple(name if name else d for d, name in zip(dims, names))
    if any(d == DYNAMIC_INDEX for d in dims):
        raise VerifyException(f"{t}: dynamic dims must be named with #graph.dims<...>")
    return dims


def tensor_type(shape: Sequence[Dim], element_type: Attribute) -> TensorType:
    """Build a graph tensor type; string dims become named symbolic dims."""
    for d in shape:
        if isinstance(d, int) and d < 0 or not isinstance(d, int | str):
            raise VerifyException(f"invalid dimension {d!r} in shape {tuple(shape)}")
    static = [d if isinstance(d, int) else DYNAMIC_INDEX for d in shape]
    if all(isinstance(d, int) for d in shape):
        return TensorType(element_type, static)
    names = ArrayAttr([StringAttr(d if isinstance(d, str) else "") for d in shape])
    return TensorType(element_type, static, DimNamesAttr(names))


def element_type(t: Attribute) -> Attribute:
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a tensor type, got {t}")
    return t.element_type


def format_shape(shape: Sequence[Dim]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(*shapes: Shape) -> Shape:
    """Numpy broadcasting over static and symbolic dims.

    A symbol broadcasts with 1 and with itself; against a different static size or
    another symbol the shapes do not broadcast statically, which is an error.
    """
    rank = max((len(s) for s in shapes), default=0)
    result: list[Dim] = []
    for axis in range(rank):
        dims = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise VerifyException(
                "shapes " + ", ".join(format_shape(s) for s in shapes) + " do not broadcast"
            )
        result.append(dims.pop() if dims else 1)
    return tuple(result)


def row_depths(shape: Sequence[Dim], of: Sequence[Dim]) -> set[int]:
    """The row depths ``r`` (``1 <= r < rank``) at which a tensor of ``shape`` holds one
    value per row of a tensor of shape ``of``: ``shape == of[:r] + (1,) * (rank - r)``
    with some size other than 1 in ``of[r:]`` (else it is no broadcast). Softmax's row
    maximum (N, 1) of its input (N, C): {1}; layer norm's mean (N, 1, 1) of (N, T, C): {1}."""
    n = len(of)
    if len(shape) != n:
        return set()
    return {
        r
        for r in range(1, n)
        if tuple(shape[:r]) == tuple(of[:r]) and all(d == 1 for d in shape[r:]) and any(d != 1 for d in of[r:])
    }


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as a non-negative one, or a clear error."""
    if not -rank <= axis < max(rank, 1):
        raise VerifyException(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def num_elements(shape: Sequence[Dim]) -> int | None:
    """Product of a static shape, or None when a dim is symbolic."""
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n

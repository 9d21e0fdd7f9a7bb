"""What ONNX converters use: the node (inputs, attributes), the builder, constants known at import.

A converter receives the :class:`OnnxContext` and the :class:`OnnxNode`::

    @converter("LeakyRelu", since=6)
    def leaky_relu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        x = node.input(0)
        alpha = ctx.scalar(node.attr("alpha", 0.01), x)
        return ctx.b.where(ctx.b.compare(x, ctx.scalar(0, x), "ge"), x, ctx.b.mul(x, alpha))

The builder folds every op whose operands are all constants (with the op's own numpy
reference semantics) while the result is small, so shape arithmetic (``Shape`` ->
``Gather`` -> ``Concat`` -> ``Reshape``) leaves constants that :meth:`OnnxContext.const`
reads: converters that need a value at import time (a reshape's target shape, a
slice's bounds, ``TopK``'s k) ask for it with :meth:`OnnxContext.need_const`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.ir import SSAValue

from ...dialects.graph import ConstantOp, GraphOp
from ...dialects.graph.indexing import ArangeOp, FullOp
from ...dialects.graph.types import Dim, element_type_of, num_elements, numpy_dtype, shape_of
from ...errors import UnsupportedOperatorError
from .. import sizes
from ..builder import GraphBuilder
from .dtypes import numpy_dtype_of_onnx

#: results of at most this many elements computed from constants are folded at import
FOLD_LIMIT = 1 << 16


class OnnxImportError(ValueError):
    """A malformed model, or a node that cannot be converted; names the node and why."""


class OnnxUnsupportedError(UnsupportedOperatorError):
    """A node uses a feature (an attribute value, a dtype, an input that is not constant)
    tensorkiln does not convert; the message names the node, the op and the feature."""


class NotConverted(Exception):
    """Raised by a converter for a feature it does not handle; the importer names the node."""


class NeedsInputValues(NotConverted):
    """A value needed at import time (a reshape's target, reduction axes, pads) is computed
    from graph inputs: with their values bound at import (``from_onnx(..., bind=...)``) it
    is a constant."""

    def __init__(self, message: str, inputs: Sequence[str]):
        super().__init__(message)
        self.inputs = list(inputs)


class OnnxInputValuesNeeded(OnnxUnsupportedError):
    """The model uses graph inputs as shapes, axes or sizes (their values decide the shapes of
    results): import it with those values bound, ``from_onnx(model, bind={name: array})``,
    once per set of values (``inputs`` names them)."""

    def __init__(self, message: str, inputs: Sequence[str]):
        super().__init__(message)
        self.inputs = list(inputs)


class FoldingBuilder(GraphBuilder):
    """A :class:`GraphBuilder` whose ops are evaluated at once when all their operands are
    constants and the result has at most :data:`FOLD_LIMIT` elements."""

    def __getattr__(self, method: str) -> Callable[..., SSAValue]:
        build = super().__getattr__(method)

        def folded(*args: Any, **kwargs: Any) -> SSAValue:
            return self.fold(build(*args, **kwargs))

        folded.__doc__, folded.__name__ = build.__doc__, method
        return folded

    def unfolded(self, method: str) -> Callable[..., SSAValue]:
        """The plain builder method, whose op is kept even when its operands are constants
        (a dequantize of an int8 weight stays one: folding it would lose the int8 data)."""
        return super().__getattr__(method)

    def fold(self, value: SSAValue) -> SSAValue:
        op = value.owner
        if not isinstance(op, GraphOp) or isinstance(op, ConstantOp) or not op.operands or op.regions:
            return value
        if not all(isinstance(o.owner, ConstantOp) for o in op.operands):
            return value
        n = num_elements(shape_of(value.type))
        if n is None or n > FOLD_LIMIT:
            return value
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = op.reference(*(o.owner.array() for o in op.operands))
        except NotImplementedError:
            return value
        array = np.asarray(result).astype(numpy_dtype(value.type.element_type), copy=False)
        if array.shape != tuple(shape_of(value.type)):
            return value  # (a reference that disagrees with its op's type: leave it to the compiler)
        op.detach()
        op.erase()
        return self.constant(np.asarray(array, order="C"), f"const.{op.name.removeprefix('graph.')}")


class OnnxNode:
    """One ONNX node being converted: its proto, input values and parsed attributes.

    ``version`` is the schema version its op has under the model's opset (``Split`` in an
    opset-17 model: 13).
    """

    def __init__(self, proto: onnx.NodeProto, inputs: Sequence[SSAValue | None], version: int, used: Sequence[bool]):
        self.proto = proto
        self.op_type = proto.op_type
        self.version = version
        self._inputs = list(inputs)
        self._attrs = {a.name: a for a in proto.attribute}
        #: whether each output is read by a later node or is a graph output
        self.used = list(used)

    @property
    def name(self) -> str:
        return self.proto.name or (self.proto.output[0] if self.proto.output else self.op_type)

    @property
    def n_inputs(self) -> int:
        return len(self._inputs)

    @property
    def n_outputs(self) -> int:
        return len(self.proto.output)

    def input(self, k: int) -> SSAValue | None:
        """Input ``k``, or None when it is absent (an optional input left out or ``""``)."""
        return self._inputs[k] if k < len(self._inputs) else None

    def inputs(self) -> list[SSAValue | None]:
        return list(self._inputs)

    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        """An attribute's value: int, float, str, list of them, numpy array (a tensor),
        or a GraphProto; ``default`` when absent."""
        proto = self._attrs.get(name)
        if proto is None:
            return default
        if proto.type == onnx.AttributeProto.TENSOR:
            return numpy_helper.to_array(proto.t)
        if proto.type == onnx.AttributeProto.GRAPH:
            return proto.g
        value = onnx.helper.get_attribute_value(proto)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode() for v in value]
        return value

    def attr_names(self) -> list[str]:
        return list(self._attrs)


class OnnxContext:
    """State of one import: the builder, and helpers every converter needs."""

    def __init__(self, builder: FoldingBuilder):
        self.b = builder
        #: converts subgraphs (``If``/``Loop``/``Scan`` bodies): the importer (``convert_subgraph``
        #: inline, ``region`` for a control-flow op's region, ``outer_values``)
        self.subgraphs: Any = None
        #: sizes read from data (``NonZero``'s count): symbol -> its 0-d int64 value, its size carrier
        self.symbol_values: dict[str, SSAValue] = {}
        self.carriers: dict[str, SSAValue] = {}
        #: values of ONNX element types the graph lacks -> how they are held (``held.py``)
        self.held: dict[SSAValue, Any] = {}
        #: the function's arguments -> the names of the graph inputs they are
        self.input_names: dict[SSAValue, str] = {}
        #: integer tensors computed from symbolic sizes (``Shape`` of a ``batch`` x 768 input)
        #: -> their elements as dims (an object array: ints and symbol expressions)
        self.symbolic: dict[SSAValue, np.ndarray] = {}

    # -- values ---------------------------------------------------------------------

    @staticmethod
    def const(value: SSAValue | None) -> np.ndarray | None:
        """The value of ``value`` when it is a constant at import time, else None."""
        if value is not None and isinstance(value.owner, ConstantOp):
            return value.owner.array()
        return None

    def need_const(self, node: OnnxNode, k: int, what: str) -> np.ndarray:
        """Input ``k`` of ``node``'s value, which must be known at import time."""
        array = self.const(node.input(k))
        if array is None:
            raise self._not_known(node.input(k), f"input {k} ({what}) must be a constant or computed from constants and static shapes")
        return array

    def _not_known(self, value: SSAValue, message: str) -> NotConverted:
        """The refusal for a value needed at import time that is computed at run time; when
        it is computed from graph inputs alone, naming them (their values can be bound)."""
        if value in self.symbolic:
            symbols = sorted({d for d in self.symbolic[value].reshape(-1) if isinstance(d, str)})
            return NotConverted(f"{message}; it depends on the symbolic sizes {symbols}: pin them with from_onnx(..., shape=...)")
        names = self._input_sources(value)
        if not names:
            return NotConverted(f"{message}; it is computed from data here")
        listed = ", ".join(f"'{n}'" for n in names)
        return NeedsInputValues(
            f"{message}; it is computed from the graph input{'s' if len(names) > 1 else ''} {listed}: "
            f"import with from_onnx(..., bind={{{listed}: value}}) to compile for given values",
            names,
        )

    def _input_sources(self, value: SSAValue) -> list[str]:
        """The graph inputs ``value`` is computed from when it depends on nothing else that
        is not a constant (empty otherwise)."""
        found: list[str] = []
        stack, seen = [value], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in self.input_names:
                found.append(self.input_names[v])
            elif isinstance(v.owner, FullOp | ArangeOp):
                continue  # (its operands only give sizes: it reads no data)
            elif isinstance(v.owner, GraphOp) and not v.owner.regions:
                stack.extend(v.owner.operands)
            elif not isinstance(v.owner, ConstantOp):
                return []
        return sorted(found)

    def dims_of(self, value: SSAValue | None) -> list[Dim] | None:
        """The elements of a small integer vector known at import time: a constant's, or
        the symbolic sizes a ``Shape`` of a symbolic tensor gave (``["batch", 768]``)."""
        if value is None:
            return None
        if value in self.symbolic:
            return [d if isinstance(d, str) else int(d) for d in self.symbolic[value].reshape(-1)]
        array = self.const(value)
        if array is None or array.dtype.kind not in "iu":
            return None
        return [int(v) for v in array.reshape(-1)]

    def need_dims(self, node: OnnxNode, k: int, what: str) -> list[Dim]:
        """Input ``k`` of ``node`` as a list of sizes known at import time (symbolic ones
        included); a clear refusal when it is computed from data."""
        dims = self.dims_of(node.input(k))
        if dims is None:
            raise self._not_known(node.input(k), f"input {k} ({what}) must be a constant or computed from the shapes of tensors")
        return dims

    def dims_value(self, dims: Sequence[Dim] | np.ndarray, scalar: bool = False) -> SSAValue:
        """An int64 tensor holding ``dims`` (a list, a 0-d tensor with ``scalar``, or an
        object array of any shape): a constant when they are static, else computed at run
        time and remembered symbolically."""
        values = np.asarray(list(dims) if not isinstance(dims, np.ndarray) else dims, dtype=object)
        if scalar:
            values = values.reshape(())
        flat = list(values.reshape(-1))
        if all(isinstance(d, int | np.integer) for d in flat):
            return self.constant(np.asarray(flat, np.int64).reshape(values.shape))
        parts = [self.b.reshape(self.size_value(d if isinstance(d, str) else int(d)), (1,)) for d in flat]
        value = parts[0] if len(parts) == 1 else self.b.concat(parts, 0)
        value = self.b.reshape(value, values.shape) if values.shape != (len(flat),) else value
        self.symbolic[value] = values
        return value

    def known_elements(self, value: SSAValue | None) -> np.ndarray | None:
        """A small integer tensor's elements known at import (an object array of dims, in
        its shape): a constant's, or symbolic ones."""
        if value is None:
            return None
        if value in self.symbolic:
            return self.symbolic[value]
        array = self.const(value)
        if array is None or array.dtype.kind not in "iu" or array.size > 64:
            return None
        return array.astype(object)

    def constant(self, array: Any, dtype: Any = None) -> SSAValue:
        return self.b.constant(np.asarray(array, dtype=dtype, order="C"))

    def scalar(self, value: float | int | bool, like: SSAValue) -> SSAValue:
        """A 0-d constant of ``like``'s element type."""
        return self.b.constant(np.asarray(value).astype(self.dtype(like)))

    def positions(self, length: Dim, source: SSAValue | None = None) -> SSAValue:
        """``0 .. length - 1`` as int64: a constant when ``length`` is static, else a
        ``graph.arange`` whose symbolic size comes from ``source`` (or the inputs)."""
        if isinstance(length, int):
            return sizes.positions(self.b, length)
        return sizes.positions(self.b, length, self.dim_sources((length,), source))

    def dim_sources(self, shape: Sequence[Dim], source: SSAValue | None = None) -> list[SSAValue]:
        """Values whose dims give the symbols of ``shape``: ``source`` first, then the
        size carriers of sizes read from data, then the function's inputs."""
        candidates = [source] if source is not None else []
        candidates += [self.carriers[s] for s in sorted(sizes.needed_symbols(shape)) if s in self.carriers]
        try:
            return sizes.dim_sources(self.b, shape, candidates)
        except sizes.MissingDimSource as e:
            raise NotConverted(str(e)) from None

    def size_value(self, dim: Dim) -> SSAValue:
        """A 0-d int64 tensor holding ``dim`` (``frontends/sizes.py``): a size read from
        data is its value, another symbol the sum of a ones vector that long."""
        try:
            return sizes.size_value(self.b, dim, self.symbol_values)
        except sizes.MissingDimSource as e:
            raise NotConverted(str(e)) from None

    def data_size(self, count: SSAValue, upper: int | None = None) -> tuple[str, SSAValue]:
        """A new symbol for a size read from data (the 0-d integer ``count``), and its size
        carrier (``graph.data_size``, run by the VM)."""
        symbol = f"u{len(self.carriers)}"
        while symbol in self.carriers:
            symbol += "_"
        count = self.cast(count, np.int64)
        self.symbol_values[symbol] = count
        self.carriers[symbol] = self.b.data_size(count, symbol, 0, upper)
        return symbol, self.carriers[symbol]

    # -- types ------------------------------------------------------------------------

    @staticmethod
    def shape(value: SSAValue) -> tuple[Dim, ...]:
        return tuple(shape_of(value.type))

    @staticmethod
    def rank(value: SSAValue) -> int:
        return len(shape_of(value.type))

    @staticmethod
    def dtype(value: SSAValue) -> np.dtype:
        return numpy_dtype(value.type.element_type)

    def is_float(self, value: SSAValue) -> bool:
        return self.dtype(value).kind == "f" or self.dtype(value).name == "bfloat16"

    def cast(self, value: SSAValue, dtype: Any) -> SSAValue:
        dtype = np.dtype(dtype)
        if self.dtype(value) == dtype:
            return value
        return self.b.cast(value, element_type_of(dtype))

    def onnx_dtype(self, elem_type: int, node: OnnxNode, what: str) -> np.dtype:
        """The numpy dtype of an ONNX element type a node names (``Cast``'s ``to``)."""
        return numpy_dtype_of_onnx(elem_type, f"node '{node.name}' ({node.op_type}) {what}")

    @staticmethod
    def axis(axis: int, rank: int, node: OnnxNode, what: str = "axis") -> int:
        """A possibly negative axis, normalised; a clear error when out of range."""
        if not -rank <= axis < max(rank, 1):
            raise OnnxImportError(f"node '{node.name}' ({node.op_type}): {what} {axis} is out of range for rank {rank}")
        return axis % rank if rank else 0

    def axes(self, axes: Sequence[int], rank: int, node: OnnxNode, what: str = "axes") -> list[int]:
        return [self.axis(int(a), rank, node, what) for a in axes]


def refuse(message: str) -> NotConverted:
    """The exception a converter raises for a feature it does not convert::

        raise refuse(f"mode '{mode}' is not supported")
    """
    return NotConverted(message)

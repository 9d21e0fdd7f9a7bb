"""The ``te`` dialect: tensor expressions, what each kernel computes (TVM's TE).

``te.compute`` defines every element of its result tensor by a scalar body. The body's
block arguments are the index variables (one per result dim, ``index``) followed by the
input tensors; it reads inputs with ``te.read`` at index expressions (``arith`` on
``index``), computes with ``arith``/``math`` scalar ops and ends with ``te.yield``.
``te.reduce`` combines a scalar body over reduction axes (block arguments of its own)::

    %c = te.compute(%a, %b) : (tensor<16x8xf32>, tensor<8x32xf32>) -> tensor<16x32xf32> {
    ^bb0(%i: index, %j: index, %A: tensor<16x8xf32>, %B: tensor<8x32xf32>):
      %k8 = arith.constant 8 : index
      %s = te.reduce add(%k8) init 0.0 : f32 {
      ^bb1(%k: index):
        %x = te.read %A[%i, %k] : tensor<16x8xf32>
        %y = te.read %B[%k, %j] : tensor<8x32xf32>
        %p = arith.mulf %x, %y : f32
        te.yield %p : f32
      }
      te.yield %s : f32
    }

``te.compute`` is isolated from above: it sees only its inputs, so it can be outlined
into a kernel and hashed structurally. ``te.dim`` gives an input's (possibly symbolic)
size along an axis, for bounds that depend on shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    BoolAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from .syntax import parse_access, parse_isolated_region_op, print_access, print_isolated_region_op

#: combiners of te.reduce
COMBINERS = ("add", "mul", "max", "min")


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """A tensor whose every element is given by a scalar body (see module docstring)."""

    name = "te.compute"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType, body: Region):
        super().__init__(operands=[inputs], result_types=[result_type], regions=[body])

    @staticmethod
    def build_body(result_type: TensorType, input_types: Sequence[Attribute]) -> Block:
        """An empty body block with the index variables and input tensors as arguments."""
        return Block(arg_types=[IndexType()] * result_type.get_num_dims() + list(input_types))

    @property
    def index_vars(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args[: self.result.type.get_num_dims()])

    @property
    def input_args(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args[self.result.type.get_num_dims() :])

    def verify_(self) -> None:
        rank = self.result.type.get_num_dims()
        args = self.body.block.args
        if len(args) != rank + len(self.inputs):
            raise VerifyException(
                f"te.compute: body must take {rank} index variables and {len(self.inputs)} "
                f"input tensors, got {len(args)} arguments"
            )
        for k, arg in enumerate(args[:rank]):
            if not isinstance(arg.type, IndexType):
                raise VerifyException(f"te.compute: index variable #{k} must be index, got {arg.type}")
        for k, (arg, value) in enumerate(zip(args[rank:], self.inputs)):
            if arg.type != value.type:
                raise VerifyException(
                    f"te.compute: body argument for input #{k} has type {arg.type}, input is {value.type}"
                )
        last = self.body.block.last_op
        if not isinstance(last, YieldOp) or last.value.type != self.result.type.element_type:
            raise VerifyException(
                f"te.compute: body must end with te.yield of {self.result.type.element_type}"
            )

    def print(self, printer: Printer) -> None:
        print_isolated_region_op(printer, self, self.inputs, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ComputeOp:
        inputs, result_type, attributes, body = parse_isolated_region_op(parser)
        if not isinstance(result_type, TensorType):
            parser.raise_error(f"te.compute must produce a tensor, got {result_type}")
        op = cls(inputs, result_type, body)
        op.attributes |= attributes
        return op


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Combine a scalar body over reduction axes of the given extents.

    Example: ``%s = te.reduce max(%n) init -3.4e38 : f32 { ^bb0(%k: index): ... te.yield %v : f32 }``
    """

    name = "te.reduce"
    extents = var_operand_def(IndexType)
    combiner = prop_def(StringAttr)
    init = prop_def(FloatAttr | IntegerAttr)
    result = result_def(AnyFloat | IntegerType)
    body = region_def("single_block")

    def __init__(self, combiner: str, extents: Sequence[SSAValue], init: FloatAttr | IntegerAttr, body: Region):
        super().__init__(
            operands=[extents],
            properties={"combiner": StringAttr(combiner), "init": init},
            result_types=[init.type],
            regions=[body],
        )

    @staticmethod
    def build_body(num_axes: int) -> Block:
        return Block(arg_types=[IndexType()] * num_axes)

    @property
    def axes(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args)

    def verify_(self) -> None:
        if self.combiner.data not in COMBINERS:
            raise VerifyException(
                f"te.reduce: unknown combiner '{self.combiner.data}' (expected one of {', '.join(COMBINERS)})"
            )
        if len(self.body.block.args) != len(self.extents):
            raise VerifyException(
                f"te.reduce: {len(self.extents)} extents but {len(self.body.block.args)} axes"
            )
        if self.init.type != self.result.type:
            raise VerifyException(f"te.reduce: init {self.init.type} vs result {self.result.type}")
        last = self.body.block.last_op
        if not isinstance(last, YieldOp) or last.value.type != self.result.type:
            raise VerifyException(f"te.reduce: body must end with te.yield of {self.result.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.combiner.data}(")
        printer.print_list(self.extents, printer.print_ssa_value)
        printer.print_string(") init ")
        value = self.init.value.data
        printer.print_string(repr(float(value)) if isinstance(self.init, FloatAttr) else str(value))
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        combiner = parser.parse_identifier()
        pos = parser.pos
        extents = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        parser.parse_keyword("init")
        number = parser.parse_number()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        init = FloatAttr(float(number), t) if isinstance(t, AnyFloat) else IntegerAttr(int(number), t)
        resolved = parser.resolve_operands(extents, [IndexType()] * len(extents), pos)
        body = parser.parse_region()
        return cls(combiner, resolved, init, body)


@irdl_op_definition
class ReadOp(IRDLOperation):
    """Read one element of an input tensor: ``%x = te.read %A[%i, %k] : tensor<16x8xf32>``."""

    name = "te.read"
    tensor = operand_def(TensorType)
    indices = var_operand_def(IndexType)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[tensor, indices], result_types=[tensor.type.element_type])

    def verify_(self) -> None:
        rank = self.tensor.type.get_num_dims()
        if len(self.indices) != rank:
            raise VerifyException(f"te.read: {len(self.indices)} indices for a rank-{rank} tensor")
        if self.result.type != self.tensor.type.element_type:
            raise VerifyException(f"te.read: result {self.result.type} vs element {self.tensor.type.element_type}")

    def print(self, printer: Printer) -> None:
        print_access(printer, self, self.tensor, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> ReadOp:
        # The result type is the element type: inferred rather than spelled twice.
        tensor, indices, attributes = parse_access(parser)
        op = cls(tensor, indices)
        op.attributes |= attributes
        return op


@irdl_op_definition
class DimOp(IRDLOperation):
    """The size of a tensor along an axis: ``%n = te.dim %A, 0 : tensor<?x8xf32, #graph.dims<n, _>>``."""

    name = "te.dim"
    tensor = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$tensor `,` $axis attr-dict `:` type($tensor)"

    def __init__(self, tensor: SSAValue, axis: int):
        super().__init__(
            operands=[tensor], properties={"axis": IntegerAttr(axis, i64)}, result_types=[IndexType()]
        )

    def verify_(self) -> None:
        if not 0 <= self.axis.value.data < self.tensor.type.get_num_dims():
            raise VerifyException(f"te.dim: axis {self.axis.value.data} out of range for {self.tensor.type}")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The scalar value of a te.compute element or a te.reduce term."""

    name = "te.yield"
    value = operand_def()
    traits = traits_def(IsTerminator(), HasParent(ComputeOp, ReduceOp))
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


@irdl_op_definition
class ScatterOp(IRDLOperation):
    """``input`` with ``updates`` combined into it at ``indices`` along ``axis``
    (``graph.scatter``'s semantics), computed line by line rather than element by
    element: TE's gather form would scan every update of a line for each of its
    elements. te-to-loop writes one loop nest over the lines (every axis but ``axis``:
    they never write the same element, so they may run in parallel), each line copied,
    then its updates applied in order (the last ``update`` wins).

    Example::

        %s = te.scatter %x, %i, %u {axis = 0 : i64, mode = "add", include_self = true} : (tensor<6x5xf32>, tensor<4x5xi64>, tensor<4x5xf32>) -> tensor<6x5xf32>
    """

    name = "te.scatter"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    include_self = prop_def(BoolAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $indices `,` $updates attr-dict `:` `(` type($input) `,` type($indices) `,` type($updates) "
        "`)` `->` type($result)"
    )

    def __init__(self, input: SSAValue, indices: SSAValue, updates: SSAValue, axis: int, mode: str, include_self: bool):
        super().__init__(
            operands=[input, indices, updates],
            result_types=[input.type],
            properties={
                "axis": IntegerAttr(axis, IntegerType(64)),
                "mode": StringAttr(mode),
                "include_self": BoolAttr.from_bool(include_self),
            },
        )

    @property
    def inputs(self) -> tuple[SSAValue, ...]:
        """The tensors the kernel reads (as ``te.compute``'s inputs)."""
        return tuple(self.operands)

    def verify_(self) -> None:
        if self.result.type != self.input.type:
            raise VerifyException(f"te.scatter: result {self.result.type} must have the input's type {self.input.type}")
        if not 0 <= self.axis.value.data < self.input.type.get_num_dims():
            raise VerifyException(f"te.scatter: axis {self.axis.value.data} out of range for {self.input.type}")


#: combiners of te.scan -> what its result holds: the running ``value`` (the input's type)
#: or the ``index`` (``i64``) of the element the running extreme was last taken from
SCAN_COMBINERS = {"add": "value", "mul": "value", "logaddexp": "value", "argmax": "index", "argmin": "index"}


@irdl_op_definition
class SortOp(IRDLOperation):
    """The ``i64`` indices that sort ``input`` along ``axis`` (``graph.argsort`` of a long
    axis): stable, NaN the largest value, ``descending`` reversing the order but not
    the ties'. te-to-loop writes one kernel: a bottom-up merge sort of each line's
    indices, ``O(n log n)``, the lines independent, in a workspace of two index buffers
    the host allocates (``lowering/sort_kernel.py``); TE's element form would count each
    element's rank, ``O(n^2)``. With ``k`` (a few: topk), only the first ``k`` indices,
    kept by insertion in the output as the line is read once.

    Example::

        %i = te.sort %x {axis = 1 : i64, descending = true} : (tensor<4x5000xf32>) -> tensor<4x5000xi64>
    """

    name = "te.sort"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    descending = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    k = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` `(` type($input) `)` `->` type($result)"

    def __init__(self, input: SSAValue, axis: int, descending: bool = False, k: int | None = None, result_type: TensorType | None = None):
        """``result_type``: given with ``k`` (the input's type with ``k`` along the axis, in i64)."""
        t = input.type
        props = {"axis": IntegerAttr(axis, IntegerType(64)), "descending": BoolAttr.from_bool(descending)}
        if k is not None:
            props["k"] = IntegerAttr(k, IntegerType(64))
        result_type = result_type or TensorType(IntegerType(64), t.get_shape(), t.encoding)
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        rank = len(self.input.type.get_shape())
        axis = self.axis.value.data
        if not 0 <= axis < max(rank, 1):
            raise VerifyException(f"te.sort: axis {axis} out of range for rank {rank}")
        expected = list(self.input.type.get_shape())
        if self.k is not None:
            expected[axis] = self.k.value.data
        if list(self.result.type.get_shape()) != expected:
            raise VerifyException(f"te.sort: the result must have shape {expected}")


@irdl_op_definition
class ScanOp(IRDLOperation):
    """An inclusive scan of ``input`` along ``axis`` (``graph.cumsum``, ``cumprod``,
    ``logcumsumexp``, ``cumargmax``, ``cumargmin``), computed with one running value per
    line rather than element by element: TE's element form would combine each element's
    whole prefix, ``O(n^2)`` along the axis. te-to-loop writes one loop nest over the
    lines (every axis but ``axis``: independent, so they may run in parallel), each a
    serial loop along the axis (``scan_kernel.py``). ``combiner``: ``add``, ``mul`` (integers
    wrap; floats in element order), ``logaddexp`` (floats), ``argmax``/``argmin`` (the
    ``i64`` position of the running extreme: the last one on ties, a NaN sticks).

    Example::

        %c = te.scan %x {axis = 1 : i64, combiner = "add"} : (tensor<4x5xf32>) -> tensor<4x5xf32>
    """

    name = "te.scan"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    combiner = prop_def(StringAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` `(` type($input) `)` `->` type($result)"

    def __init__(self, input: SSAValue, axis: int, combiner: str):
        t = input.type
        if SCAN_COMBINERS.get(combiner) == "index":
            t = TensorType(IntegerType(64), t.get_shape(), t.encoding)
        super().__init__(
            operands=[input],
            result_types=[t],
            properties={"axis": IntegerAttr(axis, IntegerType(64)), "combiner": StringAttr(combiner)},
        )

    @property
    def inputs(self) -> tuple[SSAValue, ...]:
        """The tensors the kernel reads (as ``te.compute``'s inputs)."""
        return (self.input,)

    def verify_(self) -> None:
        combiner, t = self.combiner.data, self.input.type
        holds = SCAN_COMBINERS.get(combiner)
        if holds is None:
            raise VerifyException(
                f"te.scan: unknown combiner '{combiner}' (expected one of {', '.join(SCAN_COMBINERS)})"
            )
        if not 0 <= self.axis.value.data < t.get_num_dims():
            raise VerifyException(f"te.scan: axis {self.axis.value.data} out of range for {t}")
        element = IntegerType(64) if holds == "index" else t.element_type
        expected = TensorType(element, t.get_shape(), t.encoding)
        if self.result.type != expected:
            raise VerifyException(f"te.scan: a '{combiner}' scan of {t} gives {expected}, not {self.result.type}")
        if combiner == "logaddexp" and not isinstance(t.element_type, AnyFloat):
            raise VerifyException(f"te.scan: 'logaddexp' needs a float input, got {t}")


@dataclass(frozen=True)
class DenseLinalgSignature:
    """What a te.dense_linalg routine takes and gives: each input's and the result's
    core rank (2: matrices, 1: vectors; the axes before are the batch), and whether its
    first input must be square."""

    inputs: tuple[int, ...]
    result: int = 2
    square: bool = True


#: routines of te.dense_linalg (the graph op each lowers) -> their signature
DENSE_LINALG_ROUTINES = {
    "solve": DenseLinalgSignature((2, 2)),
    "triangular_solve": DenseLinalgSignature((2, 2)),
    "cholesky": DenseLinalgSignature((2,)),
    "det_factors": DenseLinalgSignature((2,), result=1),
    "lu_factor": DenseLinalgSignature((2,), square=False),
    "pivot_permutation": DenseLinalgSignature((1,), result=1, square=False),
    "householder_qr": DenseLinalgSignature((2,), square=False),
    "householder_product": DenseLinalgSignature((2, 1), square=False),
    "eigh": DenseLinalgSignature((2,)),
    "jacobi_svd": DenseLinalgSignature((2,), square=False),
    "repeated_squaring": DenseLinalgSignature((2, 0)),
    # real and imaginary parts (..., rows, columns), the table of w_n^t (2, n) -> (..., 2, rows,
    # columns); ``kind``: "forward" or "inverse", then "rows" or "columns" (the signals)
    "fft": DenseLinalgSignature((2, 2, 2), result=3, square=False),
    # a real signal and its table (2, 2h + 1): roots of unity of h, then cos/2, sin/2 of 2 pi k / 2h
    "rfft": DenseLinalgSignature((2, 2), result=3, square=False),
    # the parts of h + 1 bins and the table (2, 2h): inverse roots of h, then cos, sin of 2 pi k / 2h
    "irfft": DenseLinalgSignature((2, 2, 2), result=2, square=False),
    # per element (``kind``: the polynomial family; "lower" or "upper")
    "orthogonal_polynomial": DenseLinalgSignature((0, 0), result=0, square=False),
    "incomplete_gamma": DenseLinalgSignature((0, 0), result=0, square=False),
}


@irdl_op_definition
class DenseLinalgOp(IRDLOperation):
    """A sequential algorithm run on each matrix of a batch (the last two axes), or on
    each element (core rank 0: a recurrence): ``routine`` is the graph op it computes
    (``graph.solve``, ``triangular_solve``, ``cholesky``, ``det_factors``, ``lu_factor``,
    ``householder_qr``, ``eigh``, ``orthogonal_polynomial``, ...: their semantics;
    :data:`DENSE_LINALG_ROUTINES`), ``lower`` and ``unit_diagonal`` the triangular solve's
    flags (``lower`` also eigh's), ``kind`` the variant of a routine that has several (the
    polynomial family of ``orthogonal_polynomial``, ``incomplete_gamma``'s lower or upper
    function). te-to-loop writes one kernel: the
    batch loops outermost (independent, so they may run in parallel), in each the
    algorithm's serial loops (``lowering/dense_linalg/``); some routines work on copies in
    a workspace the host allocates.

    Example::

        %x = te.dense_linalg %a, %b {routine = "solve"} : (tensor<2x5x5xf32>, tensor<5x3xf32>) -> tensor<2x5x3xf32>
    """

    name = "te.dense_linalg"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    routine = prop_def(StringAttr)
    lower = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    unit_diagonal = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    kind = prop_def(StringAttr, default_value=StringAttr(""))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_type: TensorType,
        routine: str,
        lower: bool = False,
        unit_diagonal: bool = False,
        kind: str = "",
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[result_type],
            properties={
                "routine": StringAttr(routine),
                "lower": BoolAttr.from_bool(lower),
                "unit_diagonal": BoolAttr.from_bool(unit_diagonal),
                "kind": StringAttr(kind),
            },
        )

    def verify_(self) -> None:
        routine = self.routine.data
        signature = DENSE_LINALG_ROUTINES.get(routine)
        if signature is None:
            raise VerifyException(
                f"te.dense_linalg: unknown routine '{routine}' (expected one of {', '.join(DENSE_LINALG_ROUTINES)})"
            )
        if len(self.inputs) != len(signature.inputs):
            raise VerifyException(f"te.dense_linalg: '{routine}' takes {len(signature.inputs)} inputs, got {len(self.inputs)}")
        shape = self.inputs[0].type.get_shape()
        if signature.square and (len(shape) < 2 or (shape[-1] != shape[-2] and shape[-1] >= 0 and shape[-2] >= 0)):
            raise VerifyException(f"te.dense_linalg: '{routine}' needs square matrices (..., n, n), got {self.inputs[0].type}")
        if any(v.type.element_type != self.result.type.element_type for v in self.inputs):
            raise VerifyException("te.dense_linalg: inputs and result must have one element type")
        batch = len(self.result.type.get_shape()) - signature.result
        for value, core in zip(self.inputs, signature.inputs):
            if not core <= len(value.type.get_shape()) <= batch + core:
                raise VerifyException(
                    f"te.dense_linalg: '{routine}' needs an input of {core} to {batch + core} axes, got {value.type}"
                )


@irdl_op_definition
class RNNOp(IRDLOperation):
    """``graph.rnn`` (one direction of a recurrent layer over time: its semantics, operands
    in its order ``gates, weight, bias, initial[, projection]``) as one kernel: te-to-loop
    writes the batch rows outermost (independent, so they may run in parallel), in each a
    serial loop over time holding the state in local buffers, the recurrent product and
    the cell inside (``lowering/rnn_kernel.py``); TE's element form would recompute each
    step's whole history.

    Example::

        %s = te.rnn %g, %w, %b, %h {cell = "gru", reverse = false} : (tensor<5x2x21xf32>, tensor<7x21xf32>, tensor<21xf32>, tensor<2x7xf32>) -> tensor<5x2x7xf32>
    """

    name = "te.rnn"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    cell = prop_def(StringAttr)
    reverse = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType, cell: str, reverse: bool = False):
        super().__init__(
            operands=[list(inputs)],
            result_types=[result_type],
            properties={"cell": StringAttr(cell), "reverse": BoolAttr.from_bool(reverse)},
        )

    def verify_(self) -> None:
        if len(self.inputs) not in (4, 5):
            raise VerifyException(f"te.rnn: takes gates, weight, bias, initial and an optional projection, got {len(self.inputs)} inputs")
        if any(v.type.element_type != self.result.type.element_type for v in self.inputs):
            raise VerifyException("te.rnn: inputs and result must have one element type")
        if len(self.result.type.get_shape()) != 3:
            raise VerifyException(f"te.rnn: the result must be (steps, batch, state), got {self.result.type}")


TE = Dialect("te", [ComputeOp, ReduceOp, ReadOp, DimOp, ScatterOp, ScanOp, SortOp, DenseLinalgOp, RNNOp, YieldOp], [])

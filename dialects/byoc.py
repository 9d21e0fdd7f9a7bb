"""The ``byoc`` dialect: graph regions handed to an external codegen ("bring your own codegen").

The partitioning passes move graph ops into these ops, step by step::

    // partition{backend=blas}: each pattern match becomes a composite
    %y = byoc.composite "blas.dense_bias_relu" (%x) : (tensor<4x64xf32>) -> tensor<4x32xf32> {
    ^bb0(%a: tensor<4x64xf32>):
      %w = graph.constant #graph.weight<"w"> : tensor<32x64xf32>
      ...
      byoc.yield %r : tensor<4x32xf32>
    }
    // merge-composites / annotate-codegen: composites of one backend grouped in a region
    %y = byoc.region (%x) : (tensor<4x64xf32>) -> (tensor<4x32xf32>) attributes {codegen = "blas", symbol = "blas_main_0"} {...}
    // run-codegen: the region compiled by its backend; a call to the external module
    %y = byoc.call #byoc.external<"blas_main_0"> (%x) : (tensor<4x64xf32>) -> (tensor<4x32xf32>)

Composites and regions are isolated from above. Each op has ``reference`` semantics (numpy),
so the interpreter runs a module at every stage.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Data, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from .graph.types import element_type, numpy_dtype, shape_of
from .syntax import parse_isolated_region_op, print_isolated_region_op


def evaluate_block(block: Block, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Run a region body op by op with each op's numpy ``reference``; the yielded arrays."""
    values: dict[SSAValue, np.ndarray] = dict(zip(block.args, inputs))
    for op in block.ops:
        if isinstance(op, YieldOp):
            return tuple(values[v] for v in op.values)
        result = op.reference(*(values[v] for v in op.operands))  # type: ignore[attr-defined]
        results = result if isinstance(result, tuple) else (result,)
        for value, array in zip(op.results, results):
            values[value] = np.asarray(array)
    raise VerifyException("byoc region without byoc.yield")


def _verify_body(op: Operation, inputs: Sequence[SSAValue], result_types: Sequence[Attribute]) -> None:
    block = op.regions[0].block
    if [a.type for a in block.args] != [v.type for v in inputs]:
        raise VerifyException(f"{op.name}: block arguments must match the inputs' types")
    last = block.last_op
    if not isinstance(last, YieldOp) or list(last.values.types) != list(result_types):
        shown = ", ".join(str(t) for t in result_types)
        raise VerifyException(f"{op.name}: the body must end with byoc.yield of ({shown})")


@irdl_op_definition
class CompositeOp(IRDLOperation):
    """One match of a backend's pattern, outlined: ``"backend.pattern"`` names it."""

    name = "byoc.composite"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    pattern = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())

    def __init__(self, pattern: str, inputs: Sequence[SSAValue], result_type: Attribute, body: Region):
        super().__init__(
            operands=[inputs], result_types=[result_type], properties={"pattern": StringAttr(pattern)}, regions=[body]
        )

    @property
    def backend(self) -> str:
        """The backend whose pattern matched (the part of the name before the first dot)."""
        return self.pattern.data.split(".", 1)[0]

    def verify_(self) -> None:
        if "." not in self.pattern.data:
            raise VerifyException(f"byoc.composite: name '{self.pattern.data}' must be 'backend.pattern'")
        _verify_body(self, self.inputs, [self.result.type])

    def reference(self, *inputs: np.ndarray) -> np.ndarray:
        return evaluate_block(self.body.block, inputs)[0]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.pattern.data)
        printer.print_string(" ")
        print_isolated_region_op(printer, self, self.inputs, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> CompositeOp:
        pattern = parser.parse_str_literal()
        inputs, result_type, attributes, body = parse_isolated_region_op(parser)
        op = cls(pattern, inputs, result_type, body)
        op.attributes |= attributes
        return op


def _print_types(printer: Printer, types: Sequence[Attribute]) -> None:
    printer.print_string("(")
    printer.print_list(types, printer.print_attribute)
    printer.print_string(")")


def _parse_signature(parser: Parser) -> tuple[list[SSAValue], list[Attribute]]:
    """``(%a, %b) : (ta, tb) -> (tr, ...)``: resolved inputs and result types."""
    pos = parser.pos
    operands = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
    parser.parse_punctuation("->")
    results = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
    return parser.resolve_operands(operands, types, pos), results


@irdl_op_definition
class RegionOp(IRDLOperation):
    """Composites of one backend compiled together; several results where several
    members' values are used outside. ``codegen`` and ``symbol`` are set by
    ``annotate-codegen``: the backend that compiles it and the external symbol's name."""

    name = "byoc.region"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    codegen = opt_prop_def(StringAttr)
    symbol = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[list(result_types)], regions=[body])

    def composites(self) -> list[CompositeOp]:
        return [op for op in self.body.block.ops if isinstance(op, CompositeOp)]

    @property
    def backend(self) -> str:
        """The backend of the region's composites."""
        return self.composites()[0].backend

    def verify_(self) -> None:
        _verify_body(self, self.inputs, list(self.outputs.types))
        members = self.composites()
        if not members:
            raise VerifyException("byoc.region: holds no byoc.composite")
        backends = sorted({c.backend for c in members})
        if len(backends) != 1:
            raise VerifyException(f"byoc.region: composites of several backends ({', '.join(backends)})")
        if self.codegen is not None and self.codegen.data != backends[0]:
            raise VerifyException(
                f"byoc.region: codegen '{self.codegen.data}' but its composites are '{backends[0]}' patterns"
            )
        for op in self.body.block.ops:
            if not isinstance(op, CompositeOp | YieldOp):
                raise VerifyException(f"byoc.region: may hold only byoc.composite ops, found '{op.name}'")

    def reference(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return evaluate_block(self.body.block, inputs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(") : ")
        _print_types(printer, list(self.inputs.types))
        printer.print_string(" -> ")
        _print_types(printer, list(self.outputs.types))
        printer.print_op_attributes({**self.attributes, **self.properties}, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> RegionOp:
        inputs, results = _parse_signature(parser)
        attr_dict = parser.parse_optional_attr_dict_with_keyword()
        attributes = dict(attr_dict.data) if attr_dict is not None else {}
        op = cls(inputs, results, parser.parse_region())
        for key in ("codegen", "symbol"):
            if key in attributes:
                op.properties[key] = attributes.pop(key)
        op.attributes |= attributes
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The results of a composite or region: ``byoc.yield %a, %b : t1, t2``"""

    name = "byoc.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(CompositeOp, RegionOp))
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


# ---------------------------------------------------------------------------
# compiled regions


# External modules alive in this process, so printed IR (#byoc.external<"sym">) parses back
# to the same module. Weak: the IR (or a compiled library) that uses a module keeps it alive.
_LIVE_MODULES: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def register_external(symbol: str, module: Any) -> str:
    """Make ``module`` findable by ``symbol`` (made unique in this process); returns the symbol."""
    unique, n = symbol, 1
    while unique in _LIVE_MODULES and _LIVE_MODULES[unique] is not module:
        unique, n = f"{symbol}_{n}", n + 1
    _LIVE_MODULES[unique] = module
    return unique


def live_external(symbol: str) -> Any | None:
    """The external module registered under ``symbol``, if one is alive."""
    return _LIVE_MODULES.get(symbol)


@irdl_attr_definition
class ExternalAttr(Data[Any]):
    """A compiled external module, by reference: ``#byoc.external<"blas_main_0">``.

    The data is an :class:`tensorkiln.byoc.external.ExternalModule`; equality is identity."""

    name = "byoc.external"

    @property
    def module(self) -> Any:
        return self.data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExternalAttr) and other.data is self.data

    def __hash__(self) -> int:
        return id(self.data)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Any:
        with parser.in_angle_brackets():
            symbol = parser.parse_str_literal()
        module = live_external(symbol)
        if module is None:
            parser.raise_error(
                f"external module '{symbol}' is not loaded in this process "
                "(external modules are held by reference; run run-codegen in this process)"
            )
        return module

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.data.symbol)


@irdl_op_definition
class CallOp(IRDLOperation):
    """Run a compiled external module on tensors (what ``run-codegen`` leaves)."""

    name = "byoc.call"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    module = prop_def(ExternalAttr)
    traits = traits_def(Pure())

    def __init__(self, module: Any, inputs: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[inputs], result_types=[list(result_types)], properties={"module": ExternalAttr(module)}
        )

    @property
    def external(self) -> Any:
        return self.module.data

    def verify_(self) -> None:
        ext = self.external
        for what, values, specs in (("inputs", self.inputs, ext.inputs), ("results", self.outputs, ext.outputs)):
            found = [(tuple(shape_of(v.type)), np.dtype(numpy_dtype(element_type(v.type))).str) for v in values]
            expected = [(tuple(s.shape), np.dtype(s.dtype).str) for s in specs]
            if found != expected:
                raise VerifyException(
                    f"byoc.call: {what} {found} do not match external module '{ext.symbol}': {expected}"
                )

    def reference(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(self.external.run(*inputs))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.module)
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(") : ")
        _print_types(printer, list(self.inputs.types))
        printer.print_string(" -> ")
        _print_types(printer, list(self.outputs.types))
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> CallOp:
        attr = parser.parse_attribute()
        if not isinstance(attr, ExternalAttr):
            parser.raise_error(f"byoc.call: expected #byoc.external<...>, got {attr}")
        inputs, results = _parse_signature(parser)
        op = cls(attr.data, inputs, results)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


BYOC = Dialect("byoc", [CompositeOp, RegionOp, YieldOp, CallOp], [ExternalAttr])

__all__ = ["BYOC", "CallOp", "CompositeOp", "ExternalAttr", "RegionOp", "YieldOp", "evaluate_block", "register_external"]

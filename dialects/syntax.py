"""Custom syntax shared by ops that access an element: ``%A[%i, %j] {attrs} : type``."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer


def print_access(
    printer: Printer, op: Operation, base: SSAValue, indices: Sequence[SSAValue], value: SSAValue | None = None
) -> None:
    """`` [%value,] %base[%i, %j] {attrs} : type(base)``"""
    printer.print_string(" ")
    if value is not None:
        printer.print_ssa_value(value)
        printer.print_string(", ")
    printer.print_ssa_value(base)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(base.type)


def parse_access(parser: Parser) -> tuple[SSAValue, list[SSAValue], dict[str, Attribute]]:
    """Parse ``%base[%i, %j] {attrs} : type``; returns the base, indices and attributes."""
    pos = parser.pos
    base = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    base_type = parser.parse_type()
    resolved = parser.resolve_operand(base, base_type)
    index_values = parser.resolve_operands(indices, [IndexType()] * len(indices), pos)
    return resolved, index_values, attributes


def print_isolated_region_op(printer: Printer, op: Operation, inputs: Sequence[SSAValue], result_type: Attribute) -> None:
    """`` (%a, %b) : (type, type) -> type attributes {...} { region }`` (te.compute, graph.fused)."""
    printer.print_string("(")
    printer.print_list(inputs, printer.print_ssa_value)
    printer.print_string(") : (")
    printer.print_list([v.type for v in inputs], printer.print_attribute)
    printer.print_string(") -> ")
    printer.print_attribute(result_type)
    printer.print_op_attributes(op.attributes, print_keyword=True)
    printer.print_string(" ")
    printer.print_region(op.regions[0], print_entry_block_args=True)


def parse_isolated_region_op(parser: Parser) -> tuple[list[SSAValue], Attribute, dict[str, Attribute], Region]:
    """Parse what :func:`print_isolated_region_op` prints: inputs, result type, attributes, region."""
    pos = parser.pos
    operands = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
    parser.parse_punctuation("->")
    result_type = parser.parse_type()
    attributes = parser.parse_optional_attr_dict_with_keyword()
    inputs = parser.resolve_operands(operands, types, pos)
    region = parser.parse_region()
    return inputs, result_type, (attributes.data if attributes is not None else {}), region

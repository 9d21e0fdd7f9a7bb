"""Custom syntax shared by ops that access an element: ``%A[%i, %j] {attrs} : type``."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, Operation, SSAValue
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

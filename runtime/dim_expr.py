"""Symbolic dimension expressions: a dim is a size, a symbol (``batch``, ``s0``), or an
arithmetic expression over symbols as torch.export writes them (``4*s0``, ``s0 + 1``,
``(s0//2)``, ``Max(1, s0)``, ``Mod(s0, 4)``, ``s0**2``).

Pure Python (the runtime evaluates output shapes with it). An expression's text is its
identity: two dims are the same when their texts are (torch prints its canonical
sympy form, so equal expressions from one export are spelled alike).

Example::

    evaluate("4*s0 + 1", {"s0": 3})   # 13
    free_symbols("(s0//2)*s1")        # {"s0", "s1"}
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping
from functools import lru_cache

#: binary operators an expression may use -> their integer meaning
BINARY: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}

#: functions an expression may call (sympy's spellings) -> the operator they fold with
FUNCTIONS: dict[str, str] = {"Max": "max", "Min": "min", "Mod": "%", "FloorDiv": "//"}

_FOLD: dict[str, Callable[[int, int], int]] = {
    "max": max, "min": min, "%": lambda a, b: a % b, "//": lambda a, b: a // b,
}  # fmt: skip


class DimExprError(ValueError):
    """A dim that is neither a symbol nor a supported expression."""


def is_symbol(dim: str) -> bool:
    """A plain symbol (bound directly by an input's size), not an expression."""
    return dim.isidentifier()


def _allowed(node: ast.AST) -> bool:
    if isinstance(node, ast.Name | ast.Load | ast.USub) or type(node) in BINARY:
        return True
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.BinOp):
        return type(node.op) in BINARY
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and bool(node.args) and not node.keywords
    return False


#: the largest constant power ``x**n`` spelled out as products (sympy writes ``s0**2``)
MAX_POWER = 8


class _PowersAsProducts(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        node = self.generic_visit(node)
        exponent = node.right
        if (
            isinstance(node.op, ast.Pow)
            and isinstance(exponent, ast.Constant)
            and type(exponent.value) is int
            and 1 <= exponent.value <= MAX_POWER
        ):
            product = node.left
            for _ in range(exponent.value - 1):
                product = ast.BinOp(product, ast.Mult(), node.left)
            return product
        return node


@lru_cache(maxsize=1024)
def parse(dim: str) -> ast.expr:
    """The checked syntax tree of ``dim`` (constant powers as products)."""
    try:
        tree = _PowersAsProducts().visit(ast.parse(dim.strip(), mode="eval")).body
    except SyntaxError:
        raise DimExprError(f"dim {dim!r} is not an expression over symbols") from None
    if not all(_allowed(node) for node in ast.walk(tree)):
        raise DimExprError(
            f"dim {dim!r}: only integers, symbols, + - * // % and {', '.join(FUNCTIONS)} are supported"
        )
    return tree


def free_symbols(dim: str) -> set[str]:
    """The symbols ``dim`` depends on."""
    functions = {n.func.id for n in ast.walk(parse(dim)) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(parse(dim)) if isinstance(n, ast.Name)} - functions


def evaluate(dim: str, symbols: Mapping[str, int]) -> int:
    """The value of ``dim`` given each symbol's value."""

    def value(node: ast.expr) -> int:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in symbols:
                raise DimExprError(f"dim {dim!r}: symbol {node.id!r} has no value")
            return symbols[node.id]
        if isinstance(node, ast.UnaryOp):
            return -value(node.operand)
        if isinstance(node, ast.BinOp):
            return BINARY[type(node.op)](value(node.left), value(node.right))
        assert isinstance(node, ast.Call)
        return functools.reduce(_FOLD[FUNCTIONS[node.func.id]], (value(a) for a in node.args))

    return value(parse(dim))


def lower(dim: str, symbol: Callable[[str], object], emit: Mapping[str, Callable[..., object]], constant: Callable[[int], object]) -> object:
    """``dim`` built by a code generator: ``symbol(name)`` gives a symbol's value,
    ``constant(k)`` an integer, ``emit[op](a, b)`` an operation (op: ``+ - * // % max min neg``)."""
    spelling = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}

    def build(node: ast.expr) -> object:
        if isinstance(node, ast.Constant):
            return constant(node.value)
        if isinstance(node, ast.Name):
            return symbol(node.id)
        if isinstance(node, ast.UnaryOp):
            return emit["neg"](build(node.operand))
        if isinstance(node, ast.BinOp):
            return emit[spelling[type(node.op)]](build(node.left), build(node.right))
        assert isinstance(node, ast.Call)
        return functools.reduce(emit[FUNCTIONS[node.func.id]], (build(a) for a in node.args))

    return build(parse(dim))


__all__ = ["DimExprError", "evaluate", "free_symbols", "is_symbol", "lower", "parse"]

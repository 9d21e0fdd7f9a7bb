"""Arithmetic on dims in one canonical spelling, so that equal dims are equal text.

A dim is an int or the text of an expression over symbols (``dim_expr.py``). Ops whose
result size is computed from a symbolic dim (a slice ``x[:, 1:]`` of ``(2, s0)``, a
pad, a concat, a strided window) build their result dims with :func:`add`, :func:`sub`,
:func:`mul` and :func:`floordiv`, and the torch importer spells torch's dims through
:func:`canonical` too: ``s0 - 1`` from either is the same string, ``s0 + s1 - s1`` is
``s0``, and a constant result is an int.

The normal form is a polynomial: a sum of integer multiples of monomials, each a
product of atoms -- symbols, and the expressions that are not polynomials
(``(s0//2)``, ``Mod(s0, 4)``, ``Max(1, s0)``, spelled canonically inside). Terms print
in the order of their monomials' text, the constant last (``2*s0 + s1 - 3``), as
torch's sympy spells the common cases.

Example::

    canonical("1 + s0 - 1")        # "s0"
    sub(add("s0", 5), "s0")        # 5
    floordiv(sub("s0", 2), 2)      # "(s0//2) - 1"
    solve("2*s0 + 1", 9)           # {"s0": 4}
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping

from .dim_expr import FUNCTIONS, parse

Dim = int | str
#: monomial (sorted atom texts; () for the constant term) -> its integer coefficient
Poly = dict[tuple[str, ...], int]


def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for monomial, c in b.items():
        out[monomial] = out.get(monomial, 0) + sign * c
    return {m: c for m, c in out.items() if c}


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            monomial = tuple(sorted(ma + mb))
            out[monomial] = out.get(monomial, 0) + ca * cb
    return {m: c for m, c in out.items() if c}


def _constant(p: Poly) -> int | None:
    return p.get((), 0) if all(m == () for m in p) else None


def _atom(text: str) -> Poly:
    return {(text,): 1}


def _print(p: Poly) -> str:
    terms = sorted((m, c) for m, c in p.items() if m)
    text = ""
    for monomial, c in terms + ([((), p[()])] if p.get(()) else []):
        body = "*".join(monomial)
        magnitude = abs(c)
        term = str(magnitude) if not body else body if magnitude == 1 else f"{magnitude}*{body}"
        if not text:
            text = term if c > 0 else f"-{term}"
        else:
            text += f" + {term}" if c > 0 else f" - {term}"
    return text or "0"


def _operand(p: Poly) -> str:
    """``p`` as the left operand of ``//`` (parenthesized when it has several terms)."""
    text = _print(p)
    return f"({text})" if len(p) > 1 or text.startswith("-") else text


def _floordiv(a: Poly, b: Poly) -> Poly:
    ka, kb = _constant(a), _constant(b)
    if kb == 0:
        raise ZeroDivisionError("dim expression divides by zero")
    if ka is not None and kb is not None:
        return {(): ka // kb} if ka // kb else {}
    if kb is not None and kb > 0:
        # terms with coefficients divisible by k come out whole (dims are integers):
        # (4*s0 + 2)//2 = 2*s0 + 1, (s0 - 2)//2 + 1 = (s0//2); the constant left is in [0, k)
        whole = {m: c // kb for m, c in a.items() if c % kb == 0 and m}
        rest = {m: c for m, c in a.items() if c % kb and m}
        constant = a.get((), 0)
        if constant:
            whole[()] = constant // kb
        if constant % kb:
            rest[()] = constant % kb
        if not rest or _constant(rest) is not None:
            return {m: c for m, c in whole.items() if c}
        nested = _nested_floordiv(rest)
        if nested is not None:  # (X//j + r)//k = (X + r*j)//(j*k)
            inner, j = nested
            return _add(whole, _floordiv(_add(inner, {(): rest.get((), 0) * j}), {(): j * kb}))
        return _add(whole, _atom(f"({_operand(rest)}//{kb})"))
    quotient = _exact_quotient(a, b)
    if quotient is not None:
        return quotient
    return _atom(f"({_operand(a)}//{_operand(b)})")


def _exact_quotient(a: Poly, b: Poly) -> Poly | None:
    """``a / b`` when ``b`` is one monomial (``k*s0``) dividing every term of ``a``
    (``(s0*s0 + 2*s0)//s0`` is ``s0 + 2``: an exact quotient), else None."""
    if len(b) != 1:
        return None
    ((divisor, k),) = b.items()
    if not divisor:
        return None
    out: Poly = {}
    for monomial, c in a.items():
        rest = list(monomial)
        for atom in divisor:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % k:
            return None
        out[tuple(rest)] = c // k
    return out


def _nested_floordiv(p: Poly) -> tuple[Poly, int] | None:
    """``(X, j)`` when ``p`` is ``(X//j) + r`` (one atom, coefficient 1, r constant)."""
    atoms = [m for m in p if m]
    if len(atoms) != 1 or len(atoms[0]) != 1 or p[atoms[0]] != 1:
        return None
    node = parse(atoms[0][0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and isinstance(node.right, ast.Constant):
        return _poly(node.left), node.right.value
    return None


def _call(name: str, args: list[Poly]) -> Poly:
    constants = [_constant(a) for a in args]
    if all(k is not None for k in constants):
        value = functools.reduce(
            {"max": max, "min": min, "%": lambda x, y: x % y, "//": lambda x, y: x // y}[FUNCTIONS[name]], constants
        )
        return {(): value} if value else {}
    if FUNCTIONS[name] == "//":
        return functools.reduce(_floordiv, args)
    if FUNCTIONS[name] == "%" and len(args) == 2 and (_constant(args[1]) or 0) > 0:
        # x mod k = x - k*(x//k) (k > 0): Mamba2's chunk padding s + Mod(8 - Mod(s, 8), 8)
        # then simplifies to -8*((-s)//8), as its multiples and quotients do
        x, k = args[0], _constant(args[1])
        return _add(x, _mul({(): -k}, _floordiv(x, {(): k})))
    texts = [_print(a) for a in args]
    if name in ("Max", "Min"):
        texts = sorted(set(texts))
        if len(texts) == 1:
            return args[0]
    return _atom(f"{name}({', '.join(texts)})")


def _poly(node: ast.expr) -> Poly:
    if isinstance(node, ast.Constant):
        return {(): node.value} if node.value else {}
    if isinstance(node, ast.Name):
        return _atom(node.id)
    if isinstance(node, ast.UnaryOp):
        return {m: -c for m, c in _poly(node.operand).items()}
    if isinstance(node, ast.BinOp):
        a, b = _poly(node.left), _poly(node.right)
        if isinstance(node.op, ast.Add):
            return _add(a, b)
        if isinstance(node.op, ast.Sub):
            return _add(a, b, -1)
        if isinstance(node.op, ast.Mult):
            return _mul(a, b)
        if isinstance(node.op, ast.FloorDiv):
            return _floordiv(a, b)
        return _call("Mod", [a, b])
    assert isinstance(node, ast.Call)
    return _call(node.func.id, [_poly(a) for a in node.args])


@functools.lru_cache(maxsize=4096)
def canonical(dim: Dim) -> Dim:
    """``dim`` in the canonical spelling (an int when it is a constant)."""
    if isinstance(dim, int):
        return dim
    p = _poly(parse(dim))
    k = _constant(p)
    return k if k is not None else _print(p)


def _text(dim: Dim) -> str:
    return f"({dim})"


def add(a: Dim, b: Dim) -> Dim:
    """``a + b``, canonical."""
    return canonical(f"{_text(a)} + {_text(b)}")


def sub(a: Dim, b: Dim) -> Dim:
    """``a - b``, canonical."""
    return canonical(f"{_text(a)} - {_text(b)}")


def mul(a: Dim, b: Dim) -> Dim:
    """``a * b``, canonical."""
    return canonical(f"{_text(a)} * {_text(b)}")


def product(dims: Iterable[Dim]) -> Dim:
    """The product of ``dims`` (a shape's element count), canonical; 1 for none."""
    return functools.reduce(mul, dims, 1)


def floordiv(a: Dim, b: int) -> Dim:
    """``a // b`` (floor, b > 0), canonical: exact divisions fold (``(2*s0)//2`` is ``s0``)."""
    return canonical(f"{_text(a)} // {b}")


def ceildiv(a: Dim, b: int) -> Dim:
    """``ceil(a / b)`` for b > 0, as ``(a + b - 1)//b``."""
    return floordiv(add(a, b - 1), b)


def linear_symbol(dim: Dim) -> str | None:
    """The symbol ``s`` when ``dim`` is ``a*s + b`` (one symbol, a != 0), else None."""
    if isinstance(dim, int):
        return None
    terms = [m for m in _poly(parse(dim)) if m]
    if len(terms) != 1 or len(terms[0]) != 1 or not terms[0][0].isidentifier():
        return None
    return terms[0][0]


def solve(dim: str, value: int) -> Mapping[str, int] | None:
    """The symbol's value that makes ``dim`` (``a*s + b``, one symbol, a != 0) equal
    ``value``; None when ``dim`` is not of that form or no integer solves it."""
    symbol = linear_symbol(dim)
    if symbol is None:
        return None
    p = _poly(parse(dim))
    a, b = p[(symbol,)], p.get((), 0)
    if (value - b) % a:
        return None
    return {symbol: (value - b) // a}


__all__ = ["add", "canonical", "ceildiv", "floordiv", "linear_symbol", "mul", "product", "solve", "sub"]

"""Matrix products: MatMul (numpy's matmul), Gemm, Einsum."""

from __future__ import annotations

import re
import string

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter
from .shape import product


def matmul(ctx: OnnxContext, a: SSAValue, b: SSAValue) -> SSAValue:
    """numpy's ``matmul``: 1-d operands are a row / a column (dropped from the result),
    leading dims broadcast."""
    g = ctx.b
    a_vector, b_vector = ctx.rank(a) == 1, ctx.rank(b) == 1
    if a_vector:
        a = g.reshape(a, (1, *ctx.shape(a)))
    if b_vector:
        b = g.reshape(b, (*ctx.shape(b), 1))
    rank = max(ctx.rank(a), ctx.rank(b))
    if rank == 2:
        result = g.matmul(a, b)
    else:
        a = g.reshape(a, (*[1] * (rank - ctx.rank(a)), *ctx.shape(a))) if ctx.rank(a) < rank else a
        b = g.reshape(b, (*[1] * (rank - ctx.rank(b)), *ctx.shape(b))) if ctx.rank(b) < rank else b
        result = g.batch_matmul(a, b)
    shape = list(ctx.shape(result))
    if b_vector:
        shape.pop(-1)
    if a_vector:
        shape.pop(-1 if b_vector else -2)
    return g.reshape(result, shape) if len(shape) != ctx.rank(result) else result


@converter("MatMul")
def matmul_(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return matmul(ctx, node.input(0), node.input(1))


@converter("Gemm")
def gemm(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    a, b, c = node.input(0), node.input(1), node.input(2)
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    trans_a, trans_b = node.attr("transA", 0), node.attr("transB", 0)
    if trans_a:
        a = g.transpose(a, [1, 0])
    n = ctx.shape(b)[0 if trans_b else 1]
    if alpha == 1.0 and (c is None or beta == 1.0 and ctx.shape(c) in ((n,), (1, n))) and ctx.is_float(a):
        # a linear layer: (M, K) x (N, K)^T + bias (N,)
        weight = b if trans_b else g.transpose(b, [1, 0])
        bias = g.reshape(c, (n,)) if c is not None and ctx.shape(c) != (n,) else c
        return g.dense(a, weight, bias)
    if trans_b:
        b = g.transpose(b, [1, 0])
    y = g.matmul(a, b)
    if alpha != 1.0:
        y = g.mul(y, ctx.scalar(alpha, y))
    if c is not None and beta != 0.0:
        y = g.add(y, c if beta == 1.0 else g.mul(c, ctx.scalar(beta, c)))
    return y


# ---------------------------------------------------------------------------
# Einsum


def _parse_einsum(equation: str, ranks: list[int], node: OnnxNode) -> tuple[list[str], str]:
    """The operands' index letters and the output's, with ``...`` spelled out as capital
    letters (unused by ONNX's lowercase indices) and an implicit output made explicit."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise OnnxImportError(f"node '{node.name}' (Einsum): equation '{equation}' has {len(terms)} operands, given {len(ranks)}")
    ellipsis_rank = max((rank - len(t.replace("...", "")) for t, rank in zip(terms, ranks) if "..." in t), default=0)
    spare = string.ascii_uppercase[:ellipsis_rank]

    def spelled(term: str, rank: int | None) -> str:
        if "..." not in term:
            return term
        width = (rank - len(term.replace("...", ""))) if rank is not None else ellipsis_rank
        return term.replace("...", spare[ellipsis_rank - width :])

    operands = [spelled(t, r) for t, r in zip(terms, ranks)]
    for term, rank in zip(operands, ranks):
        if len(term) != rank or not re.fullmatch(r"[A-Za-z]*", term):
            raise OnnxImportError(f"node '{node.name}' (Einsum): term '{term}' does not match an operand of rank {rank}")
    if arrow:
        output = spelled(rhs, None)
    else:  # implicit: the broadcast dims, then the letters that appear once, sorted
        counts = "".join(operands)
        output = spare + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c.islower()))
    return operands, output


def _diagonal(ctx: OnnxContext, x: SSAValue, term: str) -> tuple[SSAValue, str]:
    """A term with a repeated letter (``ii``) reduced to its diagonal (one ``i``)."""
    g = ctx.b
    while len(set(term)) < len(term):
        letter = next(c for c in term if term.count(c) > 1)
        first, second = term.index(letter), term.index(letter, term.index(letter) + 1)
        size = ctx.shape(x)[first]
        if not isinstance(size, int):
            raise refuse("a diagonal over a symbolic axis")
        keep = np.eye(size, dtype=np.bool_).reshape([size if a in (first, second) else 1 for a in range(len(term))])
        x = g.reduce_sum(g.where(ctx.constant(keep), x, ctx.scalar(0, x)), [second])
        term = term[:second] + term[second + 1 :]
    return x, term


def _sum_out(ctx: OnnxContext, x: SSAValue, term: str, keep: str) -> tuple[SSAValue, str]:
    """Sum the axes of letters not in ``keep``."""
    axes = [k for k, c in enumerate(term) if c not in keep]
    if not axes:
        return x, term
    return ctx.b.reduce_sum(x, axes), "".join(c for c in term if c in keep)


def _permuted(ctx: OnnxContext, x: SSAValue, term: str, order: str) -> SSAValue:
    perm = [term.index(c) for c in order]
    return x if perm == sorted(perm) else ctx.b.transpose(x, perm)


def _contract(ctx: OnnxContext, a: SSAValue, ta: str, b: SSAValue, tb: str, keep: str) -> tuple[SSAValue, str]:
    """``a`` and ``b`` multiplied, letters not in ``keep`` summed: a batched matmul over
    (batch: in both and kept, M: a's kept, K: in both and summed, N: b's kept)."""
    g = ctx.b
    a, ta = _sum_out(ctx, a, ta, keep + tb)
    b, tb = _sum_out(ctx, b, tb, keep + ta)
    batch = "".join(c for c in ta if c in tb and c in keep)
    summed = "".join(c for c in ta if c in tb and c not in keep)
    m = "".join(c for c in ta if c not in tb)
    n = "".join(c for c in tb if c not in ta)
    size = {**dict(zip(ta, ctx.shape(a))), **dict(zip(tb, ctx.shape(b)))}
    # broadcast dims of size 1 against the other operand's size
    for c in batch + summed:
        sa, sb = ctx.shape(a)[ta.index(c)], ctx.shape(b)[tb.index(c)]
        size[c] = sb if sa == 1 else sa
    a3 = g.reshape(_permuted(ctx, a, ta, batch + m + summed), (*[ctx.shape(a)[ta.index(c)] for c in batch], product([size[c] for c in m]), product([ctx.shape(a)[ta.index(c)] for c in summed])))
    b3 = g.reshape(_permuted(ctx, b, tb, batch + summed + n), (*[ctx.shape(b)[tb.index(c)] for c in batch], product([ctx.shape(b)[tb.index(c)] for c in summed]), product([size[c] for c in n])))
    if summed and any(ctx.shape(a)[ta.index(c)] != ctx.shape(b)[tb.index(c)] for c in summed):
        a3 = g.broadcast_to(a3, (*ctx.shape(a3)[:-1], product([size[c] for c in summed])))
        b3 = g.broadcast_to(b3, (*ctx.shape(b3)[:-2], product([size[c] for c in summed]), ctx.shape(b3)[-1]))
    if not batch:
        a3, b3 = g.reshape(a3, (1, *ctx.shape(a3))), g.reshape(b3, (1, *ctx.shape(b3)))
    product_ = g.batch_matmul(a3, b3)
    result = g.reshape(product_, [size[c] for c in batch + m + n])
    return result, batch + m + n


@converter("Einsum", since=12)
def einsum(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    values = node.inputs()
    terms, output = _parse_einsum(node.attr("equation"), [ctx.rank(v) for v in values], node)
    operands = [_diagonal(ctx, v, t) for v, t in zip(values, terms)]
    x, term = operands[0]
    for k, (y, other) in enumerate(operands[1:], start=1):
        later = "".join(t for _, t in operands[k + 1 :])
        x, term = _contract(ctx, x, term, y, other, output + later)
    x, term = _sum_out(ctx, x, term, output)
    return _permuted(ctx, x, term, output)

"""``torch.linalg.matrix_exp`` (``matrix_exp``) of a batch of square matrices: Higham's
scaling and squaring with the [13/13] Padé approximant (Higham 2005, "The scaling and
squaring method for the matrix exponential revisited"), made of graph ops:

    s = clamp(ceil(log2(|a|_1 / theta_13)), 0, MAX_SQUARINGS)      per matrix
    b = a / 2^s;  r = (V - U)^-1 (V + U)                          U, V: odd and even parts of the Padé numerator
    r <- r @ r, s times                                           graph.repeated_squaring: one kernel
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter
from .decompositions import batched_matmul, matrix_size

#: the Padé [13/13] coefficients and the 1-norm up to which it is accurate in float64
PADE_13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
    10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
THETA_13 = 5.371920351148152

def _scaled(ctx: ImportContext, a: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(the number of squarings ``s`` per matrix, as a float ``(..., 1, 1)``, and ``a / 2^s``);
    a NaN norm (a NaN input) gives NaN, which ``repeated_squaring`` counts as 0."""
    b = ctx.b
    norm = b.reduce_max(b.reduce_sum(b.abs(a), [-2], keepdims=True), [-1], keepdims=True)  # max column sum
    s = b.ceil(b.log2(b.div(norm, ctx.scalar(THETA_13, norm))))
    s = b.max(s, ctx.scalar(0.0, s))
    return s, b.mul(a, b.exp2(b.neg(s)))


def _pade_13(ctx: ImportContext, a: SSAValue) -> SSAValue:
    """``(V - U)^-1 (V + U)``, the [13/13] Padé approximant of ``exp(a)``."""
    b, c = ctx.b, PADE_13
    n, _ = matrix_size(a)
    dtype = numpy_dtype(a.type.element_type)
    eye = ctx.constant(np.eye(n, dtype=dtype))
    a2 = batched_matmul(ctx, a, a)
    a4 = batched_matmul(ctx, a2, a2)
    a6 = batched_matmul(ctx, a4, a2)

    def combination(*terms: tuple[float, SSAValue]) -> SSAValue:
        total = None
        for coefficient, m in terms:
            term = b.mul(m, ctx.scalar(coefficient, m))
            total = term if total is None else b.add(total, term)
        return total

    u_inner = batched_matmul(ctx, a6, combination((c[13], a6), (c[11], a4), (c[9], a2)))
    u = batched_matmul(ctx, a, b.add(u_inner, combination((c[7], a6), (c[5], a4), (c[3], a2), (c[1], eye))))
    v_inner = batched_matmul(ctx, a6, combination((c[12], a6), (c[10], a4), (c[8], a2)))
    v = b.add(v_inner, combination((c[6], a6), (c[4], a4), (c[2], a2), (c[0], eye)))
    batch = shape_of(a.type)[:-2]
    denominator = b.broadcast_to(b.sub(v, u), (*batch, n, n))
    return b.solve(denominator, b.broadcast_to(b.add(v, u), (*batch, n, n)))


@converter("aten.linalg_matrix_exp.default", "aten.matrix_exp.default")
def linalg_matrix_exp(ctx: ImportContext, node, a):
    n, m = matrix_size(a)
    if n != m:
        raise ValueError(f"matrix_exp needs square matrices, got shape {shape_of(a.type)}")
    if n == 0:
        return a
    s, scaled = _scaled(ctx, a)
    return ctx.b.repeated_squaring(_pade_13(ctx, scaled), ctx.b.reshape(s, shape_of(s.type)[:-2]))

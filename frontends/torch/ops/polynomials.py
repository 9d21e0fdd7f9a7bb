"""``torch.special``'s orthogonal polynomials (``chebyshev_polynomial_t`` ... ``_w``, their
shifted forms, ``hermite_polynomial_h``/``_he``, ``laguerre_polynomial_l``,
``legendre_polynomial_p``): one ``graph.orthogonal_polynomial`` each, ``x`` and the degree
``n`` in the result's float type (integer inputs promote to float32 as torch's; a Python
number as a constant), broadcast together."""

from __future__ import annotations

from ....dialects.graph.polynomials import POLYNOMIALS
from ..context import ImportContext
from ..registry import converter
from .elementwise import _operand


def _polynomial(kind: str):
    def convert(ctx: ImportContext, node, x, n):
        x, n = _operand(ctx, node, x, n), _operand(ctx, node, n, x)
        return ctx.cast(ctx.b.orthogonal_polynomial(x, n, kind), ctx.dtype(node))

    convert.__name__ = convert.__qualname__ = kind
    convert.__doc__ = f"``torch.special.{kind}(x, n)``."
    return convert


for _kind in POLYNOMIALS:
    converter(*(f"aten.special_{_kind}.{overload}" for overload in ("default", "x_scalar", "n_scalar")))(_polynomial(_kind))

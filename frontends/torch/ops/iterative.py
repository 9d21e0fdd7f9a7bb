"""``torch.special``'s functions computed by iteration per element: the orthogonal polynomials
(``chebyshev_polynomial_t`` ... ``_w``, their shifted forms, ``hermite_polynomial_h``/``_he``,
``laguerre_polynomial_l``, ``legendre_polynomial_p``; ``graph.orthogonal_polynomial``) and the
regularized incomplete gamma functions (``gammainc``/``gammaincc``: ``aten.igamma``/``igammac``;
``graph.incomplete_gamma``). Both operands in the result's float type (integer inputs promote
as torch's; a Python number as a constant), broadcast together."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from ....dialects.graph.polynomials import POLYNOMIALS
from ..context import ImportContext
from ..registry import converter
from .elementwise import _operand


def _binary(name: str, build: Callable[[ImportContext, SSAValue, SSAValue], SSAValue]):
    def convert(ctx: ImportContext, node, x, y):
        x, y = _operand(ctx, node, x, y), _operand(ctx, node, y, x)
        return ctx.cast(build(ctx, x, y), ctx.dtype(node))

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = f"``torch.special.{name}``."
    return convert


for _kind in POLYNOMIALS:
    converter(*(f"aten.special_{_kind}.{overload}" for overload in ("default", "x_scalar", "n_scalar")))(
        _binary(_kind, lambda ctx, x, n, kind=_kind: ctx.b.orthogonal_polynomial(x, n, kind))
    )
converter("aten.igamma.default")(_binary("gammainc", lambda ctx, a, x: ctx.b.incomplete_gamma(a, x, "lower")))
converter("aten.igammac.default")(_binary("gammaincc", lambda ctx, a, x: ctx.b.incomplete_gamma(a, x, "upper")))

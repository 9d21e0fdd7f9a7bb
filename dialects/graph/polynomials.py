"""Orthogonal polynomials of a per-element degree: ``P_n(x)`` for the Chebyshev polynomials
of the four kinds (``T, U, V, W``) and their shifted forms on ``[0, 1]``, the physicists'
and probabilists' Hermite polynomials, Laguerre's and Legendre's -- ``torch.special``'s
``*_polynomial_*`` ops, whose algorithms (ATen/native/Math.h) these definitions follow
step for step: the same special values, closed forms and three-term recurrence.

The degree is a tensor, so the number of recurrence steps differs from element to
element: each op is one ``te.dense_linalg`` kernel (routine ``orthogonal_polynomial``)
running the recurrence per element in a serial loop (``lowering/dense_linalg/recurrences.py``);
a ``te.compute`` has no loop carrying state.

Each polynomial is defined once, as functions over an arithmetic ``m``
(``iterative.py``: numpy's for the reference, the kernel's scalar code in the lowering)::

    %p = graph.orthogonal_polynomial %x, %n {kind = "legendre_polynomial_p"} : tensor<7xf32>, tensor<f32> -> tensor<7xf32>

Semantics shared by all (torch's): the degree is truncated to an integer; a NaN, infinite
or out-of-``int64`` degree counts as negative; a negative degree gives 0; degree 0 gives
1; the Hermite polynomials are NaN above degree 128 (float32) or 512 (float64). Where torch
leaves a value undefined (a NaN ``x`` whose loop never runs returns an uninitialized
variable) the result is NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from xdsl.irdl import irdl_op_definition

from .iterative import Arithmetic, IterativeOp, Value, any_of, even, first_case

#: ``P_{k+1}`` from ``x``, ``k`` (a float) and ``p = P_{k-1}``, ``q = P_k``
Step = Callable[[Value, Value, Value, Value], Value]
#: torch's early returns between "negative degree" and "degree 0", in order: ``(condition, value)``
Cases = Callable[[Arithmetic, Value, Value], Sequence[tuple[Value, Value | float]]]


def _no_cases(m: Arithmetic, x: Value, n: Value) -> Sequence[tuple[Value, Value | float]]:
    return ()


@dataclass(frozen=True)
class Polynomial:
    """One family: ``P_0 = 1``, ``P_1 = first(x)``, ``P_{k+1} = step(x, k, P_{k-1}, P_k)``,
    after torch's special values (``special``) and, for the Hermite polynomials, a largest
    degree per dtype above which the result is NaN."""

    first: Callable[[Value], Value]
    step: Step
    special: Cases = _no_cases
    max_degree: dict[np.dtype, int] = field(default_factory=dict)


def degree(m: Arithmetic, n: Value) -> Value:
    """``n`` truncated toward zero; -1 where it is NaN, infinite or outside int64 (C++'s
    conversion gives INT64_MIN there)."""
    return m.where(abs(n) < 2.0**63, m.trunc(n), -1.0)


def evaluate(polynomial: Polynomial, m: Arithmetic, x: Value, n: Value) -> Value:
    """``P_n(x)`` elementwise in the arithmetic ``m`` (torch's order of cases): the
    recurrence ``p, q = q, step(x, k, p, q)`` from ``p = 1, q = P_1`` runs ``n - 1`` steps
    where no case applies, and stops once ``q`` is NaN, as torch's loop does."""
    n = degree(m, n)
    first = polynomial.first(x)
    cases = [(n < 0.0, 0.0), *polynomial.special(m, x, n), (n == 0.0, 1.0), (n == 1.0, first)]
    if polynomial.max_degree:
        cases.append((n > float(polynomial.max_degree[m.dtype]), float("nan")))
    trips = m.where(any_of([condition for condition, _ in cases]), 0.0, n - 1.0)
    _, q = m.iterate(
        (1.0, first), lambda k, p, q: (q, polynomial.step(x, k, p, q)), trips,
        lambda p, q: m.isnan(q), most=2**63, settled=True,
    )  # fmt: skip
    return first_case(m, cases, q)


# ---------------------------------------------------------------------------
# the families


def _sign_by_parity(m: Arithmetic, n: Value, magnitude: Value | float) -> Value:
    """``magnitude`` for even ``n``, ``-magnitude`` for odd."""
    return m.where(even(m, n), magnitude, -magnitude)


def _chebyshev_step(x: Value, k: Value, p: Value, q: Value) -> Value:
    return (x + x) * q - p


def _shifted(x: Value) -> Value:
    return x + x - 1.0


def _t_closed(m: Arithmetic, y: Value, n: Value) -> Value:
    return m.cos(n * m.acos(y))


def _u_closed(m: Arithmetic, y: Value, n: Value) -> Value:
    theta = m.acos(y)
    return m.where(m.sin(theta) != 0.0, m.sin((n + 1.0) * theta) / m.sin(theta), (n + 1.0) * m.cos((n + 1.0) * theta) / y)


def _v_closed(m: Arithmetic, y: Value, n: Value, at_pi: Value) -> Value:
    theta = m.acos(y)
    return m.where(m.sin(theta / 2.0) != 1.0, m.cos((n + 0.5) * theta) / m.cos(theta / 2.0), at_pi)


def _w_closed(m: Arithmetic, y: Value, n: Value, at_zero: Value) -> Value:
    theta = m.acos(y)
    return m.where(m.cos(theta / 2.0) != 1.0, m.sin((n + 0.5) * theta) / m.sin(theta / 2.0), at_zero)


def _chebyshev_t_cases(m: Arithmetic, x: Value, n: Value):
    return [
        (abs(x) == 1.0, m.where((x > 0.0) | even(m, n), 1.0, -1.0)),
        ((n > 6.0) & (abs(x) < 1.0), _t_closed(m, x, n)),
    ]


def _chebyshev_u_cases(m: Arithmetic, x: Value, n: Value):
    return [
        (abs(x) == 1.0, m.where((x > 0.0) | even(m, n), n + 1.0, -(n + 1.0))),
        ((n > 8.0) & (abs(x) < 1.0), _u_closed(m, x, n)),
    ]


def _chebyshev_v_cases(m: Arithmetic, x: Value, n: Value):
    at_minus_one = _sign_by_parity(m, n, n + n + 1.0)
    return [
        (abs(x) == 1.0, m.where(x > 0.0, 1.0, at_minus_one)),
        ((n > 8.0) & (abs(x) < 1.0), _v_closed(m, x, n, at_minus_one)),
    ]


def _chebyshev_w_cases(m: Arithmetic, x: Value, n: Value):
    at_one = m.where(x > 0.0, n + n + 1.0, _sign_by_parity(m, n, 1.0))
    return [(abs(x) == 1.0, at_one), ((n > 8.0) & (abs(x) < 1.0), _w_closed(m, x, n, at_one))]


def _shifted_t_cases(m: Arithmetic, x: Value, n: Value):
    y = _shifted(x)
    return [
        (x == 1.0, 1.0),
        (x == 0.0, _sign_by_parity(m, n, 1.0)),
        ((n > 6.0) & (abs(y) < 1.0), _t_closed(m, y, n)),
    ]


def _shifted_u_cases(m: Arithmetic, x: Value, n: Value):
    y = _shifted(x)
    return [
        (x == 1.0, n + 1.0),
        (x == 0.0, _sign_by_parity(m, n, n + 1.0)),
        ((n > 6.0) & (abs(y) < 1.0), _u_closed(m, y, n)),
    ]


def _shifted_v_cases(m: Arithmetic, x: Value, n: Value):
    y = _shifted(x)
    at_zero = _sign_by_parity(m, n, n + n + 1.0)
    return [(x == 1.0, 1.0), (x == 0.0, at_zero), ((n > 6.0) & (abs(y) < 1.0), _v_closed(m, y, n, at_zero))]


def _shifted_w_cases(m: Arithmetic, x: Value, n: Value):
    y = _shifted(x)
    at_zero = _sign_by_parity(m, n, 1.0)
    return [(x == 1.0, n + n + 1.0), (x == 0.0, at_zero), ((n > 4.0) & (abs(y) < 1.0), _w_closed(m, y, n, at_zero))]


def _legendre_cases(m: Arithmetic, x: Value, n: Value):
    return [(abs(x) == 1.0, m.where((x > 0.0) | even(m, n), 1.0, -1.0))]


def _laguerre_cases(m: Arithmetic, x: Value, n: Value):
    return [(abs(x) == 0.0, 1.0)]


_HERMITE_LIMITS = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}


#: torch's name (``torch.special.<name>``) -> the family
POLYNOMIALS: dict[str, Polynomial] = {
    "chebyshev_polynomial_t": Polynomial(lambda x: x, _chebyshev_step, _chebyshev_t_cases),
    "chebyshev_polynomial_u": Polynomial(lambda x: x + x, _chebyshev_step, _chebyshev_u_cases),
    "chebyshev_polynomial_v": Polynomial(lambda x: x + x - 1.0, _chebyshev_step, _chebyshev_v_cases),
    "chebyshev_polynomial_w": Polynomial(lambda x: x + x + 1.0, _chebyshev_step, _chebyshev_w_cases),
    "shifted_chebyshev_polynomial_t": Polynomial(
        _shifted, lambda x, k, p, q: _chebyshev_step(_shifted(x), k, p, q), _shifted_t_cases
    ),
    "shifted_chebyshev_polynomial_u": Polynomial(
        lambda x: _shifted(x) + _shifted(x), lambda x, k, p, q: _chebyshev_step(_shifted(x), k, p, q), _shifted_u_cases
    ),
    "shifted_chebyshev_polynomial_v": Polynomial(
        lambda x: _shifted(x) + _shifted(x) - 1.0,
        lambda x, k, p, q: _chebyshev_step(_shifted(x), k, p, q),
        _shifted_v_cases,
    ),
    "shifted_chebyshev_polynomial_w": Polynomial(
        lambda x: _shifted(x) + _shifted(x) + 1.0,
        lambda x, k, p, q: _chebyshev_step(_shifted(x), k, p, q),
        _shifted_w_cases,
    ),
    "hermite_polynomial_h": Polynomial(
        lambda x: x + x, lambda x, k, p, q: (x + x) * q - (k + k) * p, max_degree=_HERMITE_LIMITS
    ),
    "hermite_polynomial_he": Polynomial(lambda x: x, lambda x, k, p, q: x * q - k * p, max_degree=_HERMITE_LIMITS),
    "laguerre_polynomial_l": Polynomial(
        lambda x: 1.0 - x, lambda x, k, p, q: ((k + k + (1.0 - x)) * q - k * p) / (k + 1.0), _laguerre_cases
    ),
    "legendre_polynomial_p": Polynomial(
        lambda x: x, lambda x, k, p, q: ((k + k + 1.0) * x * q - k * p) / (k + 1.0), _legendre_cases
    ),
}


@irdl_op_definition
class OrthogonalPolynomialOp(IterativeOp):
    """``P_n(x)`` of the family ``kind`` (a key of :data:`POLYNOMIALS`) for each ``x`` and
    degree ``n`` (a float tensor, truncated), broadcast together; float element types.

    Example: ``%p = graph.orthogonal_polynomial %x, %n {kind = "hermite_polynomial_h"} : tensor<5xf64>, tensor<5xf64> -> tensor<5xf64>``
    """

    name = "graph.orthogonal_polynomial"
    KINDS: ClassVar[Sequence[str]] = tuple(POLYNOMIALS)
    KIND_NOUN: ClassVar[str] = "polynomial"

    @classmethod
    def evaluate(cls, kind: str, m: Arithmetic, x: Value, n: Value) -> Value:
        return evaluate(POLYNOMIALS[kind], m, x, n)


__all__ = ["OrthogonalPolynomialOp", "POLYNOMIALS", "Polynomial", "evaluate"]

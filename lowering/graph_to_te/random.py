"""TE rule of ``graph.random``: the counter-based generator of ``dialects/graph/random.py``
written as 64-bit integer arithmetic on each element's indices (it vectorizes: no state
is carried from one element to the next)."""

from __future__ import annotations

import math as math_module
from collections.abc import Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import f32, i64
from xdsl.ir import SSAValue

from ...dialects.graph import random as rnd
from ..te_builder import Scalar, TEBuilder
from .registry import compute_rule


def _signed(value: int) -> int:
    """A 64-bit pattern as the signed constant LLVM stores."""
    value &= rnd.MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def _const(s: Scalar, value: int) -> SSAValue:
    return s.const(_signed(value), i64)


def _shift_xor(s: Scalar, z: SSAValue, amount: int) -> SSAValue:
    return s.math(arith.XOrIOp, z, s.math(arith.ShRUIOp, z, _const(s, amount)))


def _mix64(s: Scalar, z: SSAValue) -> SSAValue:
    (a, b), (s0, s1, s2) = rnd.MIX_MULTIPLIERS, rnd.MIX_SHIFTS
    z = s.mul(_shift_xor(s, z, s0), _const(s, a))
    z = s.mul(_shift_xor(s, z, s1), _const(s, b))
    return _shift_xor(s, z, s2)


def _counter(s: Scalar, indices: Sequence[SSAValue]) -> SSAValue:
    counter = _const(s, rnd.GOLDEN)
    for axis, index in enumerate(indices):
        weight = rnd.axis_multiplier(len(indices) - 1 - axis)
        counter = s.add(counter, s.mul(s.index_to(index, i64), _const(s, weight)))
    return counter


def _unit_interval(s: Scalar, bits: SSAValue, element) -> SSAValue:
    mantissa = 24 if element == f32 else 53
    top = s.math(arith.ShRUIOp, bits, _const(s, 64 - mantissa))
    return s.mul(s.cast(top, element), s.const(2.0**-mantissa, element))


#: cos(pi v) = sum_k (-1)^k pi^(2k) / (2k)! v^(2k), to v^22: within 1e-11 on [-1, 1]
COS_PI_SERIES = [(-1) ** k * math_module.pi ** (2 * k) / math_module.factorial(2 * k) for k in range(12)]


def _cos_pi(s: Scalar, v2: SSAValue, element) -> SSAValue:
    """``cos(pi v)`` from ``v**2`` by Horner's rule."""
    acc = s.const(COS_PI_SERIES[-1], element)
    for c in reversed(COS_PI_SERIES[:-1]):
        acc = s.add(s.mul(acc, v2), s.const(c, element))
    return acc


@compute_rule(rnd.RandomOp)
def random(t: TEBuilder, op: rnd.RandomOp) -> SSAValue:
    element, stream, normal = op.dtype, op.stream.value.data, op.distribution.data == "normal"

    def body(s: Scalar, idx, ins):
        (state,) = ins
        seed, call = (s.read(state, [s.index(k)]) for k in range(2))
        mixed = _mix64(s, s.math(arith.XOrIOp, seed, _mix64(s, call)))
        key = _mix64(s, s.add(mixed, _const(s, rnd.GOLDEN * (stream + 1))))
        counter = _counter(s, idx)
        u1 = _unit_interval(s, _mix64(s, s.add(key, counter)), element)
        if not normal:
            return u1
        second = _mix64(s, s.math(arith.XOrIOp, key, _const(s, rnd.SECOND_DRAW)))
        u2 = _unit_interval(s, _mix64(s, s.add(second, counter)), element)
        one, two = s.const(1.0, element), s.const(2.0, element)
        radius = s.math(math.SqrtOp, s.mul(s.neg(two), s.math(math.LogOp, s.sub(one, u1))))
        # cos(2 pi u2) = -cos(pi v), v = 2 u2 - 1 in [-1, 1): a polynomial (libm's cos is a
        # scalar call that stops vectorization, and its argument range is not needed here)
        v = s.sub(s.mul(u2, two), one)
        return s.mul(s.neg(radius), _cos_pi(s, s.mul(v, v), element))

    return t.compute(f"random_{op.distribution.data}", op.result.type, [op.state], body)

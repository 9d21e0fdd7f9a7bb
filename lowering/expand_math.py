"""expand-math: f32 ``math.exp/log/tanh/erf/sin/cos/powf`` as branch-free ``arith`` code.

LLVM turns ``llvm.exp.f32`` / ``llvm.log.f32`` and the libm calls ``tanhf``/``erff``/``powf``
into scalar calls, and a call in a loop body stops the loop vectoriser: an elementwise
kernel with a sigmoid or a GELU then runs one float at a time. This pass replaces each of
these ops on ``f32`` by straight-line ``arith`` code (``mulf``/``addf`` with the
``contract`` flag, which LLVM fuses into FMAs, ``cmpf``/``select`` for special values,
``bitcast`` and ``i32`` integer ops for exponent manipulation), which LLVM vectorises
like any other arithmetic (zmm registers on AVX-512).

Methods (every constant is written as the hex of an exactly representable float):

* ``exp``: ``x = n*ln2 + r`` with ``n = round(x/ln2)`` (the 1.5*2^23 shifter trick gives
  ``n`` as an integer through a bitcast) and a two-part Cody-Waite ``ln2``;
  ``exp(r)`` by the Cephes ``expf`` polynomial; ``2^n`` applied as two exact powers of two
  so that results near overflow and denormal results come out right.
* ``log``: denormals scaled by 2^23; ``x = 2^k * m`` with ``m`` in [sqrt(1/2), sqrt(2))
  by integer ops on the bits; ``log(m)`` by the Cephes ``logf`` polynomial.
* ``tanh``: the Cephes ``tanhf`` odd polynomial for |x| < 0.625, ``1 - 2/(exp(2|x|)+1)``
  above (saturating to 1 through ``exp`` overflow), sign restored with ``copysign``.
* ``erf``: ``x + x*P(x^2)`` for |x| < 0.875, ``1 - exp(Q(|x|))`` for 0.875 <= |x| < 4
  (``Q`` approximates ``log(erfc)``), 1 above; ``P`` and ``Q`` are minimax fits (Lawson
  iterations on Chebyshev nodes, coefficients rounded to f32 one by one with refits).
* ``sin``, ``cos``: in f64, ``|x| * 2/pi mod 4`` exactly for every f32 (a Payne-Hanek
  reduction by nine 24-bit chunks of 2/pi, each product exact, no table lookup), the
  quadrant picking the Taylor series of sin or cos of the remainder (|r| <= pi/4);
  ``sin(-x) = -sin(x)``.
* ``powf``: a constant exponent in {-1, 0, 1, 2, 3} becomes multiplications;
  otherwise ``exp(b*log|a|)`` evaluated in f64 (log and exp by the same reduction with
  f64 series), which is accurate for every ``a`` and ``b`` after the f32 rounding, with
  C99/numpy special cases (negative bases with integer exponents, zeros, infinities,
  ``pow(x, 0) = pow(1, y) = 1``) by selects.

Accuracy, checked against float64 numpy over all floats in range: exp and log within
about 1 ulp, tanh, erf, sin and cos within 1e-7 absolute (sin and cos within half an ulp of
the exact value nearly everywhere, also for |x| up to 3.4e38), powf correctly rounded in
almost all cases (see ``tests/test_expand_math.py``). NaN propagates, infinities and
zeros follow numpy. Ops on other types (f64, vectors) are left alone.

Example (``tensorkiln-opt f.mlir -p expand-math``)::

    %y = math.exp %x : f32    ->    %y = arith.mulf ... (about 50 arith ops, no math.exp)
"""

from __future__ import annotations

import math as pymath
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    f32,
    f64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

#: ``contract`` lets LLVM fuse a multiply and the add that consumes it into one FMA.
CONTRACT = arith.FastMathFlagsAttr((FastMathFlag.ALLOW_CONTRACT,))
INF = float("inf")
NAN = float("nan")


def hexf(text: str) -> float:
    """A float constant written in hex (``hexf("0x1.715476p+0")``), exact by construction."""
    return float.fromhex(text)


def _round_to_f32(value: float) -> float:
    """``value`` rounded to the nearest f32 (inf when out of range)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return pymath.copysign(INF, value)


class Emitter:
    """Builds scalar ``arith``/``math`` ops of one float type and its same-width integer type.

    The ops are collected in :attr:`ops` (in order) for the caller to insert; constants
    are created once per emitter. Every helper returns the new op's result.
    """

    def __init__(self, float_type: Attribute, ops: list[Operation] | None = None):
        self.type = float_type
        self.int_type = IntegerType(64 if float_type == f64 else 32)
        self.ops: list[Operation] = [] if ops is None else ops
        self._constants: dict[tuple[str, float | int], SSAValue] = {}

    @property
    def mantissa_bits(self) -> int:
        return 52 if self.type == f64 else 23

    @property
    def exponent_bias(self) -> int:
        return 1023 if self.type == f64 else 127

    def _emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def sibling(self, float_type: Attribute) -> Emitter:
        """An emitter of another float type appending to the same op list."""
        return Emitter(float_type, self.ops)

    # -- constants -------------------------------------------------------------------

    def const(self, value: float) -> SSAValue:
        """A float constant; must be exact in this type (f32 constants: write them in hex)."""
        if self.type == f32 and pymath.isfinite(value) and _round_to_f32(value) != value:
            raise ValueError(f"{value!r} is not exactly representable in f32")
        key = ("f", struct.pack("<d", value))  # by bits: 0.0 and -0.0 differ
        if key not in self._constants:
            self._constants[key] = self._emit(arith.ConstantOp(FloatAttr(value, self.type)))
        return self._constants[key]

    def bits_of(self, value: float) -> int:
        """The bit pattern of ``value`` in this float type, as a signed integer."""
        fmt = ("<d", "<q") if self.type == f64 else ("<f", "<i")
        return struct.unpack(fmt[1], struct.pack(fmt[0], value))[0]

    def iconst(self, value: int) -> SSAValue:
        key = ("i", value)
        if key not in self._constants:
            self._constants[key] = self._emit(arith.ConstantOp(IntegerAttr(value, self.int_type)))
        return self._constants[key]

    # -- float arithmetic ------------------------------------------------------------

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.AddfOp(a, b, CONTRACT))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.SubfOp(a, b, CONTRACT))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.MulfOp(a, b, CONTRACT))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.DivfOp(a, b))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """``a*b + c``, fused by LLVM where the target has FMA (the code is accurate either way)."""
        return self.add(self.mul(a, b), c)

    def poly(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """``c0 + c1*x + c2*x^2 + ...`` by Horner's rule (coefficients lowest first)."""
        acc = self.const(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            acc = self.fma(acc, x, self.const(c))
        return acc

    def abs(self, a: SSAValue) -> SSAValue:
        return self._emit(math.AbsFOp(a))

    def copysign(self, magnitude: SSAValue, sign: SSAValue) -> SSAValue:
        return self._emit(math.CopySignOp(magnitude, sign))

    def floor(self, a: SSAValue) -> SSAValue:
        return self._emit(math.FloorOp(a))

    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """``arith.cmpf``: ordered predicates (``olt``...) are false for NaN, ``u*`` true."""
        return self._emit(arith.CmpfOp(a, b, predicate))

    def select(self, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.SelectOp(condition, a, b))

    def both(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Logical and of two ``i1`` conditions."""
        return self._emit(arith.AndIOp(a, b))

    def either(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Logical or of two ``i1`` conditions."""
        return self._emit(arith.OrIOp(a, b))

    def clamp(self, x: SSAValue, lo: float, hi: float) -> SSAValue:
        """``x`` limited to [lo, hi]; NaN stays NaN (both compares are false for it)."""
        x = self.select(self.cmp("olt", x, self.const(lo)), self.const(lo), x)
        return self.select(self.cmp("ogt", x, self.const(hi)), self.const(hi), x)

    def extend(self, a: SSAValue, to: Attribute) -> SSAValue:
        return self._emit(arith.ExtFOp(a, to))

    def truncate(self, a: SSAValue, to: Attribute) -> SSAValue:
        return self._emit(arith.TruncFOp(a, to))

    # -- integer views of floats -----------------------------------------------------

    def bits(self, a: SSAValue) -> SSAValue:
        return self._emit(arith.BitcastOp(a, self.int_type))

    def from_bits(self, i: SSAValue) -> SSAValue:
        return self._emit(arith.BitcastOp(i, self.type))

    def iadd(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.AddiOp(a, b))

    def isub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.SubiOp(a, b))

    def iand(self, a: SSAValue, mask: int) -> SSAValue:
        return self._emit(arith.AndIOp(a, self.iconst(mask)))

    def shl(self, a: SSAValue, amount: int) -> SSAValue:
        return self._emit(arith.ShLIOp(a, self.iconst(amount)))

    def ashr(self, a: SSAValue, amount: int) -> SSAValue:
        return self._emit(arith.ShRSIOp(a, self.iconst(amount)))

    def to_float(self, i: SSAValue) -> SSAValue:
        return self._emit(arith.SIToFPOp(i, self.type))

    def power_of_two(self, n: SSAValue) -> SSAValue:
        """``2.0**n`` for an integer ``n`` in the normal exponent range."""
        biased = self.iadd(n, self.iconst(self.exponent_bias))
        return self.from_bits(self.shl(biased, self.mantissa_bits))

    def round_to_integer(self, y: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(n, float(n))`` with ``n = round(y)``, for |y| < 2^(mantissa bits - 1).

        Adding 1.5*2^p (p = mantissa bits) puts ``round(y)`` in the low mantissa bits;
        the integer is read from the bits, the float by subtracting the shifter again.
        """
        value = 1.5 * 2.0**self.mantissa_bits
        shifter = self.const(value)
        shifted = self.add(y, shifter)
        n = self.isub(self.bits(shifted), self.iconst(self.bits_of(value)))
        return n, self._emit(arith.SubfOp(shifted, shifter))


# ---------------------------------------------------------------------------
# f32 algorithms

LOG2E = hexf("0x1.715476p+0")
#: ln2 = LN2_HI + LN2_LO; LN2_HI has 9 significant bits, so n*LN2_HI is exact for |n| < 2^15
LN2_HI = hexf("0x1.63p-1")  # 0.693359375
LN2_LO = hexf("-0x1.bd0106p-13")  # -2.12194440e-4

#: Cephes expf: exp(r) = 1 + r + r^2 * P(r) on [-ln2/2, ln2/2]
EXP_P = [
    hexf("0x1.0p-1"),
    hexf("0x1.555554p-3"),
    hexf("0x1.555382p-5"),
    hexf("0x1.111210p-7"),
    hexf("0x1.6e879cp-10"),
    hexf("0x1.a0d2cep-13"),
]
#: exp(x) is 0 in f32 below this (denormals included) and inf above EXP_HI
EXP_LO = -104.0
EXP_HI = 89.0


def exp_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``exp(x)`` for f32, about 1 ulp; exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN."""
    x = e.clamp(x, EXP_LO, EXP_HI)
    n, nf = e.round_to_integer(e.mul(x, e.const(LOG2E)))
    r = e.fma(nf, e.const(-LN2_HI), x)
    r = e.fma(nf, e.const(-LN2_LO), r)
    p = e.fma(e.mul(r, r), e.poly(r, EXP_P), e.add(r, e.const(1.0)))
    return scale_by_power_of_two(e, p, n)


#: expm1(x) is -1 in f32 below EXPM1_LO (and exp's EXP_HI bounds it above)
EXPM1_LO = -18.0


def expm1_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``exp(x) - 1`` for f32, within about 2 ulp, with full relative accuracy near 0;
    -1 below -18, inf above about 88.72, +-0 kept, NaN stays NaN.

    ``x = n*ln2 + r`` as in :func:`exp_f32`; ``expm1(r) = r + r^2 * P(r)`` (the same
    Cephes polynomial, without its leading 1); then ``2^n * expm1(r) + (2^n - 1)``,
    evaluated as ``2 * (h * expm1(r) + (h - 1/2))`` with ``h = 2^(n-1)``, which is a normal
    float for every ``n`` in [-26, 128] (``2^128`` itself would overflow), and ``h - 1/2``
    exact where it matters (|n| <= 24)."""
    xc = e.clamp(x, EXPM1_LO, EXP_HI)
    n, nf = e.round_to_integer(e.mul(xc, e.const(LOG2E)))
    r = e.fma(nf, e.const(-LN2_HI), xc)
    r = e.fma(nf, e.const(-LN2_LO), r)
    p = e.fma(e.mul(r, r), e.poly(r, EXP_P), r)
    h = e.power_of_two(e.isub(n, e.iconst(1)))
    result = e.mul(e.fma(h, p, e.sub(h, e.const(0.5))), e.const(2.0))
    # +-0: the sum above gives +0 for -0
    return e.select(e.cmp("oeq", x, e.const(0.0)), x, result)


def scale_by_power_of_two(e: Emitter, p: SSAValue, n: SSAValue) -> SSAValue:
    """``p * 2^n`` for n in [-150, 128] (f32): two exact steps, so that 2^128 and the
    denormal range (one rounding, in the second multiply) are reached."""
    half = e.ashr(n, 1)
    rest = e.isub(n, half)
    return e.mul(e.mul(p, e.power_of_two(half)), e.power_of_two(rest))


#: Cephes logf: log(1+f) = f - f^2/2 + f^3 * P(f) for f in [sqrt(1/2)-1, sqrt(2)-1]
LOG_P = [
    hexf("0x1.555554p-2"),
    hexf("-0x1.fffff8p-3"),
    hexf("0x1.999d58p-3"),
    hexf("-0x1.555ca0p-3"),
    hexf("0x1.23d37ep-3"),
    hexf("-0x1.fcba9ep-4"),
    hexf("0x1.de4a34p-4"),
    hexf("-0x1.d7a370p-4"),
    hexf("0x1.204376p-4"),
]
SQRT_HALF_BITS = 0x3F3504F3  # sqrt(1/2) in f32
SMALLEST_NORMAL = hexf("0x1.0p-126")


def log_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``log(x)`` for f32, about 1 ulp; log(0) = -inf, log(x<0) = NaN, log(inf) = inf."""
    # denormals: scale into the normal range first
    tiny = e.cmp("olt", x, e.const(SMALLEST_NORMAL))
    scaled = e.select(tiny, e.mul(x, e.const(hexf("0x1.0p23"))), x)
    # x = 2^k * m, m in [sqrt(1/2), sqrt(2)): shift the exponent field by sqrt(1/2)'s bits
    offset = e.isub(e.bits(scaled), e.iconst(SQRT_HALF_BITS))
    k = e.ashr(offset, 23)
    m = e.from_bits(e.iadd(e.iand(offset, 0x7FFFFF), e.iconst(SQRT_HALF_BITS)))
    kf = e.sub(e.to_float(k), e.select(tiny, e.const(23.0), e.const(0.0)))
    f = e.sub(m, e.const(1.0))
    z = e.mul(f, f)
    y = e.mul(e.mul(f, z), e.poly(f, LOG_P))
    y = e.fma(kf, e.const(LN2_LO), y)
    y = e.fma(z, e.const(-0.5), y)
    result = e.fma(kf, e.const(LN2_HI), e.add(f, y))
    # special values
    result = e.select(e.cmp("oeq", x, e.const(INF)), x, result)
    result = e.select(e.cmp("oeq", x, e.const(0.0)), e.const(-INF), result)
    return e.select(e.cmp("ult", x, e.const(0.0)), e.const(NAN), result)


def log1p_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``log(1 + x)`` for f32, within about 2 ulp, with full relative accuracy near 0:
    ``log(w) + (x - (w - 1)) / w`` with ``w = 1 + x`` rounded (the second term puts back,
    to first order, what rounding ``1 + x`` lost; ``w - 1`` is exact). log1p(-1) = -inf,
    NaN below -1, log1p(inf) = inf, +-0 kept."""
    one = e.const(1.0)
    w = e.add(x, one)
    correction = e.div(e.sub(x, e.sub(w, one)), w)
    result = e.add(log_f32(e, w), correction)
    result = e.select(e.cmp("oeq", x, e.const(-1.0)), e.const(-INF), result)
    result = e.select(e.cmp("oeq", x, e.const(INF)), x, result)
    return e.select(e.cmp("oeq", x, e.const(0.0)), x, result)


#: Cephes tanhf: tanh(x) = x + x^3 * P(x^2) for |x| < 0.625
TANH_P = [
    hexf("-0x1.555532p-2"),
    hexf("0x1.110726p-3"),
    hexf("-0x1.b83c5ap-5"),
    hexf("0x1.52269cp-6"),
    hexf("-0x1.75e1d4p-8"),
]


def tanh_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``tanh(x)`` for f32, within 1e-7 absolute and ~2 ulp relative; saturates to +-1."""
    a = e.abs(x)
    z = e.mul(a, a)
    small = e.fma(e.mul(a, z), e.poly(z, TANH_P), a)
    two = e.const(2.0)
    # exp overflows to inf for large |x|, and 2/inf = 0 gives 1 exactly
    large = e.sub(e.const(1.0), e.div(two, e.add(exp_f32(e, e.mul(a, two)), e.const(1.0))))
    magnitude = e.select(e.cmp("olt", a, e.const(0.625)), small, large)
    return e.copysign(magnitude, x)


#: erf(x) = x + x * P(x^2) for |x| < ERF_SPLIT (relative error ~1 ulp)
ERF_SPLIT = 0.875
ERF_P = [
    hexf("0x1.06eba6p-3"),
    hexf("-0x1.8126eep-2"),
    hexf("0x1.ce1beep-4"),
    hexf("-0x1.b6a216p-6"),
    hexf("0x1.47c52ap-8"),
    hexf("-0x1.3c566ap-11"),
]
#: erf(t) = 1 - exp(Q(t)) for ERF_SPLIT <= t <= 4 (Q ~ log(erfc(t)))
ERF_Q = [
    hexf("-0x1.2e6d68p-13"),
    hexf("-0x1.20bd5cp+0"),
    hexf("-0x1.460d5ap-1"),
    hexf("-0x1.ab0258p-4"),
    hexf("0x1.6eb12ep-6"),
    hexf("-0x1.93f7d6p-9"),
    hexf("0x1.a33c80p-13"),
]


def erf_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``erf(x)`` for f32, within 1e-7 absolute; erf(+-inf) = +-1, NaN stays NaN."""
    a = e.abs(x)
    small = e.fma(x, e.poly(e.mul(x, x), ERF_P), x)
    t = e.clamp(a, ERF_SPLIT, 4.0)
    large = e.copysign(e.sub(e.const(1.0), exp_f32(e, e.poly(t, ERF_Q))), x)
    # a NaN input fails the compare and takes `large`, which is then NaN (copysign of 1 - exp(NaN))
    return e.select(e.cmp("olt", a, e.const(ERF_SPLIT)), small, large)


# ---------------------------------------------------------------------------
# powf: exp(b*log|a|) in f64 (enough bits for any a and b), C99/numpy special cases

#: log(1+f) = 2*atanh(s), s = f/(2+f): 2s * (1 + s^2/3 + s^4/5 + ...), |s| < 0.1716
ATANH_SERIES = [1.0 / (2 * k + 1) for k in range(8)]
#: exp(r) Taylor series for |r| <= ln2/2 (truncation error below 3e-13)
EXP_SERIES = [1.0 / pymath.factorial(k) for k in range(11)]
SQRT_HALF_BITS64 = 0x3FE6A09E667F3BCD  # sqrt(1/2) in f64


def log_f64_positive(d: Emitter, x: SSAValue) -> SSAValue:
    """``log(x)`` for a positive, finite, normal f64 (every extended f32 but 0), ~1e-15."""
    offset = d.isub(d.bits(x), d.iconst(SQRT_HALF_BITS64))
    k = d.ashr(offset, 52)
    m = d.from_bits(d.iadd(d.iand(offset, (1 << 52) - 1), d.iconst(SQRT_HALF_BITS64)))
    f = d.sub(m, d.const(1.0))
    s = d.div(f, d.add(f, d.const(2.0)))
    series = d.poly(d.mul(s, s), ATANH_SERIES)
    return d.fma(d.to_float(k), d.const(pymath.log(2)), d.mul(d.add(s, s), series))


def exp_f64_for_f32(d: Emitter, y: SSAValue) -> SSAValue:
    """``exp(y)`` in f64, ~1e-13 relative where the result rounds to a finite non-zero
    f32; 0 and inf beyond (``y`` is clamped to [-200, 200]), NaN stays NaN."""
    y = d.clamp(y, -200.0, 200.0)
    n, nf = d.round_to_integer(d.mul(y, d.const(1 / pymath.log(2))))
    r = d.fma(nf, d.const(-pymath.log(2)), y)
    return d.mul(d.poly(r, EXP_SERIES), d.power_of_two(n))


#: 2/pi in 24-bit chunks (fdlibm's table): 2/pi = sum_j TWO_OVER_PI_CHUNKS[j] * 2^(-24(j+1)).
#: Nine chunks (216 bits) cover the largest f32, 2^128: later bits only add below 2^-60.
TWO_OVER_PI_CHUNKS = (0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163)
#: Taylor series of sin(r)/r and cos(r) in r^2, to r^12: on |r| <= pi/4 within 1e-11
SIN_SERIES = [(-1) ** k / pymath.factorial(2 * k + 1) for k in range(6)]
COS_SERIES = [(-1) ** k / pymath.factorial(2 * k) for k in range(7)]


def _quarter_turns_f64(d: Emitter, a: SSAValue) -> SSAValue:
    """``a * 2/pi mod 4`` for a non-negative f32 value ``a`` widened to f64, for every f32
    (Payne-Hanek reduction without a table lookup): each chunk's product with ``a`` has at
    most 48 significant bits, so it and its remainder mod 4 are exact in f64; their sum
    keeps about 2^-48 absolute."""
    total = None
    for j, chunk in enumerate(TWO_OVER_PI_CHUNKS):
        term = d.mul(a, d.const(chunk * 2.0 ** (-24 * (j + 1))))
        term = d.sub(term, d.mul(d.floor(d.mul(term, d.const(0.25))), d.const(4.0)))
        total = term if total is None else d.add(total, term)
    return d.sub(total, d.mul(d.floor(d.mul(total, d.const(0.25))), d.const(4.0)))


def _sin_quadrants_f32(e: Emitter, x: SSAValue, quarter_turns: int) -> SSAValue:
    """``sin(|x| + quarter_turns * pi/2)`` for f32 ``x``, in f64: ``|x| = (n + f) * pi/2``
    with integer ``n`` and |f| <= 1/2 (exact reduction, see ``_quarter_turns_f64``), then the
    series of sin or cos of ``r = f * pi/2`` picked and signed by ``n``."""
    d = e.sibling(f64)
    turns = _quarter_turns_f64(d, d.abs(e.extend(x, f64)))
    n, nf = d.round_to_integer(turns)
    r = d.mul(d.sub(turns, nf), d.const(pymath.pi / 2))
    r2 = d.mul(r, r)
    sine, cosine = d.mul(r, d.poly(r2, SIN_SERIES)), d.poly(r2, COS_SERIES)
    quadrant = d.iadd(n, d.iconst(quarter_turns))
    odd = d._emit(arith.CmpiOp(d.iand(quadrant, 1), d.iconst(0), "ne"))  # noqa: SLF001
    negative = d._emit(arith.CmpiOp(d.iand(quadrant, 2), d.iconst(0), "ne"))  # noqa: SLF001
    value = d.select(odd, cosine, sine)
    return d.truncate(d.select(negative, d._emit(arith.NegfOp(value)), value), f32)  # noqa: SLF001


def sin_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``sin(x)`` = sign(x) * sin(|x|), within 1e-7 absolute for every f32."""
    value = _sin_quadrants_f32(e, x, 0)
    return e.select(e.cmp("olt", x, e.const(0.0)), e._emit(arith.NegfOp(value)), value)  # noqa: SLF001


def cos_f32(e: Emitter, x: SSAValue) -> SSAValue:
    """``cos(x)`` = cos(|x|) = sin(|x| + pi/2), within 1e-7 absolute for every f32."""
    return _sin_quadrants_f32(e, x, 1)


def powf_f32(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """``pow(a, b)`` for f32 with numpy's (C99's) special values, via f64 exp/log."""
    d = e.sibling(f64)
    a64, b64 = d.extend(a, f64), d.extend(b, f64)
    magnitude = d.abs(a64)
    # log|a|: 0 -> -inf, inf and NaN -> themselves (the series gets 1.0 instead)
    absolute = e.abs(a)
    regular = e.both(e.cmp("ogt", absolute, e.const(0.0)), e.cmp("olt", absolute, e.const(INF)))
    log = log_f64_positive(d, d.select(regular, magnitude, d.const(1.0)))
    log = d.select(regular, log, d.select(e.cmp("oeq", a, e.const(0.0)), d.const(-INF), magnitude))
    power = exp_f64_for_f32(d, d.mul(b64, log))
    # a negative base (-0 and -inf included) with an odd integer exponent: a negative result
    floor_b = d.floor(b64)
    half = d.mul(floor_b, d.const(0.5))
    odd = e.both(d.cmp("oeq", floor_b, b64), d.cmp("one", d.floor(half), half))
    result = e.truncate(d.copysign(power, d.select(odd, a64, d.const(1.0))), f32)
    # a finite negative base with a non-integer exponent: NaN
    negative_finite = e.both(e.cmp("olt", a, e.const(0.0)), e.cmp("ogt", a, e.const(-INF)))
    non_integer = d.cmp("one", floor_b, b64)
    result = e.select(e.both(negative_finite, non_integer), e.const(NAN), result)
    # pow(1, y) = 1 and pow(x, 0) = 1 (even for NaN), pow(-1, +-inf) = 1
    one = e.const(1.0)
    unit = e.either(
        e.cmp("oeq", a, one),
        e.both(e.cmp("oeq", a, e.const(-1.0)), e.cmp("oeq", e.abs(b), e.const(INF))),
    )
    return e.select(e.either(unit, e.cmp("oeq", b, e.const(0.0))), one, result)


def integer_power(e: Emitter, a: SSAValue, exponent: int) -> SSAValue:
    """``a ** exponent`` for ``exponent`` in :data:`INTEGER_EXPONENTS` by multiplication:
    correctly rounded for -1, 0, 1 and 2, within 1 ulp for 3; numpy's special values."""
    if exponent == -1:
        return e.div(e.const(1.0), a)
    if exponent == 0:
        return e.const(1.0)
    if exponent == 1:
        return a
    square = e.mul(a, a)
    return square if exponent == 2 else e.mul(square, a)


#: constant exponents computed by :func:`integer_power` (others take :func:`powf_f32`)
INTEGER_EXPONENTS = (-1.0, 0.0, 1.0, 2.0, 3.0)


def constant_value(value: SSAValue) -> float | None:
    """The value of an ``arith.constant`` float operand, else None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr):
        return op.value.value.data
    return None


# ---------------------------------------------------------------------------
# patterns


def replace_with(
    rewriter: PatternRewriter, op: Operation, ops: list[Operation], result: SSAValue
) -> None:
    """Insert ``ops`` before ``op`` and let ``result`` take its place (and its name;
    the helper values stay unnamed, unlike ``rewriter.replace``, which names them all)."""
    rewriter.insert(ops, InsertPoint.before(op))
    result.name_hint = op.results[0].name_hint
    rewriter.replace_all_uses_with(op.results[0], result)
    rewriter.erase(op)


UNARY = {
    math.ExpOp: exp_f32, math.LogOp: log_f32, math.TanhOp: tanh_f32, math.ErfOp: erf_f32,
    math.ExpM1Op: expm1_f32, math.Log1pOp: log1p_f32, math.SinOp: sin_f32, math.CosOp: cos_f32,
}  # fmt: skip


class ExpandUnaryMath(RewritePattern):
    """``math.exp/log/tanh/erf/expm1/log1p`` on f32 -> the arith code of :data:`UNARY`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        expand = UNARY.get(type(op))
        if expand is None or op.results[0].type != f32:
            return
        e = Emitter(f32)
        result = expand(e, op.operands[0])
        replace_with(rewriter, op, e.ops, result)


class ExpandPowF(RewritePattern):
    """``math.powf`` on f32 -> multiplications (small integer constant exponent) or f64 exp/log."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.PowFOp, rewriter: PatternRewriter) -> None:
        if op.result.type != f32:
            return
        e = Emitter(f32)
        exponent = constant_value(op.rhs)
        if exponent in INTEGER_EXPONENTS:
            result = integer_power(e, op.lhs, int(exponent))
        else:
            result = powf_f32(e, op.lhs, op.rhs)
        replace_with(rewriter, op, e.ops, result)


@dataclass(frozen=True)
class ExpandMathPass(ModulePass):
    """Expand f32 ``math.exp/log/tanh/erf/expm1/log1p/powf`` into branch-free ``arith`` code."""

    name = "expand-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ExpandUnaryMath(), ExpandPowF()]),
            apply_recursively=False,
        ).rewrite_module(op)


__all__ = ["Emitter", "ExpandMathPass", "erf_f32", "exp_f32", "expm1_f32", "log1p_f32", "log_f32", "powf_f32", "tanh_f32"]

"""The Stockham FFT kernel of ``graph.fft`` (``dialects/graph/fourier.py``: the stages,
and the numpy reference that runs them).

Per matrix of the batch, the signals (rows or columns) go in blocks of :data:`LANE_BLOCK`,
one per vector lane, each block through every stage; the stages between the first and
the last alternate between two buffers of the workspace (``W[0]``, ``W[1]``: ``(2, n,
lanes)``, one signal per lane, so every access there is a contiguous vector)::

    loop.for %block = 0 to ceil(lanes / 16) name("scan0") {
      // stage of radix r, m = (points left) / r, stride s: reads the input (the first),
      // writes the output (the last)
      loop.for %p = 0 to m name("scan1") {
        <the twiddles w_n^(p k s), k = 1 .. r-1: loads of the table>
        loop.for %q = 0 to s name("scan2") {
          loop.for %l = 0 to min(16, lanes - 16 block) vectorized name("lane0") {
            <a_j = src[:, q + s (p + m j), l]; the r-point butterfly; times the twiddles>
            <dst[:, q + s (r p + k), l] = y_k>
          }
        }
      }
    }

A stage's accesses to a buffer differ only in their (uniform) point, all at one lane:
``lowering/vectorize.py`` makes the lane loop SIMD code (reads of rows of signals, the
input of a transform along the last axis, become gathers of the lanes, the output's
writes per lane). The last stage's twiddles are all 1 (``p = 0``) and are left out.
Every access is inside its buffer: points ``< n`` by the stage arithmetic, lanes
``< lanes`` by the block's width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph.fourier import radices, unit_circle
from ..te_builder import CONTRACT
from .code import KernelArgs, MatrixAt, ScalarCode, routine

#: lanes transformed together through all stages
LANE_BLOCK = 16

#: a complex value as its real and imaginary parts
Cx = tuple[SSAValue, SSAValue]


class _ComplexCode:
    """Complex arithmetic on (real, imaginary) pairs at one insertion point, with
    ``contract`` (products and sums may fuse into FMAs)."""

    def __init__(self, c: ScalarCode):
        self.c = c

    def _op(self, op_class, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.c.ins(op_class(x, y, flags=CONTRACT))

    def real(self, value: float) -> SSAValue:
        return self.c.ins(arith.ConstantOp(FloatAttr(value, self.c.element)))

    def add(self, a: Cx, b: Cx) -> Cx:
        return self._op(arith.AddfOp, a[0], b[0]), self._op(arith.AddfOp, a[1], b[1])

    def sub(self, a: Cx, b: Cx) -> Cx:
        return self._op(arith.SubfOp, a[0], b[0]), self._op(arith.SubfOp, a[1], b[1])

    def mul(self, a: Cx, b: Cx) -> Cx:
        mul, add, sub = (lambda x, y, k=k: self._op(k, x, y) for k in (arith.MulfOp, arith.AddfOp, arith.SubfOp))
        return sub(mul(a[0], b[0]), mul(a[1], b[1])), add(mul(a[0], b[1]), mul(a[1], b[0]))

    def times_i(self, a: Cx, sign: int) -> Cx:
        """``sign * i * a`` (exact: a swap and a negation)."""
        negated = self.c.ins(arith.NegfOp(a[1] if sign > 0 else a[0]))
        return (negated, a[0]) if sign > 0 else (a[1], negated)

    def butterfly(self, a: list[Cx], sign: int) -> list[Cx]:
        """``b_k = sum_j a_j exp(sign 2 pi i j k / r)``, ``r = len(a)``."""
        r = len(a)
        if r == 1:
            return a
        if r == 2:
            return [self.add(a[0], a[1]), self.sub(a[0], a[1])]
        if r == 4:
            t0, t1 = self.add(a[0], a[2]), self.sub(a[0], a[2])
            t2, t3 = self.add(a[1], a[3]), self.times_i(self.sub(a[1], a[3]), sign)
            return [self.add(t0, t2), self.add(t1, t3), self.sub(t0, t2), self.sub(t1, t3)]
        return self._odd_butterfly(a, sign)

    def _odd_butterfly(self, a: list[Cx], sign: int) -> list[Cx]:
        """Odd ``r``: the pairs ``j, r - j`` share their roots up to conjugation, so with
        ``S_j = a_j + a_(r-j)``, ``D_j = a_j - a_(r-j)`` and ``phi = 2 pi j k / r``:
        ``b_k = a_0 + sum_(j <= r/2) (S_j cos phi + i sign D_j sin phi)``."""
        r = len(a)
        half = range(1, (r - 1) // 2 + 1)
        sums = {j: self.add(a[j], a[r - j]) for j in half}
        diffs = {j: self.sub(a[j], a[r - j]) for j in half}
        first = a[0]
        for j in half:
            first = self.add(first, sums[j])
        out = [first]
        mul, add, sub = (lambda x, y, k=k: self._op(k, x, y) for k in (arith.MulfOp, arith.AddfOp, arith.SubfOp))
        for k in range(1, r):
            re, im = a[0]
            for j in half:
                (cos,), (sin,) = unit_circle(np.array([j * k]), r)
                cos, sin = self.real(float(cos)), self.real(float(sin) * sign)
                re = sub(add(re, mul(sums[j][0], cos)), mul(diffs[j][1], sin))
                im = add(add(im, mul(sums[j][1], cos)), mul(diffs[j][0], sin))
            out.append((re, im))
        return out


@dataclass(frozen=True)
class _Signals:
    """A buffer of signals as a stage sees it: point ``point`` of a lane's signal, both
    parts. ``parts``: one matrix per part (the input), else one matrix holding both at
    its ``part`` index after ``prefix``; ``lane_first``: a signal is a row (``[lane,
    point]``); ``whole``: indexed by the lane among all (the input and output), not
    within the block (the workspace holds the block's lanes only)."""

    parts: tuple[MatrixAt, ...]
    lane_first: bool
    whole: bool
    prefix: tuple[int, ...] = ()

    def _at(self, c: ScalarCode, part: int, point: SSAValue, lanes: _Lane) -> tuple[MatrixAt, list[SSAValue]]:
        lane = lanes.whole if self.whole else lanes.in_block
        at = [lane, point] if self.lane_first else [point, lane]
        if len(self.parts) == 2:
            return self.parts[part], at
        return self.parts[0], [*(c.index(k) for k in self.prefix), c.index(part), *at]

    def load(self, c: ScalarCode, point: SSAValue, lane: _Lane) -> Cx:
        (m0, at0), (m1, at1) = (self._at(c, part, point, lane) for part in (0, 1))
        return m0.load(c, *at0), m1.load(c, *at1)

    def store(self, c: ScalarCode, value: Cx, point: SSAValue, lane: _Lane) -> None:
        for part in (0, 1):
            m, at = self._at(c, part, point, lane)
            m.store(c, value[part], *at)


@dataclass(frozen=True)
class _Lane:
    """A lane's index within its block and among all lanes (each computed once: the
    vectorizer recognises accesses at one lane by their index value)."""

    in_block: SSAValue
    whole: SSAValue


def _lane_loop(code: ScalarCode, width: SSAValue, first: SSAValue) -> tuple[_Lane, ScalarCode]:
    """The vectorized loop over a block's ``width`` lanes from lane ``first``."""
    t, inner = code.loop(code.index(0), width, code.index(1), code.names("lane"), kind="vectorized")
    return _Lane(t, inner.ins(arith.AddiOp(first, t))), inner


def _workspace(op: te.DenseLinalgOp) -> tuple[int, ...]:
    """Two buffers ``(2, n, LANE_BLOCK)``: one signal of a block per lane."""
    _, rows, columns = op.result.type.get_shape()[-3:]
    return (2, 2, columns if op.kind.data.endswith("rows") else rows, LANE_BLOCK)


def _copy(code: ScalarCode, n: int, width: SSAValue, first: SSAValue, src: _Signals, dst: _Signals) -> None:
    """Every point of the block's signals from ``src`` to ``dst``, the points innermost
    (a row of the input or output is read or written in vectors)."""
    t, per_lane = code.range(None, width, "copy", within_matrix=False)
    point, inner = per_lane.loop(per_lane.index(0), per_lane.index(n), per_lane.index(1), code.names("copy"), kind="vectorized")
    lane = _Lane(t, inner.ins(arith.AddiOp(first, t)))
    dst.store(inner, src.load(inner, point, lane), point, lane)


@routine("fft", workspace=_workspace)
def _fft(k: KernelArgs) -> None:
    """Signals along rows are copied into the workspace (a transposition, its rows read
    contiguously) and back after the stages: a stage reading the rows of 16 signals
    ``4 n`` bytes apart would miss the cache on every lane. Signals along columns are
    read and written by the first and last stage directly."""
    c, (real, imag, roots), work = k.c, k.inputs, k.workspace
    assert work is not None
    direction, signals = k.op.kind.data.split()
    along_rows = signals == "rows"
    _, rows, columns = k.out_sizes
    lanes = rows if along_rows else columns
    n = k.op.result.type.get_shape()[-1 if along_rows else -2]
    sign = 1 if direction == "inverse" else -1
    stages = radices(n)
    assert stages is not None, n

    block = c.index(LANE_BLOCK)
    blocks = c.ins(arith.DivUIOp(c.ins(arith.AddiOp(lanes, c.index(LANE_BLOCK - 1))), block))
    b, per_block = c.range(None, blocks, "scan", within_matrix=False)  # (scan loops: work the schedule counts)
    first = per_block.ins(arith.MuliOp(b, block))
    width = per_block.ins(arith.MinUIOp(block, per_block.ins(arith.SubiOp(lanes, first))))
    source = _Signals((real, imag), along_rows, whole=True)
    output = _Signals((k.out,), along_rows, whole=True)
    buffers = [_Signals((work,), False, False, (buffer,)) for buffer in (0, 1)]
    if along_rows:
        _copy(per_block, n, width, first, source, buffers[0])
        source = buffers[0]
        buffers = buffers[1:] + buffers[:1]
    if not stages:  # one point: the transform is the signal
        _copy(per_block, 1, width, first, source, output)
        return

    stride, length = 1, n
    for number, radix in enumerate(stages):
        src = source if number == 0 else buffers[(number - 1) % 2]
        last = number == len(stages) - 1
        dst = output if last and not along_rows else buffers[number % 2]
        m = length // radix
        p, at_p = per_block.range(None, per_block.index(m), "scan", within_matrix=False)
        twiddles = []
        if m > 1:  # (the last stage's p is 0: every twiddle 1)
            for j in range(1, radix):
                t = at_p.ins(arith.MuliOp(p, at_p.index(j * stride)))
                twiddles.append((roots.load(at_p, at_p.index(0), t), roots.load(at_p, at_p.index(1), t)))
        q, at_q = at_p.range(None, at_p.index(stride), "scan", within_matrix=False)
        read_base = at_q.ins(arith.AddiOp(q, at_q.ins(arith.MuliOp(p, at_q.index(stride)))))
        write_base = at_q.ins(arith.AddiOp(q, at_q.ins(arith.MuliOp(p, at_q.index(stride * radix)))))
        lane, body = _lane_loop(at_q, width, first)
        cx = _ComplexCode(body)
        a = [src.load(body, body.ins(arith.AddiOp(read_base, body.index(stride * m * j))), lane) for j in range(radix)]
        for j, value in enumerate(cx.butterfly(a, sign)):
            if j and twiddles:
                value = cx.mul(value, twiddles[j - 1])
            dst.store(body, value, body.ins(arith.AddiOp(write_base, body.index(stride * j))), lane)
        stride, length = stride * radix, m
        if last and along_rows:
            _copy(per_block, n, width, first, dst, output)

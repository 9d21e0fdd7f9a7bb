"""The Stockham FFT kernels of ``graph.fft``, ``graph.rfft`` and ``graph.irfft``
(``dialects/graph/fourier.py``: the stages, and the references).

Per matrix of the batch, the signals (rows or columns) go in blocks of :data:`LANE_BLOCK`,
one per vector lane, each block through a list of steps, each a pass from one buffer to
the next: the first reads the input, the last writes the output, the others alternate
between two buffers of the workspace (``W[0]``, ``W[1]``: ``(2, points, 8)``, one signal
per lane, so every access there is a contiguous vector). The steps: the Stockham stages;
for a real transform, the complex transform of its ``h = n / 2`` even + i odd samples and
a pass separating the halves (``irfft``: joining them, first); for signals along rows, a
copy into the workspace first and out of it last (a transposition in runs of points).
A stage::

    loop.for %block = 0 to ceil(lanes / 8) name("scan0") {
      loop.for %p = 0 to m name("scan1") {                   // radix r, m = points left / r
        <the twiddles w_n^(p k s), k = 1 .. r-1: loads of the table>
        loop.for %q = 0 to s name("scan2") {                 // stride s
          loop.for %l = 0 to min(8, lanes - 8 block) vectorized name("lane0") {
            <a_j = src[:, q + s (p + m j), l]; the r-point butterfly; times the twiddles>
            <dst[:, q + s (r p + k), l] = y_k>
          }
        }
      }
    }

A step's accesses to a buffer differ only in their (uniform) point, all at one lane:
``lowering/vectorize.py`` makes the lane loop SIMD code. The last stage's twiddles are
all 1 (``p = 0``) and are left out. Every access is inside its buffer: points by the
stage arithmetic, lanes ``< lanes`` by the block's width.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph.fourier import radices, unit_circle
from ..te_builder import CONTRACT
from .code import KernelArgs, MatrixAt, ScalarCode, routine

#: lanes transformed together through all steps: one AVX2 vector of float32 (blocks of
#: 16 ran 10-40% slower there: twice the workspace per step, 256 KB for 1024 points)
LANE_BLOCK = 8

#: a complex value as its real and imaginary parts
Cx = tuple[SSAValue, SSAValue]


class _ComplexCode:
    """Complex arithmetic on (real, imaginary) pairs at one insertion point, with
    ``contract`` (products and sums may fuse into FMAs)."""

    def __init__(self, c: ScalarCode):
        self.c = c

    # -- real values

    def real(self, value: float) -> SSAValue:
        return self.c.ins(arith.ConstantOp(FloatAttr(value, self.c.element)))

    def plus(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.c.ins(arith.AddfOp(x, y, flags=CONTRACT))

    def minus(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.c.ins(arith.SubfOp(x, y, flags=CONTRACT))

    def times(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.c.ins(arith.MulfOp(x, y, flags=CONTRACT))

    # -- complex values

    def add(self, a: Cx, b: Cx) -> Cx:
        return self.plus(a[0], b[0]), self.plus(a[1], b[1])

    def sub(self, a: Cx, b: Cx) -> Cx:
        return self.minus(a[0], b[0]), self.minus(a[1], b[1])

    def mul(self, a: Cx, b: Cx) -> Cx:
        t = self.times
        return self.minus(t(a[0], b[0]), t(a[1], b[1])), self.plus(t(a[0], b[1]), t(a[1], b[0]))

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
        plus, minus, times = self.plus, self.minus, self.times
        for k in range(1, r):
            re, im = a[0]
            for j in half:
                (cos,), (sin,) = unit_circle(np.array([j * k]), r)
                cos, sin = self.real(float(cos)), self.real(float(sin) * sign)
                re = minus(plus(re, times(sums[j][0], cos)), times(diffs[j][1], sin))
                im = plus(plus(im, times(sums[j][1], cos)), times(diffs[j][0], sin))
            out.append((re, im))
        return out


@dataclass(frozen=True)
class _Lane:
    """A lane's index within its block and among all lanes (each computed once: the
    vectorizer recognises accesses at one lane by their index value)."""

    in_block: SSAValue
    whole: SSAValue


@dataclass(frozen=True)
class _Signals:
    """A buffer of signals as a step sees it: point ``point`` of a lane's signal, both
    parts. ``parts``: one matrix per part (the input), else one matrix holding both at
    its ``part`` index after ``prefix``, or (``interleaved``) a real matrix holding the
    parts of point ``p`` at ``2 p`` and ``2 p + 1`` (the real signal of a real transform);
    ``lane_first``: a signal is a row (``[lane, point]``); ``whole``: indexed by the lane
    among all (the input and output), not within the block (the workspace holds the
    block's lanes only)."""

    parts: tuple[MatrixAt, ...]
    lane_first: bool
    whole: bool
    prefix: tuple[int, ...] = ()
    interleaved: bool = False

    def _position(self, position: SSAValue, lanes: _Lane) -> list[SSAValue]:
        """The matrix indices of a position along a signal of a lane."""
        lane = lanes.whole if self.whole else lanes.in_block
        return [lane, position] if self.lane_first else [position, lane]

    def _at(self, c: ScalarCode, part: int | SSAValue, point: SSAValue, lanes: _Lane) -> tuple[MatrixAt, list[SSAValue]]:
        part_index = part if isinstance(part, SSAValue) else c.index(part)
        if self.interleaved:
            point = c.ins(arith.AddiOp(c.ins(arith.MuliOp(point, c.index(2))), part_index))
        at = self._position(point, lanes)
        if len(self.parts) == 2:
            assert isinstance(part, int)
            return self.parts[part], at
        if self.interleaved:
            return self.parts[0], at
        return self.parts[0], [*(c.index(k) for k in self.prefix), part_index, *at]

    def load(self, c: ScalarCode, point: SSAValue, lane: _Lane) -> Cx:
        (m0, at0), (m1, at1) = (self._at(c, part, point, lane) for part in (0, 1))
        return m0.load(c, *at0), m1.load(c, *at1)

    def store_sample(self, c: ScalarCode, value: SSAValue, position: SSAValue, lane: _Lane) -> None:
        """One real sample at ``position`` of an interleaved signal."""
        assert self.interleaved
        self.parts[0].store(c, value, *self._position(position, lane))

    def load_part(self, c: ScalarCode, part: SSAValue, point: SSAValue, lane: _Lane) -> SSAValue:
        """One part (an index value) of a point (the workspace's)."""
        m, at = self._at(c, part, point, lane)
        return m.load(c, *at)

    def store(self, c: ScalarCode, value: Cx, point: SSAValue, lane: _Lane) -> None:
        for part in (0, 1):
            m, at = self._at(c, part, point, lane)
            m.store(c, value[part], *at)


@dataclass(frozen=True)
class _Block:
    """One block of lanes: the code inside its loop, its first lane and its width."""

    code: ScalarCode
    first: SSAValue
    width: SSAValue

    def lanes(self, code: ScalarCode) -> tuple[_Lane, ScalarCode]:
        """The vectorized loop over the block's lanes, inside ``code``."""
        t, inner = code.loop(code.index(0), self.width, code.index(1), code.names("lane"), kind="vectorized")
        return _Lane(t, inner.ins(arith.AddiOp(self.first, t))), inner


#: one pass over the block's signals, from one buffer to the next
Step = Callable[[_Block, _Signals, _Signals], None]

#: points of the block's signals copied together (their workspace rows stay in L1 while
#: each signal's run of them is read or written as vectors)
COPY_POINTS = 64


def _copy(points: int) -> Step:
    """Every point of the block's signals: runs of :data:`COPY_POINTS` points, in each
    every signal's run innermost (a row of the input or output is read or written in
    vectors). Into a real signal (interleaved parts), its ``2 points`` samples in order,
    each a part of a point: its stores contiguous."""

    def step(block: _Block, src: _Signals, dst: _Signals) -> None:
        if not dst.interleaved:
            _runs(block, points, lambda c, point, lane: dst.store(c, src.load(c, point, lane), point, lane))
            return

        def sample(c: ScalarCode, position: SSAValue, lane: _Lane) -> None:
            part, point = (c.ins(op(position, c.index(2))) for op in (arith.RemUIOp, arith.DivUIOp))
            dst.store_sample(c, src.load_part(c, part, point, lane), position, lane)

        _runs(block, 2 * points, sample)

    return step


def _runs(block: _Block, count: int, body: Callable[[ScalarCode, SSAValue, _Lane], None]) -> None:
    """``body(code, position, lane)`` for positions ``< count`` of every lane of the block:
    runs of :data:`COPY_POINTS` positions, in each every lane's run innermost, vectorized."""
    c = block.code
    run = c.index(COPY_POINTS)
    r, per_run = c.range(None, c.index(-(-count // COPY_POINTS)), "copy", within_matrix=False)
    start = per_run.ins(arith.MuliOp(r, run))
    length = per_run.ins(arith.MinUIOp(run, per_run.ins(arith.SubiOp(per_run.index(count), start))))
    t, per_lane = per_run.range(None, block.width, "copy", within_matrix=False)
    u, inner = per_lane.loop(per_lane.index(0), length, per_lane.index(1), c.names("copy"), kind="vectorized")
    body(inner, inner.ins(arith.AddiOp(start, u)), _Lane(t, inner.ins(arith.AddiOp(block.first, t))))


def _stage(radix: int, m: int, stride: int, sign: int, roots: MatrixAt) -> Step:
    """A Stockham stage (module docstring), its twiddles ``w^(p k stride)`` from the
    table's first row of roots."""

    def step(block: _Block, src: _Signals, dst: _Signals) -> None:
        p, at_p = block.code.range(None, block.code.index(m), "scan", within_matrix=False)
        twiddles = []
        if m > 1:  # (the last stage's p is 0: every twiddle 1)
            for j in range(1, radix):
                t = at_p.ins(arith.MuliOp(p, at_p.index(j * stride)))
                twiddles.append((roots.load(at_p, at_p.index(0), t), roots.load(at_p, at_p.index(1), t)))
        q, at_q = at_p.range(None, at_p.index(stride), "scan", within_matrix=False)
        read_base = at_q.ins(arith.AddiOp(q, at_q.ins(arith.MuliOp(p, at_q.index(stride)))))
        write_base = at_q.ins(arith.AddiOp(q, at_q.ins(arith.MuliOp(p, at_q.index(stride * radix)))))
        lane, body = block.lanes(at_q)
        cx = _ComplexCode(body)
        a = [src.load(body, body.ins(arith.AddiOp(read_base, body.index(stride * m * j))), lane) for j in range(radix)]
        for j, value in enumerate(cx.butterfly(a, sign)):
            if j and twiddles:
                value = cx.mul(value, twiddles[j - 1])
            dst.store(body, value, body.ins(arith.AddiOp(write_base, body.index(stride * j))), lane)

    return step


def _stages(n: int, sign: int, roots: MatrixAt) -> list[Step]:
    stages = radices(n)
    assert stages is not None, n
    steps, stride, length = [], 1, n
    for radix in stages:
        steps.append(_stage(radix, length // radix, stride, sign, roots))
        stride, length = stride * radix, length // radix
    return steps


def _select_index(c: ScalarCode, k: SSAValue, at: int, then: SSAValue, otherwise: SSAValue) -> SSAValue:
    """``then`` where ``k == at``, else ``otherwise``."""
    return c.select(c.ins(arith.CmpiOp(k, c.index(at), "eq")), then, otherwise)


def _separate_halves(h: int, table: MatrixAt) -> Step:
    """A real signal's ``h + 1`` non-negative frequencies from the transform ``Z`` of its
    even + i odd samples (``h`` points): with ``A = Z_(k mod h)``, ``B = Z_(h - k mod h)``,
    ``X_k = (A + conj B) / 2 + w_2h^k (A - conj B) / 2i``; the table's row ``h + k`` holds
    ``cos, sin`` of ``2 pi k / 2h``, halved."""

    def step(block: _Block, src: _Signals, dst: _Signals) -> None:
        k, at_k = block.code.range(None, block.code.index(h + 1), "scan", within_matrix=False)
        zero = at_k.index(0)
        a_at = _select_index(at_k, k, h, zero, k)
        b_at = _select_index(at_k, k, 0, zero, at_k.ins(arith.SubiOp(at_k.index(h), k)))
        row = at_k.ins(arith.AddiOp(k, at_k.index(h)))
        half_cos, half_sin = table.load(at_k, at_k.index(0), row), table.load(at_k, at_k.index(1), row)
        lane, body = block.lanes(at_k)
        cx = _ComplexCode(body)
        (ar, ai), (br, bi) = src.load(body, a_at, lane), src.load(body, b_at, lane)
        (re_sum, im_sum), (re_diff, im_diff) = cx.add((ar, ai), (br, bi)), cx.sub((br, ai), (ar, bi))
        half, plus, minus, times = cx.real(0.5), cx.plus, cx.minus, cx.times
        real = plus(plus(times(re_sum, half), times(im_sum, half_cos)), times(re_diff, half_sin))
        imag = minus(plus(times(im_diff, half), times(re_diff, half_cos)), times(im_sum, half_sin))
        dst.store(body, (real, imag), k, lane)

    return step


def _join_halves(h: int, table: MatrixAt) -> Step:
    """The inverse's first step: from bins ``z_0 .. z_h`` of a real signal of ``2 h``
    samples (the imaginary parts of bins 0 and ``h`` ignored), the ``h`` points whose
    inverse transform is its even + i odd samples: with ``a = z_k``, ``m = z_(h - k)``,
    ``E = a + conj m``, ``O = (a - conj m) w_2h^-k`` (table row ``h + k``: ``cos, sin``
    of ``2 pi k / 2h``), the point ``E + i O``."""

    def step(block: _Block, src: _Signals, dst: _Signals) -> None:
        k, at_k = block.code.range(None, block.code.index(h), "scan", within_matrix=False)
        row = at_k.ins(arith.AddiOp(k, at_k.index(h)))
        cos, sin = table.load(at_k, at_k.index(0), row), table.load(at_k, at_k.index(1), row)
        edge = _select_index(at_k, k, 0, at_k.float(0.0), at_k.float(1.0))
        mirror = at_k.ins(arith.SubiOp(at_k.index(h), k))
        lane, body = block.lanes(at_k)
        cx = _ComplexCode(body)
        (ar, ai), (mr, mi) = src.load(body, k, lane), src.load(body, mirror, lane)
        ai, mi = cx.times(ai, edge), cx.times(mi, edge)
        plus, minus = cx.plus, cx.minus
        even = (plus(ar, mr), minus(ai, mi))  # a + conj m
        odd = cx.mul((minus(ar, mr), plus(ai, mi)), (cos, sin))  # (a - conj m) w^-k
        dst.store(body, (minus(even[0], odd[1]), plus(even[1], odd[0])), k, lane)

    return step


def _workspace(op: te.DenseLinalgOp) -> tuple[int, ...]:
    """Two buffers ``(2, points, lanes)``: one signal of a block per lane (at most
    :data:`LANE_BLOCK`, fewer where the matrix has fewer), as many points as the longest
    step writes."""
    shape = op.result.type.get_shape()
    along_rows = op.kind.data.endswith("rows")
    out_points, lanes = (shape[-1], shape[-2]) if along_rows else (shape[-2], shape[-1])
    points = {"fft": out_points, "rfft": out_points, "irfft": out_points // 2 + 1}[op.routine.data]
    return (2, 2, points, LANE_BLOCK if lanes < 0 else min(LANE_BLOCK, lanes))


def _run(k: KernelArgs, steps: list[Step], source: _Signals, output: _Signals, copy_in: int, copy_out: int) -> None:
    """``steps`` on each block of lanes, the first reading ``source``, the last writing
    ``output``, the others the workspace's two buffers in turn; signals along rows are
    copied into the workspace first and out of it last (a transposition whose rows are
    read contiguously: a step reading the rows of 8 signals ``4 n`` bytes apart would
    miss the cache on every lane)."""
    c, work = k.c, k.workspace
    assert work is not None
    along_rows = source.lane_first
    shape = k.out_sizes
    lanes = shape[-2] if along_rows else shape[-1]
    if along_rows or not steps:
        steps = [_copy(copy_in), *steps, _copy(copy_out)] if along_rows else [_copy(copy_out)]
    block_size = c.index(LANE_BLOCK)
    blocks = c.ins(arith.DivUIOp(c.ins(arith.AddiOp(lanes, c.index(LANE_BLOCK - 1))), block_size))
    b, per_block = c.range(None, blocks, "scan", within_matrix=False)  # (scan loops: work the schedule counts)
    first = per_block.ins(arith.MuliOp(b, block_size))
    block = _Block(per_block, first, per_block.ins(arith.MinUIOp(block_size, per_block.ins(arith.SubiOp(lanes, first)))))
    buffers = [_Signals((work,), False, False, (buffer,)) for buffer in (0, 1)]
    for number, step in enumerate(steps):
        src = source if number == 0 else buffers[(number - 1) % 2]
        dst = output if number == len(steps) - 1 else buffers[number % 2]
        step(block, src, dst)


def _direction(k: KernelArgs) -> tuple[int, bool]:
    """The sign of the roots' angles and whether signals are rows (``kind``)."""
    direction, signals = k.op.kind.data.split()
    return (1 if direction == "inverse" else -1), signals == "rows"


@routine("fft", workspace=_workspace)
def _fft(k: KernelArgs) -> None:
    (real, imag, roots), (sign, along_rows) = k.inputs, _direction(k)
    n = k.op.result.type.get_shape()[-1 if along_rows else -2]
    output = _Signals((k.out,), along_rows, True)
    _run(k, _stages(n, sign, roots), _Signals((real, imag), along_rows, True), output, n, n)


@routine("rfft", workspace=_workspace)
def _rfft(k: KernelArgs) -> None:
    """The real signal as ``h`` complex points (even + i odd samples), their transform,
    the halves separated."""
    (x, table), (sign, along_rows) = k.inputs, _direction(k)
    h = k.op.result.type.get_shape()[-1 if along_rows else -2] - 1
    source = _Signals((x,), along_rows, True, interleaved=True)
    steps = [*_stages(h, sign, table), _separate_halves(h, table)]
    _run(k, steps, source, _Signals((k.out,), along_rows, True), h, h + 1)


@routine("irfft", workspace=_workspace)
def _irfft(k: KernelArgs) -> None:
    """The bins joined into ``h`` complex points, their inverse transform: the even +
    i odd samples."""
    (real, imag, table), (sign, along_rows) = k.inputs, _direction(k)
    h = k.op.result.type.get_shape()[-1 if along_rows else -2] // 2
    output = _Signals((k.out,), along_rows, True, interleaved=True)
    steps = [_join_halves(h, table), *_stages(h, sign, table)]
    _run(k, steps, _Signals((real, imag), along_rows, True), output, h + 1, h)

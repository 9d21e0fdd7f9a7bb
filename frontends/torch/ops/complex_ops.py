"""ATen ops on complex values (``frontends/torch/complex.py``: a complex tensor is a pair of
real ones): FFTs, complex arithmetic and products, and the conversions between complex
and real tensors.

An FFT along an axis of length ``n`` is a discrete Fourier transform: a product with the
constant matrices of ``cos`` and ``sin`` of ``2 pi j k / n`` (a GEMM per part). From
``SPLIT_FROM`` points a composite length ``n1 * n2`` is split four-step (Cooley-Tukey:
transforms of ``n2`` and ``n1`` points with twiddles between, recursively), so a line
costs ``O(n (n1 + n2))`` instead of ``O(n^2)``; prime lengths stay one GEMM.
Multi-dimensional transforms go one axis after the other; ``rfft`` keeps the ``n // 2 + 1`` non-negative frequencies, ``irfft`` rebuilds
the others by Hermitian symmetry (its bins' imaginary parts at 0 and ``n / 2`` ignored,
as torch). ``norm`` as torch: none, ``1/sqrt(n)`` (ortho) or ``1/n`` over the signal size.
"""

from __future__ import annotations

import math

import numpy as np

from ....dialects.graph.types import numpy_dtype, shape_of
from ..complex import PART_DTYPES, Complex, complex_converter
from ..context import ImportContext
from ..registry import converter


def _part_dtype(ctx: ImportContext, node) -> np.dtype:
    dtype = str(node.meta["val"].dtype)
    return PART_DTYPES[dtype] if dtype in PART_DTYPES else ctx.dtype(node)


def _dft_matrices(n: int, rows: int, dtype: np.dtype, weights: np.ndarray | None = None, columns: int | None = None):
    """(cos, sin) of ``2 pi j k / n`` as dense weights ``(rows, columns)`` (row j, column
    k; ``columns`` defaults to ``n``), each column scaled by ``weights``."""
    columns = n if columns is None else columns
    turns = np.outer(np.arange(rows), np.arange(columns)) % n  # j k mod n: exact, and small angles
    angle = 2 * np.pi * turns / n
    cos, sin = np.cos(angle), np.sin(angle)
    quarter = (4 * turns) % n == 0  # multiples of pi / 2: exactly 0 and +-1 (sin(pi) is 1.2e-16)
    q = (4 * turns // n)[quarter]
    cos[quarter], sin[quarter] = np.array([1.0, 0.0, -1.0, 0.0])[q], np.array([0.0, 1.0, 0.0, -1.0])[q]
    if weights is not None:
        cos, sin = cos * weights[None, :], sin * weights[None, :]
    return cos.astype(dtype), sin.astype(dtype)


def _along(ctx: ImportContext, x, axis: int, weight: np.ndarray):
    """``x`` with its axis ``axis`` (length ``weight.shape[1]``) replaced by ``weight @ x``."""
    b = ctx.b
    last = ctx.rank(x) - 1
    perm = list(range(last + 1))
    perm[axis], perm[last] = last, axis
    moved = x if axis == last else b.transpose(x, perm)
    y = b.dense(moved, ctx.constant(weight + 0.0))  # + 0.0: no negative zeros (they would sign zero sums)
    return y if axis == last else b.transpose(y, perm)


def _static(x, axis: int) -> int:
    n = shape_of(x.type)[axis]
    if not isinstance(n, int):
        raise NotImplementedError(f"an FFT along the symbolic axis {axis} ({n}) is not supported")
    return n


#: lengths from which a transform is split in two (four-step): below, one GEMM is cheaper
SPLIT_FROM = 128


def _split(n: int) -> int | None:
    """The factor ``n1`` of a four-step split ``n = n1 * n2`` (the largest divisor up to
    ``sqrt(n)``), or None where ``n`` is short or has no factor of 8 or more."""
    if n < SPLIT_FROM:
        return None
    n1 = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return n1 if n1 >= 8 else None


def _c2c_axis(ctx: ImportContext, z: Complex, axis: int, forward: bool) -> Complex:
    """``sum_j z_j exp(-+ 2 pi i j k / n)`` along ``axis``: one DFT GEMM per part pair,
    or for long composite lengths the four-step split (``O(n (n1 + n2))``, not ``O(n^2)``)."""
    b = ctx.b
    n = _static(z.real, axis)
    n1 = _split(n)
    if n1 is not None:
        return _four_step(ctx, z, axis, n1, forward)
    cos, sin = _dft_matrices(n, n, numpy_dtype(z.real.type.element_type))
    sign = -1.0 if forward else 1.0
    a_cos, b_cos = _along(ctx, z.real, axis, cos), _along(ctx, z.imag, axis, cos)
    a_sin, b_sin = _along(ctx, z.real, axis, sign * sin), _along(ctx, z.imag, axis, sign * sin)
    return Complex(b.sub(a_cos, b_sin), b.add(b_cos, a_sin))


def _four_step(ctx: ImportContext, z: Complex, axis: int, n1: int, forward: bool) -> Complex:
    """Cooley-Tukey with ``n = n1 * n2``: index ``j = j1 + n1 j2`` and ``k = k2 + n2 k1``;
    a length-``n2`` transform over ``j2``, the twiddles ``w**(j1 k2)``, a length-``n1``
    transform over ``j1``, the result read in ``(k1, k2)`` order."""
    b = ctx.b
    shape = list(shape_of(z.real.type))
    n = shape[axis]
    n2 = n // n1
    split = [*shape[:axis], n2, n1, *shape[axis + 1 :]]  # (.., j2, j1, ..)
    z = Complex(*(b.reshape(p, split) for p in (z.real, z.imag)))
    z = _c2c_axis(ctx, z, axis, forward)  # over j2 -> k2: (.., k2, j1, ..)
    angle = (-2.0 if forward else 2.0) * np.pi * np.outer(np.arange(n2), np.arange(n1)) / n
    dtype = numpy_dtype(z.real.type.element_type)
    spread = [1] * len(split)
    spread[axis], spread[axis + 1] = n2, n1
    twiddle = Complex(ctx.constant(np.cos(angle).astype(dtype).reshape(spread)),
                      ctx.constant(np.sin(angle).astype(dtype).reshape(spread)))  # fmt: skip
    z = _times(ctx, z, twiddle)
    z = _c2c_axis(ctx, z, axis + 1, forward)  # over j1 -> k1: (.., k2, k1, ..)
    order = list(range(len(split)))
    order[axis], order[axis + 1] = axis + 1, axis
    return Complex(*(b.reshape(b.transpose(p, order), shape) for p in (z.real, z.imag)))


def _times(ctx: ImportContext, x: Complex, y: Complex) -> Complex:
    b = ctx.b
    real = b.sub(b.mul(x.real, y.real), b.mul(x.imag, y.imag))
    return Complex(real, b.add(b.mul(x.real, y.imag), b.mul(x.imag, y.real)))


def _normalised(ctx: ImportContext, value, normalization: int, signal: int):
    """torch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n."""
    scale = {0: 1.0, 1: 1.0 / math.sqrt(signal), 2: 1.0 / signal}[normalization]
    if scale == 1.0:
        return value
    if isinstance(value, Complex):
        return Complex(*(ctx.b.mul(p, ctx.scalar(scale, p)) for p in (value.real, value.imag)))
    return ctx.b.mul(value, ctx.scalar(scale, value))


def _axes(ctx: ImportContext, x, dims) -> list[int]:
    return [d % ctx.rank(x) for d in dims]


@complex_converter("aten._fft_r2c.default")
def fft_r2c(ctx: ImportContext, node, x, dim, normalization, onesided):
    """A real signal's transform: the last axis real-to-complex (its non-negative
    frequencies when ``onesided``), then the other axes complex-to-complex."""
    x = ctx.cast(x, _part_dtype(ctx, node))
    axes = _axes(ctx, x, dim)
    n, last = _static(x, axes[-1]), axes[-1]
    bins = n // 2 + 1 if onesided else n
    if _split(n) is not None:  # the complex transform of (x, 0), its first bins
        z = _c2c_axis(ctx, _as_complex(ctx, x, numpy_dtype(x.type.element_type)), last, forward=True)
        if bins < n:
            z = Complex(*(ctx.b.slice(p, [0], [bins], [last], [1]) for p in (z.real, z.imag)))
    else:
        cos, sin = _dft_matrices(n, bins, numpy_dtype(x.type.element_type))
        z = Complex(_along(ctx, x, last, cos), _along(ctx, x, last, -sin))
    for axis in axes[:-1]:
        z = _c2c_axis(ctx, z, axis, forward=True)
    return _normalised(ctx, z, normalization, math.prod(_static(x, a) for a in axes))


@complex_converter("aten._fft_c2c.default")
def fft_c2c(ctx: ImportContext, node, z, dim, normalization, forward):
    z = _as_complex(ctx, z, _part_dtype(ctx, node))
    axes = _axes(ctx, z.real, dim)
    for axis in axes:
        z = _c2c_axis(ctx, z, axis, forward)
    return _normalised(ctx, z, normalization, math.prod(_static(z.real, a) for a in axes))


@complex_converter("aten._fft_c2r.default")
def fft_c2r(ctx: ImportContext, node, z, dim, normalization, last_dim_size):
    """A Hermitian signal back to real: the other axes inverse complex-to-complex, then
    the last from its ``last_dim_size // 2 + 1`` bins, each but the first (and the middle
    one of an even length) counted twice for its mirror."""
    b = ctx.b
    axes = _axes(ctx, z.real, dim)
    for axis in axes[:-1]:
        z = _c2c_axis(ctx, z, axis, forward=False)
    axis, length = axes[-1], last_dim_size
    bins = length // 2 + 1
    have = _static(z.real, axis)
    if have < bins:  # missing bins are zeros
        high = [0] * ctx.rank(z.real)
        high[axis] = bins - have
        z = Complex(*(b.pad(p, [0] * len(high), high, 0.0) for p in (z.real, z.imag)))
    elif have > bins:
        z = Complex(*(b.slice(p, [0], [bins], [axis], [1]) for p in (z.real, z.imag)))
    signal = math.prod([_static(z.real, a) for a in axes[:-1]] + [length])
    if _split(length) is not None:  # the whole Hermitian spectrum, inverse complex transform, real part
        mirror = [b.flip(b.slice(p, [1], [length - bins + 1], [axis], [1]), [axis]) for p in (z.real, z.imag)]
        whole = Complex(b.concat([z.real, mirror[0]], axis=axis), b.concat([z.imag, b.neg(mirror[1])], axis=axis))
        return _normalised(ctx, _c2c_axis(ctx, whole, axis, forward=False).real, normalization, signal)
    twice = np.full(bins, 2.0)
    twice[0] = 1.0
    if length % 2 == 0:
        twice[-1] = 1.0
    # x_j = sum_k w_k (Re z_k cos(2 pi j k / L) - Im z_k sin(2 pi j k / L)): weights (L, bins)
    cos, sin = _dft_matrices(length, length, numpy_dtype(z.real.type.element_type), twice, bins)
    x = b.sub(_along(ctx, z.real, axis, cos), _along(ctx, z.imag, axis, sin))
    return _normalised(ctx, x, normalization, signal)


def _as_complex(ctx: ImportContext, x, dtype: np.dtype) -> Complex:
    """A complex value, or a real tensor with a zero imaginary part."""
    if isinstance(x, Complex):
        return x
    x = ctx.cast(x, dtype)
    return Complex(x, ctx.b.mul(x, ctx.scalar(0.0, x)))


def _operand(ctx: ImportContext, node, v):
    """An operand of complex arithmetic: a Complex, or a real tensor or number."""
    if isinstance(v, Complex):
        return v
    if isinstance(v, complex):
        dtype = _part_dtype(ctx, node)
        return Complex(ctx.constant(np.asarray(v.real, dtype)), ctx.constant(np.asarray(v.imag, dtype)))
    if isinstance(v, bool | int | float):
        return ctx.constant(np.asarray(v, _part_dtype(ctx, node)))
    return ctx.cast(v, _part_dtype(ctx, node))


@complex_converter("aten.mul.Tensor", "aten.mul.Scalar")
def mul(ctx: ImportContext, node, x, y):
    b = ctx.b
    x, y = _operand(ctx, node, x), _operand(ctx, node, y)
    if not isinstance(x, Complex):
        x, y = y, x
    if not isinstance(y, Complex):  # complex times real
        return Complex(b.mul(x.real, y), b.mul(x.imag, y))
    return _times(ctx, x, y)


def _additive(method: str):
    def convert(ctx: ImportContext, node, x, y, alpha=1):
        dtype = _part_dtype(ctx, node)
        x, y = _as_complex(ctx, _operand(ctx, node, x), dtype), _as_complex(ctx, _operand(ctx, node, y), dtype)
        if alpha != 1:
            y = Complex(ctx.b.mul(y.real, ctx.scalar(alpha, y.real)), ctx.b.mul(y.imag, ctx.scalar(alpha, y.imag)))
        return Complex(getattr(ctx.b, method)(x.real, y.real), getattr(ctx.b, method)(x.imag, y.imag))

    return convert


complex_converter("aten.add.Tensor", "aten.add.Scalar")(_additive("add"))
complex_converter("aten.sub.Tensor", "aten.sub.Scalar")(_additive("sub"))


@complex_converter("aten.div.Tensor", "aten.div.Scalar")
def div(ctx: ImportContext, node, x, y):
    b = ctx.b
    x, y = _operand(ctx, node, x), _operand(ctx, node, y)
    x = _as_complex(ctx, x, _part_dtype(ctx, node))
    if not isinstance(y, Complex):
        return Complex(b.div(x.real, y), b.div(x.imag, y))
    scale = b.add(b.mul(y.real, y.real), b.mul(y.imag, y.imag))
    return Complex(
        b.div(b.add(b.mul(x.real, y.real), b.mul(x.imag, y.imag)), scale),
        b.div(b.sub(b.mul(x.imag, y.real), b.mul(x.real, y.imag)), scale),
    )


@complex_converter("aten.neg.default", "aten._neg_view.default")
def neg(ctx: ImportContext, node, z):
    return Complex(ctx.b.neg(z.real), ctx.b.neg(z.imag))


@converter("aten._neg_view.default")
def neg_view(ctx: ImportContext, node, x):
    """The imaginary part of a conjugate is a negated view of a real tensor."""
    return ctx.b.neg(x)


@complex_converter("aten._conj.default", "aten.conj_physical.default", "aten._conj_physical.default", "aten.conj.default")
def conj(ctx: ImportContext, node, z):
    return Complex(z.real, ctx.b.neg(z.imag))


@complex_converter("aten.resolve_conj.default", "aten.resolve_neg.default")
def resolve(ctx: ImportContext, node, z):
    return z


def _product(method: str):
    def convert(ctx: ImportContext, node, x, y):
        b, dtype = ctx.b, _part_dtype(ctx, node)
        x, y = _as_complex(ctx, x, dtype), _as_complex(ctx, y, dtype)
        f = getattr(b, method)
        return Complex(b.sub(f(x.real, y.real), f(x.imag, y.imag)), b.add(f(x.real, y.imag), f(x.imag, y.real)))

    return convert


complex_converter("aten.bmm.default")(_product("batch_matmul"))
complex_converter("aten.mm.default")(_product("matmul"))


@complex_converter("aten.abs.default")
def abs_(ctx: ImportContext, node, z):
    b = ctx.b
    return b.sqrt(b.add(b.mul(z.real, z.real), b.mul(z.imag, z.imag)))


@complex_converter("aten.angle.default")
def angle(ctx: ImportContext, node, z):
    return ctx.b.atan2(z.imag, z.real)


@complex_converter("aten.real.default")
def real(ctx: ImportContext, node, z):
    return z.real


@complex_converter("aten.imag.default")
def imag(ctx: ImportContext, node, z):
    return z.imag


@complex_converter("aten.view_as_real.default")
def view_as_real(ctx: ImportContext, node, z):
    """(..., 2): the parts stacked last."""
    shape = shape_of(z.real.type)
    return ctx.b.concat([ctx.b.reshape(p, (*shape, 1)) for p in (z.real, z.imag)], axis=len(shape))


@complex_converter("aten.view_as_complex.default")
def view_as_complex(ctx: ImportContext, node, x):
    last = ctx.rank(x) - 1
    return Complex(*(ctx.b.reshape(ctx.b.slice(x, [k], [k + 1], [last], [1]), ctx.shape(node)) for k in (0, 1)))


@complex_converter("aten.complex.default")
def complex_(ctx: ImportContext, node, re, im):
    dtype = _part_dtype(ctx, node)
    re, im = ctx.cast(re, dtype), ctx.cast(im, dtype)
    shape = ctx.shape(node)
    return Complex(ctx.b.broadcast_to(re, shape), ctx.b.broadcast_to(im, shape))


@complex_converter("aten.polar.default")
def polar(ctx: ImportContext, node, magnitude, phase):
    b = ctx.b
    return Complex(b.mul(magnitude, b.cos(phase)), b.mul(magnitude, b.sin(phase)))


@complex_converter("aten.full.default", "aten.full_like.default")
def full(ctx: ImportContext, node, size_or_like, fill_value, **kwargs):
    dtype = _part_dtype(ctx, node)
    value = complex(fill_value)
    parts = (ctx.constant(np.asarray(p, dtype)) for p in (value.real, value.imag))
    return Complex(*(ctx.b.broadcast_to(p, ctx.shape(node)) for p in parts))


@complex_converter("aten.constant_pad_nd.default")
def constant_pad_nd(ctx: ImportContext, node, z, pad, value=0):
    """Each part padded with its part of ``value`` (the real converter, once per part)."""
    from ..registry import CONVERTERS

    value = complex(value)
    ctx.complex_parts = True
    try:
        pad_part = CONVERTERS["aten.constant_pad_nd.default"]
        return Complex(pad_part(ctx, node, z.real, pad, value.real), pad_part(ctx, node, z.imag, pad, value.imag))
    finally:
        ctx.complex_parts = False


def _complex_like(ctx: ImportContext, node, value) -> Complex:
    """``value`` (complex or real) as the node's complex dtype and shape."""
    dtype, shape = _part_dtype(ctx, node), ctx.shape(node)
    z = _as_complex(ctx, value, dtype)
    parts = (ctx.cast(z.real, dtype), ctx.cast(z.imag, dtype))
    return Complex(*(p if shape_of(p.type) == shape else ctx.b.broadcast_to(p, shape) for p in parts))


@complex_converter("aten._to_copy.default")
def to_copy(ctx: ImportContext, node, x, **kwargs):
    """A real tensor made complex (zero imaginary part); a complex one made real keeps its
    real part, as torch."""
    if str(node.meta["val"].dtype) not in PART_DTYPES:
        return ctx.cast(x.real, ctx.dtype(node))
    return _complex_like(ctx, node, x)


@complex_converter("aten.copy.default")
def copy(ctx: ImportContext, node, destination, source, non_blocking=False):
    """The value a complex ``destination`` holds after ``destination.copy_(source)``."""
    return _complex_like(ctx, node, source)

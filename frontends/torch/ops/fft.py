"""FFTs (``aten._fft_r2c``, ``_fft_c2c``, ``_fft_c2r``) as real graph ops on the parts of
complex values (``frontends/torch/complex.py``).

Where the length (for a real transform: half the length) has no prime factor above the
kernel's radices (13), from :data:`KERNEL_FROM` points on, a transform is one FFT kernel:
``graph.fft`` (complex), ``graph.rfft`` (real to its non-negative frequencies),
``graph.irfft`` (back), on a view of the tensor as matrices whose rows (a transform along
the last axis) or columns (along another axis) are the signals
(``dialects/graph/fourier.py``): any view for static shapes, the tensor itself for
symbolic ones (the axis one of the last two). Along an axis of symbolic length, complex
transforms multiply by DFT matrices computed in the model (``_symbolic_dft``).

Otherwise an FFT along an axis of length ``n`` is a discrete Fourier transform: a product
with the constant matrices of ``cos`` and ``sin`` of ``2 pi j k / n`` (one GEMM of both
parts, ``_contract``). From ``SPLIT_FROM`` points a composite length ``n1 * n2`` is split
four-step (Cooley-Tukey: transforms of ``n2`` and ``n1`` points with twiddles between,
recursively), so a line costs ``O(n (n1 + n2))`` instead of ``O(n^2)``; prime lengths
stay one GEMM. A real signal of even length ``n`` there is transformed as a complex one
of ``n / 2`` points (its even samples the real part, its odd ones the imaginary part)
and one elementwise pass that separates the two (``_rfft_by_halves``); ``irfft`` runs
the same backwards (``_irfft_by_halves``), where the half length is itself split.

Multi-dimensional transforms go one axis after the other; ``rfft`` keeps the ``n // 2 + 1``
non-negative frequencies, ``irfft`` rebuilds the others by Hermitian symmetry (its bins'
imaginary parts at 0 and ``n / 2`` ignored, as torch). ``norm`` as torch: none,
``1/sqrt(n)`` (ortho) or ``1/n`` over the signal size.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.fourier import radices, unit_circle
from ....dialects.graph.types import numpy_dtype, shape_of
from ..complex import Complex, complex_converter
from ..context import ImportContext
from .complex_ops import as_complex, part_dtype, times


def _dft_matrices(n: int, rows: int, dtype: np.dtype, weights: np.ndarray | None = None, columns: int | None = None):
    """(cos, sin) of ``2 pi j k / n`` as dense weights ``(rows, columns)`` (row j, column
    k; ``columns`` defaults to ``n``), each column scaled by ``weights``."""
    columns = n if columns is None else columns
    cos, sin = unit_circle(np.outer(np.arange(rows), np.arange(columns)), n)
    if weights is not None:
        cos, sin = cos * weights[None, :], sin * weights[None, :]
    return cos.astype(dtype), sin.astype(dtype)


def _along_last(ctx: ImportContext, parts: tuple, axis: int, transform) -> tuple:
    """``transform(*parts)`` with ``axis`` moved last, the results moved back."""
    last = ctx.rank(parts[0]) - 1
    order = list(range(last + 1))
    order[axis], order[last] = last, axis
    moved = [p if axis == last else ctx.b.transpose(p, order) for p in parts]
    return tuple(p if axis == last else ctx.b.transpose(p, order) for p in transform(*moved))


def _contract(ctx: ImportContext, parts: list, axis: int, weight: np.ndarray, sizes: list[int]) -> list:
    """``weight @ [parts]`` along ``axis``: the parts side by side (moved to the last axis
    and joined: ``K`` each) times ``weight`` (``(sum(sizes), K * len(parts))``) in ONE
    dense, the result cut into pieces of ``sizes``, each moved back to ``axis``. A complex
    product is one GEMM of twice the size, not four, and needs no pass to add them."""
    b = ctx.b
    last = ctx.rank(parts[0]) - 1

    def product(*moved):
        joined = moved[0] if len(moved) == 1 else b.concat(list(moved), axis=last)
        y = b.dense(joined, ctx.constant(weight + 0.0))  # + 0.0: no negative zeros (they would sign zero sums)
        starts = np.cumsum([0, *sizes])
        return [y if len(sizes) == 1 else b.slice(y, [int(lo)], [int(hi)], [last], [1]) for lo, hi in zip(starts, starts[1:])]

    return list(_along_last(ctx, tuple(parts), axis, product))


def _static(x, axis: int) -> int:
    n = shape_of(x.type)[axis]
    if not isinstance(n, int):
        raise NotImplementedError(f"an FFT along the symbolic axis {axis} ({n}) is not supported")
    return n


#: lengths from which a transform is split in two (four-step): below, one GEMM is cheaper
SPLIT_FROM = 128
#: lengths from which a transform runs as ``graph.fft`` (where it can): below, one GEMM is as cheap
KERNEL_FROM = 16
#: lines ``graph.fft`` transforms together (its lanes: vectors of them)
LANES = 16


def _split(n: int) -> int | None:
    """The factor ``n1`` of a four-step split ``n = n1 * n2`` (the largest divisor up to
    ``sqrt(n)``), or None where ``n`` is short or has no factor of 8 or more."""
    if n < SPLIT_FROM:
        return None
    n1 = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return n1 if n1 >= 8 else None


def _by_kernel(shape, axis: int, n: int) -> bool:
    """Whether ``n`` points along ``axis`` of a tensor of ``shape`` are transformed by an
    FFT kernel: a length of :data:`KERNEL_FROM` points or more without a prime factor
    above the kernel's largest radix, and static sizes or the axis one of the last two
    (the tensor is then its own view: :func:`_matrices`)."""
    shape_fits = all(isinstance(d, int) for d in shape) or (len(shape) >= 2 and axis >= len(shape) - 2)
    return shape_fits and n >= KERNEL_FROM and radices(n) is not None


def _fast(shape, axis: int, n: int) -> bool:
    """Whether a complex transform of ``n`` points (along ``axis`` of a tensor of
    ``shape``) is faster than one DFT product: by the kernel, or split four-step."""
    return _by_kernel(shape, axis, n) or _split(n) is not None


def _by_halves(x, axis: int) -> bool:
    """Whether the real transform of ``x`` along ``axis`` goes as a complex one of ``n / 2``."""
    n = _static(x, axis)
    return n % 2 == 0 and _fast(shape_of(x.type), axis, n // 2)


def _lanes(lines: int) -> int:
    """Signals per matrix of a transform along the last axis: all of up to
    :data:`LANES`, else the smallest divisor of ``lines`` from :data:`LANES` on (the
    matrices of a batch run in parallel; a block of lanes shorter than a vector is
    computed by the kernel's scalar remainder)."""
    return max(lines, 1) if lines <= LANES else next(d for d in range(LANES, lines + 1) if lines % d == 0)


def _matrices(shape, axis: int) -> tuple[list | None, int]:
    """The view of a tensor of ``shape`` the kernels transform along ``axis`` (None: the
    tensor as it is), and its axis there: static sizes along the last axis as ``(batch,
    lanes, n)`` (rows are signals), along another as ``(outer, n, inner)`` (columns
    are); symbolic sizes along one of the last two axes, the tensor itself."""
    if not all(isinstance(d, int) for d in shape):
        return None, axis - len(shape)
    n, inner = shape[axis], math.prod(shape[axis + 1 :])
    if inner > 1:
        return [math.prod(shape[:axis]), n, inner], -2
    lines = math.prod(shape[:axis])
    lanes = _lanes(lines)
    return [lines // lanes, lanes, n], -1


def _viewed(ctx: ImportContext, x, view: list | None):
    return x if view is None else ctx.b.reshape(x, view)


def _with_length(shape, axis: int, length: int) -> list:
    shape = list(shape)
    shape[axis] = length
    return shape


def _parts(ctx: ImportContext, y, shape) -> Complex:
    """The two parts of a kernel's result ``(..., 2, rows, columns)``, each as ``shape``."""
    parts_axis = ctx.rank(y) - 3
    return Complex(*(ctx.b.reshape(ctx.b.slice(y, [k], [k + 1], [parts_axis], [1]), shape) for k in (0, 1)))


def _fft_kernel(ctx: ImportContext, z: Complex, axis: int, forward: bool) -> Complex:
    """The complex transform along ``axis`` by ``graph.fft``, on views of the parts."""
    b = ctx.b
    shape = list(shape_of(z.real.type))
    view, along = _matrices(shape, axis)
    y = b.fft(_viewed(ctx, z.real, view), _viewed(ctx, z.imag, view), axis=along, inverse=not forward)
    return _parts(ctx, y, shape)


def _rfft_kernel(ctx: ImportContext, x, axis: int) -> Complex:
    """The ``n / 2 + 1`` non-negative frequencies of the real ``x`` along ``axis`` (even
    ``n``) by ``graph.rfft``."""
    shape = list(shape_of(x.type))
    view, along = _matrices(shape, axis)
    return _parts(ctx, ctx.b.rfft(_viewed(ctx, x, view), axis=along), _with_length(shape, axis, shape[axis] // 2 + 1))


def _irfft_kernel(ctx: ImportContext, z: Complex, axis: int, length: int) -> SSAValue:
    """The real signal of even ``length`` whose ``length / 2 + 1`` bins along ``axis``
    are ``z``, by ``graph.irfft``."""
    b = ctx.b
    shape = list(shape_of(z.real.type))
    view, along = _matrices(shape, axis)
    x = b.irfft(_viewed(ctx, z.real, view), _viewed(ctx, z.imag, view), length=length, axis=along)
    return _viewed(ctx, x, None if view is None else _with_length(shape, axis, length))


def _c2c_axis(ctx: ImportContext, z: Complex, axis: int, forward: bool) -> Complex:
    """``sum_j z_j exp(-+ 2 pi i j k / n)`` along ``axis``: the FFT kernel where it applies,
    else one DFT GEMM of both parts, or for long composite lengths the four-step split
    (``O(n (n1 + n2))``, not ``O(n^2)``); along a symbolic axis a DFT whose matrices are
    computed in the model."""
    if not isinstance(shape_of(z.real.type)[axis], int):
        return _symbolic_dft(ctx, z, axis, forward)
    n = _static(z.real, axis)
    if _by_kernel(shape_of(z.real.type), axis, n):
        return _fft_kernel(ctx, z, axis, forward)
    n1 = _split(n)
    if n1 is not None:
        return _four_step(ctx, z, axis, n1, forward)
    cos, sin = _dft_matrices(n, n, numpy_dtype(z.real.type.element_type))
    sin = -sin if forward else sin
    return Complex(*_contract(ctx, [z.real, z.imag], axis, np.block([[cos, -sin], [sin, cos]]), [n, n]))


def _angles(ctx: ImportContext, rows, columns, n, like) -> tuple[SSAValue, SSAValue]:
    """``cos`` and ``sin`` of ``2 pi (r c mod n) / n`` as ``(rows, columns)`` matrices in
    ``like``'s float type, computed in the model (the angles reduced exactly in integers
    first)."""
    b = ctx.b
    dtype = numpy_dtype(like.type.element_type)
    r, c = ctx.positions(rows, [like]), ctx.positions(columns, [like])
    size = ctx.size_value(n)
    turns = b.fmod(b.mul(b.reshape(r, (rows, 1)), b.reshape(c, (1, columns))), size)
    angle = b.mul(ctx.cast(turns, dtype), b.div(ctx.scalar(2 * math.pi, like), ctx.cast(size, dtype)))
    return b.cos(angle), b.sin(angle)


def _symbolic_dft(ctx: ImportContext, z: Complex, axis: int, forward: bool) -> Complex:
    """The transform along an axis of symbolic length ``n`` (FNet's sequence): products
    with ``cos`` and ``sin`` of ``2 pi j k / n`` computed on each call (``O(n^2)`` per
    line). The matrices are symmetric: dense's ``x @ W^T`` is ``x @ W``."""
    b = ctx.b
    n = shape_of(z.real.type)[axis]
    cos, sin = _angles(ctx, n, n, n, z.real)
    sin = b.neg(sin) if forward else sin

    def transform(re, im):
        return b.sub(b.dense(re, cos), b.dense(im, sin)), b.add(b.dense(re, sin), b.dense(im, cos))

    return Complex(*_along_last(ctx, (z.real, z.imag), axis, transform))


def _symbolic_rfft(ctx: ImportContext, x, axis: int, bins) -> Complex:
    """The first ``bins`` frequencies of the real ``x`` along an axis of symbolic length
    ``n``: ``X_k = sum_j x_j (cos - i sin)(2 pi j k / n)``, weights ``(bins, n)``."""
    b = ctx.b
    n = shape_of(x.type)[axis]
    cos, sin = _angles(ctx, bins, n, n, x)
    return Complex(*_along_last(ctx, (x,), axis, lambda v: (b.dense(v, cos), b.neg(b.dense(v, sin)))))


def _symbolic_irfft(ctx: ImportContext, z: Complex, axis: int, length) -> SSAValue:
    """The real signal of symbolic ``length`` from its bins along ``axis``: ``x_j = sum_k
    w_k (Re z_k cos - Im z_k sin)(2 pi j k / length)``, ``w_k`` 2 for the bins that stand
    for their mirror too (1 for bin 0 and, for an even length, bin ``length / 2``)."""
    b = ctx.b
    bins = shape_of(z.real.type)[axis]
    cos, sin = _angles(ctx, length, bins, length, z.real)
    k = ctx.positions(bins, [z.real])
    alone = b.bitwise_or(b.compare(k, ctx.constant(np.int64(0)), "eq"),
                         b.compare(b.mul(k, ctx.constant(np.int64(2))), ctx.size_value(length), "eq"))  # fmt: skip
    weight = b.reshape(b.where(alone, ctx.scalar(1.0, z.real), ctx.scalar(2.0, z.real)), (1, bins))
    cos, sin = b.mul(cos, weight), b.mul(sin, weight)
    (x,) = _along_last(ctx, (z.real, z.imag), axis, lambda re, im: (b.sub(b.dense(re, cos), b.dense(im, sin)),))
    return x


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
    cos, sin = unit_circle(np.outer(np.arange(n2), np.arange(n1)), n)
    spread = [1] * len(split)
    spread[axis], spread[axis + 1] = n2, n1
    z = times(ctx, z, _constant_complex(ctx, z.real, cos, -sin if forward else sin, spread))
    z = _c2c_axis(ctx, z, axis + 1, forward)  # over j1 -> k1: (.., k2, k1, ..)
    order = list(range(len(split)))
    order[axis], order[axis + 1] = axis + 1, axis
    return Complex(*(b.reshape(b.transpose(p, order), shape) for p in (z.real, z.imag)))


def _constant_complex(ctx: ImportContext, like, real: np.ndarray, imag: np.ndarray, shape) -> Complex:
    """Constants of ``like``'s element type, reshaped to ``shape`` (to broadcast)."""
    dtype = numpy_dtype(like.type.element_type)
    return Complex(ctx.constant(real.astype(dtype).reshape(shape)), ctx.constant(imag.astype(dtype).reshape(shape)))


def _along_axis(ctx: ImportContext, like, axis: int, values: np.ndarray):
    """``values`` (one per position of ``axis``) as a constant that broadcasts against ``like``."""
    shape = [1] * ctx.rank(like)
    shape[axis] = len(values)
    return ctx.constant(values.astype(numpy_dtype(like.type.element_type)).reshape(shape))


def _cut(ctx: ImportContext, z: Complex, axis: int, start: int, stop: int) -> Complex:
    return Complex(*(ctx.b.slice(p, [start], [stop], [axis], [1]) for p in (z.real, z.imag)))


def _join(ctx: ImportContext, pieces: list[Complex], axis: int) -> Complex:
    return Complex(*(ctx.b.concat([z.part(k) for z in pieces], axis=axis) for k in (0, 1)))


def _pick(ctx: ImportContext, z: Complex, axis: int, positions: np.ndarray) -> Complex:
    """``z`` at ``positions`` along ``axis`` (a gather: one read per element, where a
    concatenation of pieces would compute every piece for each element)."""
    indices = ctx.constant(positions.astype(np.int64))
    return Complex(*(ctx.b.take(p, indices, axis=axis) for p in (z.real, z.imag)))


def _flip(ctx: ImportContext, z: Complex, axis: int) -> Complex:
    return Complex(*(ctx.b.flip(p, [axis]) for p in (z.real, z.imag)))


def _with_mirror(ctx: ImportContext, z: Complex, axis: int, stop: int) -> Complex:
    """``z`` followed by the conjugates of its bins ``stop - 1`` down to 1 along ``axis``:
    the negative frequencies of a real signal's spectrum (``X_(n-k) = conj X_k``)."""
    mirror = _flip(ctx, _cut(ctx, z, axis, 1, stop), axis)
    return _join(ctx, [z, Complex(mirror.real, ctx.b.neg(mirror.imag))], axis)


def _rfft_by_halves(ctx: ImportContext, x, axis: int) -> Complex:
    """The ``n / 2 + 1`` non-negative frequencies of the real ``x`` (even length ``n``
    along ``axis``) from one complex transform of ``h = n / 2`` points: ``Z`` of
    ``z_j = x_2j + i x_2j+1``; with ``A_k = Z_(k mod h)`` and ``B_k = Z_(h - k mod h)``
    the even samples' transform is ``E = (A + conj B) / 2``, the odd ones'
    ``O = (A - conj B) / 2i``, and ``X_k = E_k + exp(-2 pi i k / n) O_k``."""
    b = ctx.b
    n = _static(x, axis)
    h = n // 2
    z = Complex(b.slice(x, [0], [n], [axis], [2]), b.slice(x, [1], [n], [axis], [2]))
    z = _c2c_axis(ctx, z, axis, forward=True)
    a = _pick(ctx, z, axis, np.arange(h + 1) % h)
    m = _pick(ctx, z, axis, (h - np.arange(h + 1)) % h)
    cos, sin = unit_circle(np.arange(h + 1), n)
    half_cos, half_sin = _along_axis(ctx, x, axis, cos / 2), _along_axis(ctx, x, axis, sin / 2)
    half = ctx.scalar(0.5, x)
    # 2 E = (Ar + Br, Ai - Bi), 2 i O = (Ar - Br, Ai + Bi): X = E + (cos - i sin) O
    re_sum, re_diff = b.add(a.real, m.real), b.sub(m.real, a.real)
    im_sum, im_diff = b.add(a.imag, m.imag), b.sub(a.imag, m.imag)
    real = b.add(b.add(b.mul(re_sum, half), b.mul(im_sum, half_cos)), b.mul(re_diff, half_sin))
    imag = b.sub(b.add(b.mul(im_diff, half), b.mul(re_diff, half_cos)), b.mul(im_sum, half_sin))
    return Complex(real, imag)


def _irfft_by_halves(ctx: ImportContext, z: Complex, axis: int) -> SSAValue:
    """The real signal of even length ``n`` whose non-negative frequencies are ``z``
    (``h + 1`` bins along ``axis``, ``h = n / 2``; the imaginary parts of bins 0 and ``h``
    ignored): with ``A_k = z_k`` and ``B_k = z_(h - k)``, ``k < h``, the even samples'
    spectrum is ``A + conj B``, the odd ones' ``(A - conj B) exp(2 pi i k / n)``; one
    inverse complex transform of ``h`` points of even + i odd gives ``x_2j + i x_2j+1``."""
    b = ctx.b
    h = _static(z.real, axis) - 1
    n = 2 * h
    edges = np.ones(h + 1)
    edges[0] = edges[h] = 0.0
    z = Complex(z.real, b.mul(z.imag, _along_axis(ctx, z.imag, axis, edges)))
    a, m = _cut(ctx, z, axis, 0, h), _flip(ctx, _cut(ctx, z, axis, 1, h + 1), axis)
    cos, sin = unit_circle(np.arange(h), n)
    cos, sin = _along_axis(ctx, z.real, axis, cos), _along_axis(ctx, z.real, axis, sin)
    even = Complex(b.add(a.real, m.real), b.sub(a.imag, m.imag))
    diff_re, diff_im = b.sub(a.real, m.real), b.add(a.imag, m.imag)
    odd = Complex(b.sub(b.mul(diff_re, cos), b.mul(diff_im, sin)), b.add(b.mul(diff_im, cos), b.mul(diff_re, sin)))
    signal = _c2c_axis(ctx, Complex(b.sub(even.real, odd.imag), b.add(even.imag, odd.real)), axis, forward=False)
    shape = list(shape_of(signal.real.type))
    pairs = [b.reshape(p, [*shape[: axis + 1], 1, *shape[axis + 1 :]]) for p in (signal.real, signal.imag)]
    return b.reshape(b.concat(pairs, axis=axis + 1), [*shape[:axis], n, *shape[axis + 1 :]])


def _normalised(ctx: ImportContext, value, normalization: int, sizes: list):
    """torch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n, ``n`` the product of the
    transformed ``sizes`` (symbolic ones computed in the model)."""
    if normalization == 0:
        return value
    like = value.real if isinstance(value, Complex) else value
    static = math.prod(d for d in sizes if isinstance(d, int))
    scale = ctx.scalar(1.0 / (math.sqrt(static) if normalization == 1 else static), like)
    symbolic = [d for d in sizes if not isinstance(d, int)]
    if symbolic:
        dtype = numpy_dtype(like.type.element_type)
        count = ctx.cast(ctx.size_value(symbolic[0]), dtype)
        for d in symbolic[1:]:
            count = ctx.b.mul(count, ctx.cast(ctx.size_value(d), dtype))
        scale = ctx.b.div(scale, ctx.b.sqrt(count) if normalization == 1 else count)
    if isinstance(value, Complex):
        return Complex(*(ctx.b.mul(p, scale) for p in (value.real, value.imag)))
    return ctx.b.mul(value, scale)


def _axes(ctx: ImportContext, x, dims) -> list[int]:
    return [d % ctx.rank(x) for d in dims]


@complex_converter("aten._fft_r2c.default")
def fft_r2c(ctx: ImportContext, node, x, dim, normalization, onesided):
    """A real signal's transform: the last axis real-to-complex (its non-negative
    frequencies when ``onesided``), then the other axes complex-to-complex."""
    x = ctx.cast(x, part_dtype(ctx, node))
    axes = _axes(ctx, x, dim)
    last = axes[-1]
    if not isinstance(shape_of(x.type)[last], int):  # through DFT matrices computed in the model
        if onesided:
            z = _symbolic_rfft(ctx, x, last, ctx.shape(node)[last])
        else:
            z = _c2c_axis(ctx, as_complex(ctx, x, numpy_dtype(x.type.element_type)), last, forward=True)
        for axis in axes[:-1]:
            z = _c2c_axis(ctx, z, axis, forward=True)
        return _normalised(ctx, z, normalization, [shape_of(x.type)[a] for a in axes])
    n = _static(x, last)
    bins = n // 2 + 1 if onesided else n
    if _by_halves(x, last):  # the n / 2 + 1 bins from a complex transform of n / 2 points
        by_kernel = _by_kernel(shape_of(x.type), last, n // 2)
        z = (_rfft_kernel if by_kernel else _rfft_by_halves)(ctx, x, last)
        if not onesided:
            z = _with_mirror(ctx, z, last, n // 2)
    elif _fast(shape_of(x.type), last, n):  # the complex transform of (x, 0), its first bins
        z = _c2c_axis(ctx, as_complex(ctx, x, numpy_dtype(x.type.element_type)), last, forward=True)
        if bins < n:
            z = _cut(ctx, z, last, 0, bins)
    else:
        cos, sin = _dft_matrices(n, bins, numpy_dtype(x.type.element_type))
        z = Complex(*_contract(ctx, [x], last, np.concatenate([cos, -sin]), [bins, bins]))
    for axis in axes[:-1]:
        z = _c2c_axis(ctx, z, axis, forward=True)
    return _normalised(ctx, z, normalization, [shape_of(x.type)[a] for a in axes])


@complex_converter("aten._fft_c2c.default")
def fft_c2c(ctx: ImportContext, node, z, dim, normalization, forward):
    z = as_complex(ctx, z, part_dtype(ctx, node))
    axes = _axes(ctx, z.real, dim)
    for axis in axes:
        z = _c2c_axis(ctx, z, axis, forward)
    return _normalised(ctx, z, normalization, [shape_of(z.real.type)[a] for a in axes])


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
    signal = [shape_of(z.real.type)[a] for a in axes[:-1]] + [length]
    if not isinstance(length, int) or not isinstance(shape_of(z.real.type)[axis], int):
        # (torch's irfft cuts or pads the spectrum to length // 2 + 1 bins before this op)
        return _normalised(ctx, _symbolic_irfft(ctx, z, axis, length), normalization, signal)
    bins = length // 2 + 1
    have = _static(z.real, axis)
    if have < bins:  # missing bins are zeros
        high = [0] * ctx.rank(z.real)
        high[axis] = bins - have
        z = Complex(*(b.pad(p, [0] * len(high), high, 0.0) for p in (z.real, z.imag)))
    elif have > bins:
        z = _cut(ctx, z, axis, 0, bins)
    shape = list(shape_of(z.real.type))
    shape[axis] = length
    if length % 2 == 0 and _by_kernel(shape, axis, length // 2):
        return _normalised(ctx, _irfft_kernel(ctx, z, axis, length), normalization, signal)
    if length % 2 == 0 and _fast(shape, axis, length // 2):
        return _normalised(ctx, _irfft_by_halves(ctx, z, axis), normalization, signal)
    if _fast(shape, axis, length):  # the whole Hermitian spectrum, inverse complex transform, real part
        whole = _with_mirror(ctx, z, axis, length - bins + 1)
        return _normalised(ctx, _c2c_axis(ctx, whole, axis, forward=False).real, normalization, signal)
    twice = np.full(bins, 2.0)
    twice[0] = 1.0
    if length % 2 == 0:
        twice[-1] = 1.0
    # x_j = sum_k w_k (Re z_k cos(2 pi j k / L) - Im z_k sin(2 pi j k / L)): weights (L, bins)
    cos, sin = _dft_matrices(length, length, numpy_dtype(z.real.type.element_type), twice, bins)
    (x,) = _contract(ctx, [z.real, z.imag], axis, np.concatenate([cos, -sin], axis=1), [length])
    return _normalised(ctx, x, normalization, signal)

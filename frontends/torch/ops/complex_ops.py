"""ATen ops on complex values (``frontends/torch/complex.py``: a complex tensor is a pair of
real ones): complex arithmetic and products, and the conversions between complex and
real tensors. FFTs are in ``fft.py``.
"""

from __future__ import annotations

import numpy as np

from ....dialects.graph.types import shape_of
from ..complex import PART_DTYPES, Complex, complex_converter
from ..context import ImportContext
from ..registry import converter


def part_dtype(ctx: ImportContext, node) -> np.dtype:
    """The float type of the parts of the node's (complex) result."""
    dtype = str(node.meta["val"].dtype)
    return PART_DTYPES[dtype] if dtype in PART_DTYPES else ctx.dtype(node)


def as_complex(ctx: ImportContext, x, dtype: np.dtype) -> Complex:
    """A complex value, or a real tensor with a zero imaginary part."""
    if isinstance(x, Complex):
        return x
    x = ctx.cast(x, dtype)
    return Complex(x, ctx.b.mul(x, ctx.scalar(0.0, x)))


def times(ctx: ImportContext, x: Complex, y: Complex) -> Complex:
    """The complex product ``x y``, part by part."""
    b = ctx.b
    real = b.sub(b.mul(x.real, y.real), b.mul(x.imag, y.imag))
    return Complex(real, b.add(b.mul(x.real, y.imag), b.mul(x.imag, y.real)))


def _operand(ctx: ImportContext, node, v):
    """An operand of complex arithmetic: a Complex, or a real tensor or number."""
    if isinstance(v, Complex):
        return v
    if isinstance(v, complex):
        dtype = part_dtype(ctx, node)
        return Complex(ctx.constant(np.asarray(v.real, dtype)), ctx.constant(np.asarray(v.imag, dtype)))
    if isinstance(v, bool | int | float):
        return ctx.constant(np.asarray(v, part_dtype(ctx, node)))
    return ctx.cast(v, part_dtype(ctx, node))


@complex_converter("aten.mul.Tensor", "aten.mul.Scalar")
def mul(ctx: ImportContext, node, x, y):
    b = ctx.b
    x, y = _operand(ctx, node, x), _operand(ctx, node, y)
    if not isinstance(x, Complex):
        x, y = y, x
    if not isinstance(y, Complex):  # complex times real
        return Complex(b.mul(x.real, y), b.mul(x.imag, y))
    return times(ctx, x, y)


def _additive(method: str):
    def convert(ctx: ImportContext, node, x, y, alpha=1):
        dtype = part_dtype(ctx, node)
        x, y = as_complex(ctx, _operand(ctx, node, x), dtype), as_complex(ctx, _operand(ctx, node, y), dtype)
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
    x = as_complex(ctx, x, part_dtype(ctx, node))
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
        b, dtype = ctx.b, part_dtype(ctx, node)
        x, y = as_complex(ctx, x, dtype), as_complex(ctx, y, dtype)
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
    dtype = part_dtype(ctx, node)
    re, im = ctx.cast(re, dtype), ctx.cast(im, dtype)
    shape = ctx.shape(node)
    return Complex(ctx.b.broadcast_to(re, shape), ctx.b.broadcast_to(im, shape))


@complex_converter("aten.polar.default")
def polar(ctx: ImportContext, node, magnitude, phase):
    b = ctx.b
    return Complex(b.mul(magnitude, b.cos(phase)), b.mul(magnitude, b.sin(phase)))


@complex_converter("aten.full.default", "aten.full_like.default")
def full(ctx: ImportContext, node, size_or_like, fill_value, **kwargs):
    dtype = part_dtype(ctx, node)
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
    dtype, shape = part_dtype(ctx, node), ctx.shape(node)
    z = as_complex(ctx, value, dtype)
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

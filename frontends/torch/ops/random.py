"""Random ATen ops: rand/randn/randint (and ``*_like``), the in-place samplers torch
exports as functional ops (uniform, normal, bernoulli, exponential, geometric,
log_normal, cauchy), randperm, multinomial, and dropout / rrelu in training mode.

Every one is built from ``graph.random`` draws (uniform [0, 1) or standard normal, see
``dialects/graph/random.py``) and ordinary graph arithmetic. The numbers follow the
same distributions as torch's, not torch's sequence: a compiled model has its own
generator (``lib.manual_seed``), and every call draws new numbers. An explicit
``generator`` is refused (the model's state is the generator; torch exports most such calls
as their own ``.generator`` overloads, which are named as unsupported).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter
from .index_checks import all_true

#: alpha dropout keeps SELU's mean and variance: its negative saturation value
_SELU_SATURATION = 1.7580993408473766


def _no_generator(generator) -> None:
    if generator is not None:
        raise NotImplementedError("an explicit torch.Generator is not supported: the compiled model has its own (lib.manual_seed)")


def _draw_dtype(dtype: np.dtype) -> type:
    """float64 is drawn as such, every other dtype from float32 draws."""
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _draw(ctx: ImportContext, distribution: str, shape, dtype: np.dtype, candidates: Sequence[SSAValue] = ()) -> SSAValue:
    """``distribution`` numbers of ``shape`` in ``dtype``."""
    sources = ctx.dim_sources(shape, candidates) if any(isinstance(d, str) for d in shape) else []
    return ctx.cast(ctx.b.draw(distribution, tuple(shape), _draw_dtype(dtype), sources), dtype)


def _like(ctx: ImportContext, node, distribution: str, candidates: Sequence[SSAValue] = ()) -> SSAValue:
    """Draws of the node's own shape and dtype."""
    return _draw(ctx, distribution, ctx.shape(node), ctx.dtype(node), candidates)


def _affine(ctx: ImportContext, x: SSAValue, scale, shift) -> SSAValue:
    """``x * scale + shift``: numbers or tensors (cast to ``x``'s type)."""

    def as_value(v):
        return ctx.cast(v, _dtype(x)) if isinstance(v, SSAValue) else ctx.scalar(v, x)

    return ctx.b.add(ctx.b.mul(x, as_value(scale)), as_value(shift))


def _dtype(x: SSAValue) -> np.dtype:
    return numpy_dtype(x.type.element_type)


@converter("aten.rand.default")
def rand(ctx: ImportContext, node, size, **kwargs):
    return _like(ctx, node, "uniform")


@converter("aten.randn.default")
def randn(ctx: ImportContext, node, size, **kwargs):
    return _like(ctx, node, "normal")


@converter("aten.rand_like.default")
def rand_like(ctx: ImportContext, node, x, **kwargs):
    return _like(ctx, node, "uniform", [x])


@converter("aten.randn_like.default")
def randn_like(ctx: ImportContext, node, x, **kwargs):
    return _like(ctx, node, "normal", [x])


def _integers(ctx: ImportContext, node, low: int, high: int, candidates: Sequence[SSAValue] = ()) -> SSAValue:
    """Uniform integers in ``[low, high)`` (from float64 draws: 53 random bits)."""
    if high <= low:
        raise ValueError(f"randint: the range [{low}, {high}) is empty")
    u = _draw(ctx, "uniform", ctx.shape(node), np.float64, candidates)
    offset = ctx.b.floor(ctx.b.mul(u, ctx.scalar(float(high - low), u)))
    return ctx.cast(ctx.b.add(ctx.cast(offset, np.int64), ctx.b.constant(np.asarray(low, np.int64))), ctx.dtype(node))


@converter("aten.randint.default")
def randint(ctx: ImportContext, node, high, size, **kwargs):
    return _integers(ctx, node, 0, high)


@converter("aten.randint.low")
def randint_low(ctx: ImportContext, node, low, high, size, **kwargs):
    return _integers(ctx, node, low, high)


@converter("aten.randint_like.default")
def randint_like(ctx: ImportContext, node, x, high, **kwargs):
    return _integers(ctx, node, 0, high, [x])


@converter("aten.randint_like.low_dtype")
def randint_like_low(ctx: ImportContext, node, x, low, high, **kwargs):
    return _integers(ctx, node, low, high, [x])


@converter("aten.uniform.default")
def uniform(ctx: ImportContext, node, x, low=0.0, high=1.0, *, generator=None):
    _no_generator(generator)
    return _affine(ctx, _like(ctx, node, "uniform", [x]), high - low, low)


@converter("aten.normal_functional.default")
def normal_functional(ctx: ImportContext, node, x, mean=0.0, std=1.0, *, generator=None):
    _no_generator(generator)
    return _affine(ctx, _like(ctx, node, "normal", [x]), std, mean)


@converter("aten.normal.float_float")
def normal_float_float(ctx: ImportContext, node, mean, std, size, *, generator=None, **kwargs):
    _no_generator(generator)
    return _affine(ctx, _like(ctx, node, "normal"), std, mean)


@converter("aten.normal.Tensor_float", "aten.normal.float_Tensor", "aten.normal.Tensor_Tensor")
def normal_tensors(ctx: ImportContext, node, mean, std=1.0, *, generator=None):
    _no_generator(generator)
    candidates = [v for v in (mean, std) if isinstance(v, SSAValue)]
    return _affine(ctx, _like(ctx, node, "normal", candidates), std, mean)


@converter("aten.log_normal.default")
def log_normal(ctx: ImportContext, node, x, mean=1.0, std=2.0, *, generator=None):
    _no_generator(generator)
    return ctx.b.exp(_affine(ctx, _like(ctx, node, "normal", [x]), std, mean))


def _exponential(ctx: ImportContext, node, candidates: Sequence[SSAValue]) -> SSAValue:
    return _exponential_of(ctx, ctx.shape(node), ctx.dtype(node), candidates)


@converter("aten.exponential.default")
def exponential(ctx: ImportContext, node, x, lambd=1.0, *, generator=None):
    _no_generator(generator)
    return ctx.b.mul(_exponential(ctx, node, [x]), ctx.scalar(1.0 / lambd, x))


@converter("aten.geometric.default")
def geometric(ctx: ImportContext, node, x, p, *, generator=None):
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    _no_generator(generator)
    if not 0 < p < 1:
        raise ValueError(f"geometric: p must be in (0, 1), got {p}")
    trials = ctx.b.ceil(ctx.b.mul(_exponential(ctx, node, [x]), ctx.scalar(-1.0 / math.log1p(-p), x)))
    return ctx.b.max(trials, ctx.scalar(1.0, x))


@converter("aten.cauchy.default")
def cauchy(ctx: ImportContext, node, x, median=0.0, sigma=1.0, *, generator=None):
    _no_generator(generator)
    u = _like(ctx, node, "uniform", [x])
    return _affine(ctx, ctx.b.tan(_affine(ctx, u, math.pi, -math.pi / 2)), sigma, median)


def _bernoulli(ctx: ImportContext, node, probability, candidates: Sequence[SSAValue]) -> SSAValue:
    """1 with ``probability`` (a number or a tensor), else 0, in the node's dtype."""
    u = _draw(ctx, "uniform", ctx.shape(node), _draw_dtype(ctx.dtype(node)), candidates)
    p = ctx.cast(probability, _dtype(u)) if isinstance(probability, SSAValue) else ctx.scalar(probability, u)
    return ctx.cast(ctx.b.compare(u, p, "lt"), ctx.dtype(node))


@converter("aten.bernoulli.default")
def bernoulli(ctx: ImportContext, node, x, *, generator=None):
    _no_generator(generator)
    return _bernoulli(ctx, node, x, [x])


@converter("aten.bernoulli.p", "aten.bernoulli.Tensor")
def bernoulli_p(ctx: ImportContext, node, x, p=0.5, *, generator=None):
    _no_generator(generator)
    return _bernoulli(ctx, node, p, [x])


@converter("aten.randperm.default")
def randperm(ctx: ImportContext, node, n, **kwargs):
    """The order that sorts n uniform float64 draws (ties: about n**2 / 2**54)."""
    if not isinstance(n, int):
        raise NotImplementedError(f"randperm of a size computed in the model ({n}) is not supported")
    u = _draw(ctx, "uniform", (n,), np.float64)
    return ctx.cast(ctx.b.argsort(u, 0), ctx.dtype(node))


@converter("aten.multinomial.default")
def multinomial(ctx: ImportContext, node, probs, num_samples, replacement=False, *, generator=None):
    """Category indices drawn with the (unnormalised) weights of the last axis. With
    replacement: the inverse of the cumulative weights at uniform draws; without: the
    ``num_samples`` largest ``weight / Exp(1)`` (an exponential race, as torch does)."""
    _no_generator(generator)
    b, shape = ctx.b, shape_of(probs.type)
    categories = shape[-1]
    weights = ctx.cast(probs, _draw_dtype(_dtype(probs)))
    _check_weights(ctx, weights)
    if not replacement:
        if isinstance(categories, str) or num_samples > categories:
            raise ValueError(f"multinomial: {num_samples} samples without replacement of {categories} categories")
        race = b.div(weights, _exponential_of(ctx, shape, _dtype(weights), [probs]))
        return b.argsort(race, len(shape) - 1, True, num_samples)
    cumulative = b.cumsum(weights, len(shape) - 1)
    total = b.reduce_sum(weights, [len(shape) - 1], True)
    u = _draw(ctx, "uniform", (*shape[:-1], num_samples, 1), _dtype(weights), [probs])
    targets = b.mul(u, b.reshape(total, (*shape[:-1], 1, 1)))  # (..., samples, 1)
    below = b.compare(b.reshape(cumulative, (*shape[:-1], 1, categories)), targets, "le")  # (..., samples, categories)
    index = b.reduce_sum(ctx.cast(below, np.int64), [len(shape)])
    return b.min(index, b.constant(np.asarray(categories - 1, np.int64)))


def _check_weights(ctx: ImportContext, weights: SSAValue) -> None:
    """torch's checks of multinomial's weights: finite and non-negative, and a positive
    sum per row (without replacement, zero weights are drawn last, as torch's)."""
    b = ctx.b
    zero = ctx.scalar(0, weights)
    valid = ctx.within(weights, zero, ctx.scalar(np.inf, weights))  # NaN: neither
    b.check(all_true(ctx, valid), "multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    b.check(all_true(ctx, b.compare(b.reduce_sum(weights, [ctx.rank(weights) - 1]), zero, "gt")),
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)")  # fmt: skip


def _exponential_of(ctx: ImportContext, shape, dtype: np.dtype, candidates: Sequence[SSAValue]) -> SSAValue:
    """Exp(1) numbers, ``-log(1 - u)`` (``1 - u`` is in (0, 1]: never infinite)."""
    u = _draw(ctx, "uniform", shape, dtype, candidates)
    return ctx.b.neg(ctx.b.log1p(ctx.b.neg(u)))


def dropout_mask(ctx: ImportContext, x: SSAValue, p: float, per_channel: bool) -> SSAValue:
    """The keep-mask of dropout in training (``True`` with probability ``1 - p``): one
    draw per element, or per (batch, channel) for feature dropout (Dropout2d/3d)."""
    shape = shape_of(x.type)
    drawn = (*shape[:2], *[1] * (len(shape) - 2)) if per_channel else shape
    u = _draw(ctx, "uniform", drawn, np.float32, [x])
    keep = ctx.b.compare(u, ctx.b.constant(np.asarray(1.0 - p, np.float32)), "lt")
    return ctx.b.broadcast_to(keep, shape) if per_channel else keep


def training_dropout(ctx: ImportContext, x: SSAValue, p: float, *, per_channel: bool = False, alpha: bool = False):
    """Dropout in training mode: ``(result, keep-mask)``. Kept values are scaled by
    ``1 / (1 - p)``; alpha dropout instead keeps SELU's mean and variance (torch's
    affine correction)."""
    b = ctx.b
    if p >= 1:
        zeros = b.mul(x, ctx.scalar(0.0, x))
        return zeros, b.compare(zeros, zeros, "ne")
    keep = dropout_mask(ctx, x, p, per_channel)
    kept = ctx.cast(keep, _dtype(x))
    if not alpha:
        return b.mul(b.mul(x, kept), ctx.scalar(1.0 / (1.0 - p), x)), keep
    a = 1.0 / math.sqrt((_SELU_SATURATION**2 * p + 1) * (1 - p))
    shift = _affine(ctx, kept, _SELU_SATURATION * a, _SELU_SATURATION * a * (p - 1))
    return b.add(b.mul(b.mul(x, kept), ctx.scalar(a, x)), shift), keep


@converter("aten.rrelu_with_noise_functional.default")
def rrelu_with_noise(ctx: ImportContext, node, x, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """Randomized leaky ReLU: in training each negative element's slope is drawn from
    U(lower, upper) (the op also returns the slopes as its noise, 1 where x > 0); in eval()
    the slope is the mean of [lower, upper] and the noise is returned unchanged."""
    b = ctx.b
    positive = b.compare(x, ctx.scalar(0.0, x), "gt")
    if not training:
        return b.where(positive, x, b.mul(x, ctx.scalar((lower + upper) / 2, x))), noise
    _no_generator(generator)
    slopes = _affine(ctx, _draw(ctx, "uniform", shape_of(x.type), _dtype(x), [x]), upper - lower, lower)
    slopes = b.where(positive, ctx.scalar(1.0, x), slopes)
    return b.mul(x, slopes), slopes


__all__ = ["dropout_mask", "training_dropout"]

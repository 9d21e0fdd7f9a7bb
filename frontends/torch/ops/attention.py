"""Scaled dot-product attention, kept whole by the importer (``KEEP_WHOLE``) and built here
from graph ops: ``softmax(q @ k^T * scale + mask) @ v``.

Kept whole, ``F.scaled_dot_product_attention`` (and ``nn.MultiheadAttention``,
``nn.TransformerEncoderLayer``, which call it) becomes two batch matmuls and a softmax, instead
of the math decomposition's expand/view/clone chain around a ``_safe_softmax``. The safe
softmax's meaning is kept: a query row whose every key is masked out yields zeros (as torch
eager does), not NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


@converter("aten.scaled_dot_product_attention.default")
def scaled_dot_product_attention(
    ctx: ImportContext, node, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
    enable_gqa=False,
):
    return attention(ctx, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


@converter("aten._scaled_dot_product_flash_attention_for_cpu.default")
def flash_attention_for_cpu(
    ctx: ImportContext, node, query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None
):
    out = attention(ctx, query, key, value, attn_mask, dropout_p, is_causal, scale, False)
    return (out, None)  # the log-sum-exp is not computed; nothing may use it


def attention(ctx: ImportContext, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """``softmax(query @ key^T * scale [+ mask]) @ value`` over the last two axes; leading axes
    are batch axes (they broadcast). ``attn_mask``: bool (True = attend) or float (added);
    ``is_causal``: query ``i`` attends to keys ``0..i`` (the upper-left aligned lower triangle)."""
    b = ctx.b
    if dropout_p:
        raise NotImplementedError(f"attention dropout (dropout_p={dropout_p}) is not supported: export in eval()")
    if is_causal and attn_mask is not None:
        raise NotImplementedError("is_causal together with an explicit attn_mask is not supported (torch rejects it)")
    q_shape, k_shape, v_shape = shape_of(query.type), shape_of(key.type), shape_of(value.type)
    rank = len(q_shape)
    if rank < 2 or len(k_shape) != rank or len(v_shape) != rank:
        raise NotImplementedError(
            f"query, key and value must have one rank >= 2, got shapes {q_shape}, {k_shape}, {v_shape}"
        )
    squeeze = rank == 2
    if squeeze:  # batch_matmul needs a batch axis
        query, key, value = (b.reshape(t, (1, *s)) for t, s in ((query, q_shape), (key, k_shape), (value, v_shape)))
        q_shape, k_shape, v_shape = (1, *q_shape), (1, *k_shape), (1, *v_shape)
        rank = 3
    if enable_gqa and rank >= 4 and q_shape[-3] != k_shape[-3]:
        key = _repeat_heads(ctx, key, k_shape, q_shape[-3])
        value = _repeat_heads(ctx, value, v_shape, q_shape[-3])
    length, depth = q_shape[-2], q_shape[-1]
    if scale is None:
        if not isinstance(depth, int):
            raise NotImplementedError(f"the default scale needs a static head size, got {depth}")
        scale = 1.0 / math.sqrt(depth)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    scores = b.batch_matmul(query, b.transpose(key, perm))
    scores = b.mul(scores, ctx.scalar(scale, scores))
    dtype = numpy_dtype(scores.type.element_type)
    minus_inf = ctx.scalar(-np.inf, scores)
    if is_causal:
        keys = k_shape[-2]
        if not isinstance(length, int) or not isinstance(keys, int):
            raise NotImplementedError(f"a causal mask needs static sequence lengths, got {length} and {keys}")
        allowed = b.constant(np.tril(np.ones((length, keys), dtype=np.bool_)))
        scores = b.where(allowed, scores, minus_inf)
    if attn_mask is not None:
        if numpy_dtype(attn_mask.type.element_type) == np.bool_:
            scores = b.where(attn_mask, scores, minus_inf)
        else:
            scores = b.add(scores, ctx.cast(attn_mask, dtype))
    weights = b.softmax(scores, rank - 1)
    if attn_mask is not None:
        # torch's safe softmax: a row with every key masked out gives zeros, not NaN
        row_max = b.reduce_max(scores, [rank - 1], keepdims=True)
        empty = b.compare(row_max, minus_inf, "eq")
        weights = b.where(empty, ctx.scalar(0.0, weights), weights)
    out = b.batch_matmul(weights, value)
    if squeeze:
        out = b.reshape(out, shape_of(out.type)[1:])
    return out


def _repeat_heads(ctx: ImportContext, x, shape, heads: int):
    """``(..., Hkv, S, E)`` -> ``(..., heads, S, E)``, each kv head repeated ``heads/Hkv`` times in
    a row (torch's ``repeat_interleave`` for grouped-query attention)."""
    kv_heads = shape[-3]
    if not isinstance(kv_heads, int) or not isinstance(heads, int) or heads % kv_heads:
        raise NotImplementedError(f"grouped-query attention with {heads} query heads and {kv_heads} key/value heads")
    lead, (s, e) = shape[:-3], shape[-2:]
    grouped = ctx.b.reshape(x, (*lead, kv_heads, 1, s, e))
    repeated = ctx.b.broadcast_to(grouped, (*lead, kv_heads, heads // kv_heads, s, e))
    return ctx.b.reshape(repeated, (*lead, heads, s, e))

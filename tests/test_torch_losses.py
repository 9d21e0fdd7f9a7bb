"""Loss functions inside a model (torch decomposes most into core ops we convert):
cross entropy with class weights, ignored targets, label smoothing and probabilities as
targets, NLL, the regression and margin losses, KL divergence, and torch 2.13's chunked
``F.linear_cross_entropy`` (``frontends/torch/python_decompositions.py``), each in every
reduction, against torch eager on fresh random inputs (odd batch and class counts)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
F = torch.nn.functional

from torch_op_cases import Fn, check  # noqa: E402

CLASSES = 7


def logits(rng):
    return torch.from_numpy(rng.standard_normal((9, CLASSES)).astype(np.float32))


def targets(rng):
    t = torch.from_numpy(rng.integers(0, CLASSES, 9))
    t[4] = 2  # the ignored class below occurs at least once
    return t


def class_weights(rng):
    return torch.from_numpy(rng.random(CLASSES).astype(np.float32) + 0.1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_classification_losses(rng, reduction):
    def fn(x, t, w):
        return (
            F.cross_entropy(x, t, reduction=reduction),
            F.cross_entropy(x, t, w, ignore_index=2, label_smoothing=0.15, reduction=reduction),
            F.cross_entropy(x, x.softmax(-1).flip(0), reduction=reduction),  # probabilities as targets
            F.nll_loss(x.log_softmax(-1), t, w, reduction=reduction),
            F.multi_margin_loss(x, t, reduction=reduction),
            F.binary_cross_entropy_with_logits(x, (x > 0.3).float(), pos_weight=w, reduction=reduction),
        )

    check(fn, (logits, targets, class_weights), rng)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_and_divergence_losses(rng, reduction):
    def fn(x, y):
        p = x.log_softmax(-1)
        return (
            F.mse_loss(x, y, reduction=reduction), F.l1_loss(x, y, reduction=reduction),
            F.smooth_l1_loss(x, y, beta=0.5, reduction=reduction), F.huber_loss(x, y, delta=0.7, reduction=reduction),
            F.kl_div(p, y.log_softmax(-1), reduction="batchmean" if reduction == "mean" else reduction, log_target=True),
            F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=reduction),
            F.poisson_nll_loss(x, y.abs(), reduction=reduction),
            F.cosine_embedding_loss(x, y, torch.where(x[:, 0] > 0, 1.0, -1.0), margin=0.2, reduction=reduction),
        )  # fmt: skip

    check(fn, (logits, logits), rng)


@pytest.mark.skipif(not hasattr(F, "linear_cross_entropy"), reason="F.linear_cross_entropy is new in torch 2.13")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_linear_cross_entropy(rng, reduction):
    """The loss of a linear layer's logits, exported (under no_grad) as torch's chunked
    custom op with chunks smaller than the batch: a linear and a cross entropy here."""
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=4)

    def fn(x, w, t, b, cw):
        return (
            F.linear_cross_entropy(x, w, t, linear_bias=b, reduction=reduction, options=options),
            F.linear_cross_entropy(x, w, t, weight=cw, ignore_index=2, reduction=reduction, options=options),
        )

    def features(r):
        return torch.from_numpy(r.standard_normal((9, 12)).astype(np.float32))

    def projection(r):
        return torch.from_numpy(r.standard_normal((CLASSES, 12)).astype(np.float32) * 0.3)

    def bias(r):
        return torch.from_numpy(r.standard_normal(CLASSES).astype(np.float32))

    makers = (features, projection, targets, bias, class_weights)
    with torch.no_grad():
        program = torch.export.export(Fn(fn), tuple(make(rng) for make in makers))
        chunked = "_linear_cross_entropy_batch_chunked" + ("_no_reduction" if reduction == "none" else "")
        assert any(chunked in str(n.target) for n in program.graph.nodes), "torch exported it differently"
        check(fn, makers, rng)

"""tk.quantize (post-training static quantization): calibration ranges, the QDQ graph it
makes (every product folds into an int8 one), and the accuracy of the int8 build
against the float32 model on fresh inputs."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph import quant
from tensorkiln.passes.fold_qdq import fold_qdq
from tensorkiln.quantization import Range, calibrate, int8_weight, quantize, uint8_params


def small_cnn(rng):
    """conv-relu, conv-relu with a residual add, global pooling, a classifier."""
    b = tk.GraphBuilder()
    x = b.input("x", (2, 3, 12, 12))
    h = b.relu(b.conv2d(x, b.constant(rng.normal(size=(16, 3, 3, 3)).astype(np.float32) * 0.3), b.constant(rng.normal(size=16).astype(np.float32)), padding=1))
    h2 = b.relu(b.conv2d(h, b.constant(rng.normal(size=(16, 16, 3, 3)).astype(np.float32) * 0.1), padding=1))
    pooled = b.reduce_mean(b.add(h, h2), [2, 3])
    logits = b.dense(pooled, b.constant(rng.normal(size=(10, 16)).astype(np.float32)), b.constant(np.zeros(10, np.float32)))
    return b.finish(logits)


@pytest.mark.parametrize("method, per_channel", [("minmax", True), ("percentile", False)])
def test_quantized_cnn_close_to_float(rng, method, per_channel):
    module = small_cnn(rng)
    samples = [rng.normal(size=(2, 3, 12, 12)).astype(np.float32) for _ in range(6)]
    qdq = quantize(module, samples, per_channel=per_channel, method=method, percentile=99.9)
    folded = qdq.clone()
    assert fold_qdq(folded) == []  # every product became an int8 one
    assert len([op for op in folded.walk() if isinstance(op, quant.QConv2dOp | quant.QDenseOp)]) == 3
    weights = [op for op in qdq.walk() if isinstance(op, quant.DequantizeOp) and op.input.type.element_type.width.data == 8 and op.dtype.data == "i8"]
    assert {op.scale.type.get_shape() for op in weights} == ({(16,), (10,)} if per_channel else {()})
    fp32, int8 = tk.build(module), tk.build(folded)
    agree, errors = [], []
    for _ in range(10):
        x = rng.normal(size=(2, 3, 12, 12)).astype(np.float32)
        want, got = fp32(x), int8(x)
        errors.append(np.abs(got - want).max() / np.abs(want).max())
        agree.append(np.mean(got.argmax(1) == want.argmax(1)))
    assert max(errors) < 0.1, errors
    assert np.mean(agree) >= 0.9


def test_calibration_ranges(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (100,))
    y = b.mul(x, 2.0)
    module = b.finish(y)
    samples = [[np.linspace(-1, 3, 100).astype(np.float32)], [np.linspace(-2, 1, 100).astype(np.float32)]]
    arg = module.body.block.ops.first.body.block.args[0]
    (r_x, r_y) = calibrate(module, [arg, y], samples)
    assert (r_x.low, r_x.high) == (-2.0, 3.0) and (r_y.low, r_y.high) == (-4.0, 6.0)
    (p,) = calibrate(module, [y], samples, method="percentile", percentile=90)
    assert -4.0 < p.low < 0 < p.high < 6.0
    (positive,) = calibrate(module, [y], [[np.linspace(1, 2, 100).astype(np.float32)]])
    assert positive.low == 0.0  # ranges include zero
    with pytest.raises(ValueError, match="method must be one of minmax, percentile"):
        calibrate(module, [y], samples, method="entropy")
    with pytest.raises(ValueError, match="at least one input sample"):
        calibrate(module, [y], [])


def test_parameters(rng):
    scale, zero_point = uint8_params(Range(-1.0, 3.0))
    assert np.isclose(scale, 4 / 255) and zero_point == 64
    w = rng.normal(size=(5, 7)).astype(np.float32)
    q, s = int8_weight(w, axis=0)
    assert q.dtype == np.int8 and s.shape == (5,) and np.abs(q).max() == 127
    assert np.abs(q * s[:, None] - w).max() <= s.max() / 2 + 1e-7
    q, s = int8_weight(w, axis=None)
    assert s.shape == () and np.abs(q * s - w).max() <= s / 2 + 1e-7

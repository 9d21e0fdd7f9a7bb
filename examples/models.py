"""Small models built with :class:`~tensorkiln.GraphBuilder`, with random weights.

Each function returns ``(module, inputs)``: a graph module and a fresh example input.
They are the bundled models of the ``tensorkiln`` command and of the benchmarks.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ..frontends.builder import GraphBuilder


def _weight(rng: np.random.Generator, *shape: int, fan_in: int) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def mlp(batch: int = 1, sizes: tuple[int, ...] = (784, 512, 256, 10), seed: int = 0) -> tuple[ModuleOp, list[np.ndarray]]:
    """A multi-layer perceptron: dense + ReLU between layers (784-512-256-10 by default)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    h = b.input("x", (batch, sizes[0]))
    for k, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        w = b.constant(_weight(rng, n_out, n_in, fan_in=n_in), f"fc{k}.weight")
        bias = b.constant(_weight(rng, n_out, fan_in=n_in), f"fc{k}.bias")
        h = b.dense(h, w, bias)
        if k < len(sizes) - 2:
            h = b.relu(h)
    return b.finish(h), [rng.standard_normal((batch, sizes[0])).astype(np.float32)]


def small_cnn(
    batch: int = 1, channels: int = 3, size: int = 32, classes: int = 10, seed: int = 0
) -> tuple[ModuleOp, list[np.ndarray]]:
    """conv3x3 -> relu -> maxpool 2x2 -> conv3x3 -> relu -> adaptive avg pool 1x1 -> dense."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.input("x", (batch, channels, size, size))
    c1, c2 = 16, 32
    w1 = b.constant(_weight(rng, c1, channels, 3, 3, fan_in=channels * 9), "conv1.weight")
    b1 = b.constant(_weight(rng, c1, fan_in=channels * 9), "conv1.bias")
    h = b.relu(b.conv2d(x, w1, b1, padding=(1, 1, 1, 1)))
    h = b.max_pool2d(h, kernel=(2, 2), strides=(2, 2))
    w2 = b.constant(_weight(rng, c2, c1, 3, 3, fan_in=c1 * 9), "conv2.weight")
    b2 = b.constant(_weight(rng, c2, fan_in=c1 * 9), "conv2.bias")
    h = b.relu(b.conv2d(h, w2, b2, padding=(1, 1, 1, 1)))
    h = b.adaptive_avg_pool2d(h, output_size=(1, 1))
    h = b.reshape(h, (batch, c2))
    wf = b.constant(_weight(rng, classes, c2, fan_in=c2), "fc.weight")
    bf = b.constant(_weight(rng, classes, fan_in=c2), "fc.bias")
    y = b.dense(h, wf, bf)
    return b.finish(y), [rng.standard_normal((batch, channels, size, size)).astype(np.float32)]


def elementwise_chain(length: int = 500, shape: tuple[int, ...] = (64, 64), seed: int = 0) -> tuple[ModuleOp, list[np.ndarray]]:
    """A chain of ``length`` elementwise ops (add, mul, tanh, relu, ...): a large graph."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    h = b.input("x", shape)
    steps = [
        lambda h: b.add(h, 0.5),
        lambda h: b.mul(h, 0.75),
        lambda h: b.tanh(h),
        lambda h: b.relu(h),
        lambda h: b.sub(h, 0.25),
    ]
    for k in range(length):
        h = steps[k % len(steps)](h)
    return b.finish(h), [rng.standard_normal(shape).astype(np.float32)]


BUNDLED = {"mlp": mlp, "cnn": small_cnn}

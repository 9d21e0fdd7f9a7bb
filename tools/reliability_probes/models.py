"""The small models the probes run (seconds to build): a chain of kernels with
temporaries at a symbolic batch, a graph.if the VM runs, a broadcast whose size the
inputs decide."""

from __future__ import annotations

import numpy as np

import tensorkiln as tk
from tensorkiln.frontends.control_flow import if_

FEATURES = 19


def chain(rng: np.random.Generator, batch: int | str = "n"):
    """dense -> softmax -> dense -> tanh -> dense: every intermediate a kernel of its own."""
    b = tk.GraphBuilder()
    h = b.input("x", (batch, FEATURES))
    for k, width in enumerate((23, 17, 7)):
        h = b.dense(h, (rng.standard_normal((width, h.type.get_shape()[1])) / 4).astype("f4"))
        h = b.softmax(h, -1) if k % 2 == 0 else b.tanh(h)
    return b.finish(h)


def branching(rng: np.random.Generator):
    """A graph.if on the sign of the input's sum, then dense + tanh (the VM runs it)."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", FEATURES))
    pred = b.compare(b.reduce_sum(x, [0, 1], False), 0.0, "gt")
    (y,) = if_(b, pred, [x], then_fn=lambda b, x: [b.softmax(b.mul(x, 2.0), -1)], else_fn=lambda b, x: [b.neg(x)])
    return b.finish(b.tanh(b.dense(y, (rng.standard_normal((7, FEATURES)) / 4).astype("f4"))))


def outer_sum(inputs: int):
    """``inputs`` inputs, each long on its own axis, broadcast together and materialized
    (a cumsum reads the whole sum): the temporary has the product of their lengths."""
    b = tk.GraphBuilder()
    xs = [b.input(f"x{k}", tuple(f"d{k}" if j == k else 1 for j in range(inputs))) for k in range(inputs)]
    total = xs[0]
    for x in xs[1:]:
        total = b.add(total, x)
    return b.finish(b.reduce_sum(b.cumsum(total, inputs - 1), list(range(inputs)), False))


def outer_inputs(inputs: int, length: int) -> list[np.ndarray]:
    return [np.ones(tuple(length if j == k else 1 for j in range(inputs)), "f4") for k in range(inputs)]


def reference(module):
    """The interpreter's callable (numpy): the answer every executor must give."""
    return tk.create_executor("interpreter", module).evaluate()

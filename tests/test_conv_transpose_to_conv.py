"""conv-transpose-to-conv: the zero-stuffed convolution computes what conv2d_transpose does
(interpreter before vs after, and compiled), on strides, paddings, output paddings,
dilations and groups."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.passes.pipeline import PassContext, run_pipeline

# (NCHW input, out channels, kernel, strides, padding (t, l, b, r), dilation, groups, output_padding)
CASES = [
    ((1, 8, 5, 5), 4, (4, 4), (2, 2), (1, 1, 1, 1), (1, 1), 1, (0, 0)),
    ((2, 4, 5, 7), 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2, (1, 1)),
    ((1, 3, 4, 5), 4, (2, 3), (1, 2), (0, 1, 0, 1), (1, 1), 1, (0, 1)),
    ((1, 4, 3, 5), 4, (3, 3), (3, 3), (2, 2, 2, 2), (2, 2), 4, (2, 2)),
    ((1, 2, 1, 1), 3, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, (0, 0)),
    ((1, 5, 6, 4), 3, (5, 2), (3, 1), (4, 0, 4, 0), (1, 1), 1, (0, 0)),  # padding beyond the kernel: crops
]


@pytest.mark.parametrize("shape, out_c, kernel, strides, padding, dilation, groups, output_padding", CASES)
def test_same_numbers(rng, shape, out_c, kernel, strides, padding, dilation, groups, output_padding):
    weight = rng.standard_normal((shape[1], out_c // groups, *kernel)).astype("f4")
    bias = rng.standard_normal(out_c).astype("f4")
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    module = b.finish(
        b.conv2d_transpose(
            x, weight, bias, strides=strides, padding=padding, dilation=dilation, groups=groups,
            output_padding=output_padding,
        )
    )
    rewritten = module.clone()
    run_pipeline(rewritten, ("conv-transpose-to-conv",), PassContext(dump_ir=False))
    assert "graph.conv2d_transpose" not in str(rewritten)
    data = rng.standard_normal(shape).astype("f4")
    expected = tk.create_executor("interpreter", module).evaluate()(data)
    np.testing.assert_allclose(tk.create_executor("interpreter", rewritten).evaluate()(data), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tk.build(module)(data), expected, rtol=1e-4, atol=1e-5)


def test_symbolic_batch(rng):
    weight = rng.standard_normal((6, 3, 4, 4)).astype("f4")
    b = tk.GraphBuilder()
    module = b.finish(b.conv2d_transpose(b.input("x", ("n", 6, 5, 4)), weight, strides=2, padding=1))
    lib = tk.build(module)
    for batch in (1, 3):
        data = rng.standard_normal((batch, 6, 5, 4)).astype("f4")
        expected = tk.create_executor("interpreter", module).evaluate()(data)
        np.testing.assert_allclose(lib(data), expected, rtol=1e-4, atol=1e-5)

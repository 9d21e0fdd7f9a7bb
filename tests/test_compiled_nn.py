"""Convolution and pooling compiled with tk.build, against the interpreter and torch."""

from __future__ import annotations

import numpy as np
import pytest
from compare import compile_and_compare

torch = pytest.importorskip("torch", reason="torch is the oracle for conv/pool semantics")
F = torch.nn.functional


def _t(a: np.ndarray):
    return torch.from_numpy(a)


CONV_CASES = [
    # (input shape, out channels, kernel, strides, padding (t, l, b, r), dilation, groups)
    ((1, 3, 9, 7), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 11, 10), 6, (3, 3), (2, 2), (1, 0, 1, 0), (2, 2), 2),
    ((1, 8, 8, 8), 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 8),  # depthwise
    ((1, 5, 7, 9), 3, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # pointwise
    ((3, 2, 13, 5), 4, (5, 2), (3, 1), (2, 1, 2, 1), (1, 1), 1),
    ((1, 1, 1, 1), 1, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("shape, out_c, kernel, strides, padding, dilation, groups", CONV_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d(rng, shape, out_c, kernel, strides, padding, dilation, groups, with_bias):
    weight = rng.standard_normal((out_c, shape[1] // groups, *kernel)).astype("f4")
    bias = rng.standard_normal(out_c).astype("f4") if with_bias else None
    top, left, bottom, right = padding
    assert (top, left) == (bottom, right)  # torch takes symmetric padding

    def expected(x):
        y = F.conv2d(_t(x), _t(weight), None if bias is None else _t(bias), strides, (top, left), dilation, groups)
        return y.numpy()

    compile_and_compare(
        rng,
        lambda b, x: b.conv2d(x, weight, bias, strides=strides, padding=padding, dilation=dilation, groups=groups),
        [shape],
        rtol=1e-4,
        atol=1e-5,
        expected=expected,
    )


def test_conv2d_asymmetric_padding(rng):
    weight = rng.standard_normal((2, 3, 3, 3)).astype("f4")

    def expected(x):
        padded = F.pad(_t(x), (1, 0, 2, 0))  # (left, right, top, bottom)
        return F.conv2d(padded, _t(weight)).numpy()

    compile_and_compare(
        rng, lambda b, x: b.conv2d(x, weight, padding=(2, 1, 0, 0)), [(1, 3, 6, 7)], rtol=1e-4, expected=expected
    )


POOL_CASES = [
    ((2, 3, 9, 8), 3, 2, 1, False),
    ((1, 2, 7, 5), 2, 2, 0, True),
    ((1, 4, 10, 10), (3, 2), (2, 3), (1, 1), True),
    ((1, 1, 5, 5), 5, 1, 0, False),
]


@pytest.mark.parametrize("shape, kernel, strides, padding, ceil_mode", POOL_CASES)
def test_max_pool2d(rng, shape, kernel, strides, padding, ceil_mode):
    pad = padding if isinstance(padding, int) else tuple(padding)
    compile_and_compare(
        rng,
        lambda b, x: b.max_pool2d(x, kernel=kernel, strides=strides, padding=padding, ceil_mode=ceil_mode),
        [shape],
        expected=lambda x: F.max_pool2d(_t(x), kernel, strides, pad, ceil_mode=ceil_mode).numpy(),
    )


def test_max_pool2d_dilation(rng):
    compile_and_compare(
        rng,
        lambda b, x: b.max_pool2d(x, kernel=2, strides=1, padding=1, dilation=2),
        [(1, 2, 6, 7)],
        expected=lambda x: F.max_pool2d(_t(x), 2, 1, 1, dilation=2).numpy(),
    )


@pytest.mark.parametrize("shape, kernel, strides, padding, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d(rng, shape, kernel, strides, padding, ceil_mode, count_include_pad):
    pad = padding if isinstance(padding, int) else tuple(padding)
    compile_and_compare(
        rng,
        lambda b, x: b.avg_pool2d(
            x, kernel=kernel, strides=strides, padding=padding, ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
        ),
        [shape],
        expected=lambda x: F.avg_pool2d(
            _t(x), kernel, strides, pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad
        ).numpy(),
    )


@pytest.mark.parametrize("shape, out", [((2, 5, 9, 7), (3, 2)), ((1, 3, 7, 7), (1, 1)), ((1, 2, 5, 4), (5, 4)), ((1, 1, 3, 8), (2, 5))])
def test_adaptive_avg_pool2d(rng, shape, out):
    compile_and_compare(
        rng,
        lambda b, x: b.adaptive_avg_pool2d(x, output_size=out),
        [shape],
        expected=lambda x: F.adaptive_avg_pool2d(_t(x), out).numpy(),
    )


@pytest.mark.parametrize("shape, out", [((2, 5, 9, 7), (3, 2)), ((1, 3, 7, 7), (1, 1)), ((1, 2, 5, 4), (5, 4)), ((1, 1, 3, 8), (2, 5))])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_adaptive_max_pool2d(rng, shape, out, dtype):
    compile_and_compare(
        rng,
        lambda b, x: b.adaptive_max_pool2d(x, output_size=out),
        [shape],
        dtype,
        expected=lambda x: F.adaptive_max_pool2d(_t(x.astype("f8")), out).numpy().astype(dtype),
    )


def test_adaptive_max_pool2d_after_conv_nhwc_symbolic_batch(rng):
    """target="llvm" converts the conv chain to NHWC: the pool follows it (no transpose
    between them), for any batch size."""
    import tensorkiln as tk
    from tensorkiln.dialects.graph.nn import AdaptiveMaxPool2dOp
    from tensorkiln.dialects.graph.shape import TransposeOp
    from tensorkiln.passes.pipeline import PassContext, run_pipeline

    weight = rng.standard_normal((4, 3, 3, 3)).astype("f4")
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 3, 9, 7))
    module = b.finish(b.adaptive_max_pool2d(b.relu(b.conv2d(x, weight, padding=1)), output_size=(2, 3)))
    converted = module.clone()
    run_pipeline(converted, ("fold-constants", "simplify", "convert-layout", "fold-constants", "dce"), PassContext(dump_ir=False))
    (pool,) = [op for op in converted.walk() if isinstance(op, AdaptiveMaxPool2dOp)]
    assert pool.data_layout() == "NHWC" and str(pool.result.type) == "tensor<?x2x3x4xf32, #graph.dims<n, _, _, _>>"
    assert len([op for op in converted.walk() if isinstance(op, TransposeOp)]) == 2  # the input's and the result's
    lib = tk.build(module)
    interpreter = tk.create_executor("interpreter", module).evaluate()
    for n in (1, 3):
        data = rng.standard_normal((n, 3, 9, 7)).astype("f4")
        expected = F.adaptive_max_pool2d(F.relu(F.conv2d(_t(data), _t(weight), padding=1)), (2, 3)).numpy()
        np.testing.assert_allclose(lib(data), expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(interpreter(data), expected, rtol=1e-4, atol=1e-5)


def test_conv2d_symbolic_batch(rng):
    import tensorkiln as tk

    weight = rng.standard_normal((4, 3, 3, 3)).astype("f4")
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 3, 8, 6))
    module = b.finish(b.max_pool2d(b.relu(b.conv2d(x, weight, padding=1)), kernel=2, strides=2))
    lib = tk.build(module)
    for n in (1, 3):
        data = rng.standard_normal((n, 3, 8, 6)).astype("f4")
        expected = F.max_pool2d(F.relu(F.conv2d(_t(data), _t(weight), padding=1)), 2, 2).numpy()
        np.testing.assert_allclose(lib(data), expected, rtol=1e-4, atol=1e-5)

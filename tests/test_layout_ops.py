"""conv2d and pooling in NHWC (weight HWIO): compiled and interpreted, against torch's NCHW."""

from __future__ import annotations

import numpy as np
import pytest
from compare import compile_and_compare
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.dialects.graph.layout import to_layout, to_nchw, weight_from_oihw

torch = pytest.importorskip("torch", reason="torch is the oracle for conv/pool semantics")
F = torch.nn.functional

TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


def _t(a: np.ndarray):
    return torch.from_numpy(np.asarray(a, order="C"))


def test_layout_helpers_are_inverse():
    assert to_layout((8, 3, 32, 30), "NHWC") == (8, 32, 30, 3)
    assert to_nchw((8, 32, 30, 3), "NHWC") == (8, 3, 32, 30)
    assert weight_from_oihw(("O", "I", "H", "W"), "NHWC") == ("H", "W", "I", "O")


# (NCHW input shape, out channels, kernel, strides, padding, dilation, groups)
CONV_CASES = [
    ((1, 3, 11, 9), 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 6, 10, 7), 4, (3, 2), (2, 1), (1, 0, 1, 0), (1, 2), 2),
    ((1, 8, 9, 13), 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),  # depthwise
    ((3, 7, 5, 6), 17, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # pointwise
    ((1, 16, 8, 8), 33, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 1),
]


@pytest.mark.parametrize("shape, out_c, kernel, strides, padding, dilation, groups", CONV_CASES)
def test_conv2d_nhwc(rng, shape, out_c, kernel, strides, padding, dilation, groups):
    weight = rng.standard_normal((out_c, shape[1] // groups, *kernel)).astype("f4")
    bias = rng.standard_normal(out_c).astype("f4")
    hwio = np.asarray(weight.transpose(2, 3, 1, 0), order="C")

    def expected(x):
        y = F.conv2d(_t(x.transpose(TO_NCHW)), _t(weight), _t(bias), strides, padding[:2], dilation, groups)
        return y.numpy().transpose(TO_NHWC)

    nhwc = to_layout(shape, "NHWC")
    got = compile_and_compare(
        rng,
        lambda b, x: b.conv2d(
            x, hwio, bias, strides=strides, padding=padding, dilation=dilation, groups=groups, layout="NHWC"
        ),
        [nhwc],
        rtol=1e-4,
        atol=1e-4,
        expected=expected,
    )
    assert got.shape[3] == out_c


POOLS = [
    ("max_pool2d", dict(kernel=3, strides=2, padding=1, ceil_mode=True), lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True)),
    ("avg_pool2d", dict(kernel=(3, 2), strides=(2, 1), padding=(1, 1)), lambda x: F.avg_pool2d(x, (3, 2), (2, 1), 1)),
    (
        "avg_pool2d",
        dict(kernel=3, strides=2, padding=1, count_include_pad=False),
        lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    ),
    ("adaptive_avg_pool2d", dict(output_size=(3, 2)), lambda x: F.adaptive_avg_pool2d(x, (3, 2))),
    ("adaptive_max_pool2d", dict(output_size=(4, 3)), lambda x: F.adaptive_max_pool2d(x, (4, 3))),
]


@pytest.mark.parametrize("op, attrs, torch_fn", POOLS)
def test_pool_nhwc(rng, op, attrs, torch_fn):
    def expected(x):
        return torch_fn(_t(x.transpose(TO_NCHW))).numpy().transpose(TO_NHWC)

    compile_and_compare(
        rng, lambda b, x: getattr(b, op)(x, layout="NHWC", **attrs), [(2, 9, 10, 7)], rtol=1e-5, expected=expected
    )


def test_conv2d_nhwc_prints_layout_and_round_trips():
    b = tk.GraphBuilder()
    x = b.input("x", (1, 8, 8, 3))
    module = b.finish(b.conv2d(x, np.ones((3, 3, 3, 4), "f4"), padding=1, layout="NHWC"))
    text = str(module)
    assert 'layout = "NHWC"' in text and "tensor<1x8x8x4xf32>" in text
    assert str(tk.parse_module(text)) == text


def test_unknown_layout_is_rejected():
    b = tk.GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    with pytest.raises(VerifyException, match="layout must be one of NCHW, NHWC, got 'NCWH'"):
        b.conv2d(x, np.ones((4, 3, 3, 3), "f4"), layout="NCWH")


def test_nhwc_weight_mismatch_names_channels():
    b = tk.GraphBuilder()
    x = b.input("x", (1, 8, 8, 3))
    with pytest.raises(VerifyException, match="weight has 4 input channels, expected 3"):
        b.conv2d(x, np.ones((3, 3, 4, 5), "f4"), layout="NHWC")

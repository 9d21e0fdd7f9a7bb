"""graph.conv2d, graph.max_pool2d, graph.avg_pool2d, graph.adaptive_avg_pool2d/adaptive_max_pool2d:
result type inference, verifier errors, textual round trip, numpy reference vs torch."""

from __future__ import annotations


import numpy as np
import pytest
from xdsl.dialects.builtin import f32, f64, i1, i32
from xdsl.utils.exceptions import VerifyException

from tensorkiln.dialects.graph import Graph, OpPatternKind
from tensorkiln.dialects.graph import nn
from tensorkiln.dialects.graph.base import ints
from tensorkiln.dialects.graph.nn import AdaptiveAvgPool2dOp, AdaptiveMaxPool2dOp, AvgPool2dOp, Conv2dOp, MaxPool2dOp
from tensorkiln.dialects.graph.types import shape_of
from graph_op_helpers import args, t, assert_round_trip, parse_and_verify, doc_examples, check_doc_example

# ---------------------------------------------------------------------------
# docstrings and pattern kinds


@pytest.mark.parametrize("line", doc_examples(nn))
def test_doc_examples_parse_and_verify(line):
    check_doc_example(line)


def test_pattern_kinds():
    for op in (Conv2dOp, MaxPool2dOp, AvgPool2dOp, AdaptiveAvgPool2dOp, AdaptiveMaxPool2dOp):
        assert op.PATTERN_KIND == OpPatternKind.OUT_ELEMWISE_FUSABLE
    assert {op.name for op in (Conv2dOp, MaxPool2dOp, AvgPool2dOp, AdaptiveAvgPool2dOp, AdaptiveMaxPool2dOp)} <= {
        op.name for op in Graph.operations
    }


# ---------------------------------------------------------------------------
# conv2d: types

CONV_CASES = [
    # x shape, w shape, kwargs, expected result shape
    ((2, 3, 7, 9), (5, 3, 3, 3), {}, (2, 5, 5, 7)),
    ((2, 3, 7, 9), (5, 3, 3, 2), dict(strides=(2, 3)), (2, 5, 3, 3)),
    ((1, 4, 11, 6), (6, 4, 3, 3), dict(padding=1), (1, 6, 11, 6)),
    ((1, 4, 11, 6), (6, 4, 3, 3), dict(padding=(2, 0)), (1, 6, 13, 4)),
    ((1, 4, 11, 6), (6, 4, 3, 3), dict(padding=(0, 1, 2, 0)), (1, 6, 11, 5)),
    ((1, 4, 11, 6), (6, 4, 3, 3), dict(dilation=(2, 1)), (1, 6, 7, 4)),
    ((3, 8, 9, 7), (6, 4, 3, 3), dict(groups=2, strides=2, padding=1), (3, 6, 5, 4)),
    ((1, 6, 10, 5), (6, 1, 5, 3), dict(groups=6, padding=(2, 1), dilation=(2, 1)), (1, 6, 6, 5)),
    ((2, 3, 5, 5), (4, 3, 5, 5), {}, (2, 4, 1, 1)),
    (("n", 3, 7, 9), (5, 3, 1, 1), dict(strides=3), ("n", 5, 3, 3)),
    (("n", 3, "h", "w"), (5, 3, 3, 3), dict(padding=1), ("n", 5, "h", "w")),
    ((1, 3, "h", 9), (5, 3, 3, 1), dict(padding=(2, 0, 0, 0)), (1, 5, "h", 9)),
    ((1, 3, "h", 8), (5, 3, 4, 2), dict(padding=(1, 0, 2, 0), strides=(1, 2)), (1, 5, "h", 4)),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs, expected", CONV_CASES)
def test_conv2d_result_type(x_shape, w_shape, kwargs, expected):
    x, w, b = args(t(x_shape), t(w_shape), t((w_shape[0],)))
    op = Conv2dOp(x, w, **kwargs)
    assert shape_of(op.result.type) == expected
    assert op.result.type.element_type == f32
    with_bias = Conv2dOp(x, w, b, **kwargs)
    assert with_bias.result.type == op.result.type
    assert with_bias.bias is b and op.bias is None


def test_conv2d_properties_normalised():
    x, w = args(t((1, 4, 9, 9)), t((4, 2, 3, 3)))
    op = Conv2dOp(x, w, strides=2, padding=(1, 2), dilation=3, groups=2)
    assert ints(op.strides) == (2, 2)
    assert ints(op.padding) == (1, 2, 1, 2)
    assert ints(op.dilation) == (3, 3)
    assert op.groups.value.data == 2


CONV_ERRORS = [
    ((1, 8, 9, 9), (6, 3, 3, 3), dict(groups=2), None,
     r"weight has 3 input channels, expected 4 = input channels 8 / groups 2"),
    ((1, 7, 9, 9), (6, 7, 3, 3), dict(groups=2), None, r"input channels 7 are not divisible by groups 2"),
    ((1, 8, 9, 9), (5, 4, 3, 3), dict(groups=2), None, r"5 output channels, not divisible by groups 2"),
    ((1, 3, 9, 9), (6, 3, 3, 3), {}, (5,), r"bias must have shape \(6,\).*got \(5,\)"),
    ((1, 3, 4, 9), (6, 3, 5, 3), {}, None, r"height: the kernel spans 5 .* more than the padded input 4"),
    ((1, 3, 9, 4), (6, 3, 3, 3), dict(dilation=(1, 2)), None, r"width: the kernel spans 5 \(kernel 3, dilation 2\)"),
    ((1, 3, 9), (6, 3, 3, 3), {}, None, r"input must have rank 4, got shape"),
    ((1, 3, 9, 9), (6, 3, 3), {}, None, r"weight must have rank 4"),
    ((1, 3, 9, 9), (6, 3, 3, 3), dict(strides=(0, 1)), None, r"strides must be >= 1, got \[0, 1\]"),
    ((1, 3, 9, 9), (6, 3, 3, 3), dict(padding=(1, 1, 1)), None, r"padding must have 4 values \(top, left, bottom, right\)"),
    ((1, 3, 9, 9), (6, 3, 3, 3), dict(padding=-1), None, r"padding must be >= 0"),
    ((1, 3, 9, 9), (6, 3, 3, 3), dict(groups=0), None, r"groups must be >= 1, got 0"),
    ((1, "c", 9, 9), (6, 3, 3, 3), {}, None, r"input channels must be static"),
]  # fmt: skip


@pytest.mark.parametrize("x_shape, w_shape, kwargs, b_shape, message", CONV_ERRORS)
def test_conv2d_errors(x_shape, w_shape, kwargs, b_shape, message):
    x, w, b = args(t(x_shape), t(w_shape), t(b_shape or (1,)))
    with pytest.raises(VerifyException, match=message):
        Conv2dOp(x, w, b if b_shape else None, **kwargs)


def test_conv2d_element_type_errors():
    x, w, wi, xb, wb = args(t((1, 3, 5, 5)), t((2, 3, 3, 3)), t((2, 3, 3, 3), i32), t((1, 3, 5, 5), i1), t((2, 3, 3, 3), i1))
    with pytest.raises(VerifyException, match="must have one element type"):
        Conv2dOp(x, wi)
    with pytest.raises(VerifyException, match="must be numeric, got i1"):
        Conv2dOp(xb, wb)
    assert Conv2dOp(args(t((1, 3, 5, 5), i32))[0], wi).result.type.element_type == i32


def test_conv2d_round_trip():
    x, w, b, xs = args(t((2, 8, 9, 7)), t((6, 4, 3, 2)), t((6,)), t(("n", 8, 9, 7)))
    text = assert_round_trip(
        [
            Conv2dOp(x, w, b, strides=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2), groups=2),
            Conv2dOp(x, w, groups=2),
            Conv2dOp(xs, w, b, groups=2, padding=(1, 0)),
        ]
    )
    assert "graph.conv2d %0, %1 {groups = 2 : i64} : tensor<2x8x9x7xf32>, tensor<6x4x3x2xf32> -> tensor<2x6x7x6xf32>" in text
    assert "padding = array<i64: 1, 0, 2, 1>" in text


def test_conv2d_parsed_defaults_and_wrong_result():
    text = """builtin.module {
  func.func @f(%x: tensor<1x8x9x7xf32>, %w: tensor<6x8x3x3xf32>) {
    %y = graph.conv2d %x, %w : tensor<1x8x9x7xf32>, tensor<6x8x3x3xf32> -> tensor<1x6x7x5xf32>
    func.return
  }
}"""
    op = parse_and_verify(text).body.block.first_op.body.block.first_op
    assert isinstance(op, Conv2dOp)
    assert (ints(op.strides), ints(op.padding), ints(op.dilation), op.groups.value.data) == (
        (1, 1), (0, 0, 0, 0), (1, 1), 1
    )
    with pytest.raises(VerifyException, match=r"result type tensor<1x6x7x6xf32> does not match the inferred type tensor<1x6x7x5xf32>"):
        parse_and_verify(text.replace("-> tensor<1x6x7x5xf32>", "-> tensor<1x6x7x6xf32>"))


# ---------------------------------------------------------------------------
# conv2d: reference vs torch

CONV_REF_CASES = [
    ((2, 3, 7, 9), (5, 3, 3, 3), {}),
    ((1, 4, 11, 6), (6, 4, 3, 2), dict(strides=(2, 3), padding=(1, 0, 2, 1))),
    ((3, 8, 9, 7), (6, 4, 3, 3), dict(groups=2, strides=2, padding=1)),
    ((1, 6, 10, 5), (6, 1, 5, 3), dict(groups=6, padding=(2, 1), dilation=(2, 1))),
    ((2, 6, 13, 8), (9, 2, 2, 3), dict(groups=3, dilation=(3, 2), strides=(1, 2), padding=(0, 2, 3, 1))),
    ((1, 3, 5, 5), (2, 3, 5, 5), dict(padding=4)),
]


def torch_conv(x, w, b, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    pad = nn._padding4(padding)
    strides, dilation = nn._pair(strides), nn._pair(dilation)
    xt = F.pad(torch.from_numpy(x), (pad[1], pad[3], pad[0], pad[2]))  # (left, right, top, bottom)
    y = F.conv2d(
        xt, torch.from_numpy(w), None if b is None else torch.from_numpy(b), strides, 0, dilation, groups
    )
    return y.numpy()


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV_REF_CASES)
def test_conv2d_reference_vs_torch(x_shape, w_shape, kwargs):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    xv, wv, bv = args(t(x_shape), t(w_shape), t((w_shape[0],)))
    for bias, bias_value in ((None, None), (bv, b)):
        op = Conv2dOp(xv, wv, bias, **kwargs)
        y = op.reference(x, w) if bias is None else op.reference(x, w, b)
        expected = torch_conv(x, w, bias_value, **kwargs)
        assert y.dtype == np.float32 and y.shape == tuple(op.result.type.get_shape())
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_reference_symbolic_same_padding():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    xv, wv = args(t(("n", 3, "h", "w")), t((4, 3, 3, 3)))
    y = Conv2dOp(xv, wv, padding=1).reference(x, w)
    np.testing.assert_allclose(y, torch_conv(x, w, None, padding=1), rtol=1e-4, atol=1e-4)


def test_conv2d_reference_int():
    rng = np.random.default_rng(2)
    x = rng.integers(-5, 5, (1, 2, 5, 4)).astype(np.int32)
    w = rng.integers(-3, 3, (3, 2, 2, 2)).astype(np.int32)
    xv, wv = args(t((1, 2, 5, 4), i32), t((3, 2, 2, 2), i32))
    y = Conv2dOp(xv, wv, padding=(1, 0)).reference(x, w)
    expected = torch_conv(x.astype(np.float64), w.astype(np.float64), None, padding=(1, 0))
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, expected.astype(np.int32))


def test_conv2d_reference_resnet_sized_is_fast():
    import time

    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    xv, wv = args(t(x.shape), t(w.shape))
    op = Conv2dOp(xv, wv, padding=1)
    start = time.perf_counter()
    y = op.reference(x, w)
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(y, torch_conv(x, w, None, padding=1), rtol=1e-3, atol=1e-3)
    assert elapsed < 2.0, f"conv2d reference took {elapsed:.2f} s"


# ---------------------------------------------------------------------------
# pooling: types

POOL_CASES = [
    # x shape, op, kwargs, expected
    ((2, 3, 7, 9), MaxPool2dOp, dict(kernel=2), (2, 3, 3, 4)),
    ((2, 3, 7, 9), MaxPool2dOp, dict(kernel=2, ceil_mode=True), (2, 3, 4, 5)),
    ((2, 3, 7, 9), MaxPool2dOp, dict(kernel=(3, 2), strides=(2, 1), padding=1), (2, 3, 4, 10)),
    ((1, 5, 11, 8), MaxPool2dOp, dict(kernel=3, strides=2, dilation=(2, 1)), (1, 5, 4, 3)),
    ((1, 5, 10, 8), MaxPool2dOp, dict(kernel=3, strides=2, padding=1, ceil_mode=True), (1, 5, 6, 5)),
    ((1, 5, 5, 5), MaxPool2dOp, dict(kernel=2, strides=2, padding=1, ceil_mode=True), (1, 5, 3, 3)),
    ((1, 5, 4, 4), MaxPool2dOp, dict(kernel=2, strides=2, padding=1, ceil_mode=True), (1, 5, 3, 3)),
    ((1, 2, 9, 8), MaxPool2dOp, dict(kernel=(3, 2), strides=(2, 1), padding=(1, 0, 1, 1), ceil_mode=True), (1, 2, 5, 8)),
    (("n", "c", 9, 8), MaxPool2dOp, dict(kernel=3, strides=2), ("n", "c", 4, 3)),
    (("n", 4, "h", "w"), MaxPool2dOp, dict(kernel=3, strides=1, padding=1), ("n", 4, "h", "w")),
    ((2, 3, 7, 9), AvgPool2dOp, dict(kernel=2), (2, 3, 3, 4)),
    ((2, 3, 7, 9), AvgPool2dOp, dict(kernel=3, strides=2, padding=1, ceil_mode=True), (2, 3, 4, 5)),
    ((2, 3, 7, 9), AvgPool2dOp, dict(kernel=(3, 5), strides=(1, 3), padding=(1, 2)), (2, 3, 7, 3)),
    (("n", 3, 7, 9), AvgPool2dOp, dict(kernel=(2, 3), count_include_pad=False), ("n", 3, 3, 3)),
]  # fmt: skip


@pytest.mark.parametrize("x_shape, op_type, kwargs, expected", POOL_CASES)
def test_pool_result_type(x_shape, op_type, kwargs, expected):
    (x,) = args(t(x_shape))
    op = op_type(x, **kwargs)
    assert shape_of(op.result.type) == expected
    if all(isinstance(d, int) for d in x_shape):  # torch agrees on the shape
        torch = pytest.importorskip("torch")
        F = torch.nn.functional
        kw = dict(kwargs)
        fn = F.max_pool2d if op_type is MaxPool2dOp else F.avg_pool2d
        if isinstance(kw.get("padding"), tuple) and len(kw["padding"]) == 4:
            return  # asymmetric: torch has no such padding
        out = _torch_pool(fn.__name__.lstrip("_"), np.zeros(x_shape, np.float32), kw)
        assert tuple(out.shape) == expected


def test_pool_strides_default_to_kernel():
    (x,) = args(t((1, 1, 9, 9)))
    op = MaxPool2dOp(x, (3, 2))
    assert ints(op.strides) == (3, 2) and ints(op.kernel) == (3, 2)
    assert ints(op.padding) == (0, 0, 0, 0) and ints(op.dilation) == (1, 1)
    assert not op.ceil_mode.value.data
    avg = AvgPool2dOp(x, 3, padding=(1, 0))
    assert ints(avg.padding) == (1, 0, 1, 0) and avg.count_include_pad.value.data


POOL_ERRORS = [
    ((1, 3, 9), MaxPool2dOp, dict(kernel=2), r"input must have rank 4"),
    ((1, 3, 9, 9), MaxPool2dOp, dict(kernel=3, padding=2), r"height padding \(begin\) 2 is more than half the effective kernel 3"),
    ((1, 3, 9, 9), MaxPool2dOp, dict(kernel=2, padding=(0, 0, 0, 2)), r"width padding \(end\) 2 is more than half"),
    ((1, 3, 9, 9), MaxPool2dOp, dict(kernel=(2, 0)), r"kernel must be >= 1, got \[2, 0\]"),
    ((1, 3, 9, 9), MaxPool2dOp, dict(kernel=(2, 2, 2)), r"kernel must have 2 values \(kh, kw\)"),
    ((1, 3, 9, 2), MaxPool2dOp, dict(kernel=3), r"width: the kernel spans 3 .* more than the padded input 2"),
    ((1, 3, 9, 9), AvgPool2dOp, dict(kernel=2, strides=(1, 0)), r"strides must be >= 1"),
]  # fmt: skip


@pytest.mark.parametrize("x_shape, op_type, kwargs, message", POOL_ERRORS)
def test_pool_errors(x_shape, op_type, kwargs, message):
    (x,) = args(t(x_shape))
    with pytest.raises(VerifyException, match=message):
        op_type(x, **kwargs)


def test_pool_element_types():
    xi, xb = args(t((1, 2, 4, 4), i32), t((1, 2, 4, 4), i1))
    assert MaxPool2dOp(xi, 2).result.type.element_type == i32
    with pytest.raises(VerifyException, match="input must be a float tensor"):
        AvgPool2dOp(xi, 2)
    with pytest.raises(VerifyException, match="input must be numeric"):
        MaxPool2dOp(xb, 2)
    with pytest.raises(VerifyException, match="input must be a float tensor"):
        AdaptiveAvgPool2dOp(xi, 2)


def test_pool_round_trip():
    x, xs = args(t((2, 3, 9, 8)), t(("n", 3, 9, 8), f64))
    text = assert_round_trip(
        [
            MaxPool2dOp(x, (3, 2), (2, 1), (1, 0, 1, 1), dilation=(1, 2), ceil_mode=True),
            MaxPool2dOp(xs, 2),
            AvgPool2dOp(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            AvgPool2dOp(xs, (2, 3)),
            AdaptiveAvgPool2dOp(x, (4, 3)),
            AdaptiveAvgPool2dOp(xs, 1),
        ]
    )
    assert "graph.max_pool2d %1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} :" in text
    assert "count_include_pad = false" in text


# ---------------------------------------------------------------------------
# pooling: reference vs torch

MAX_REF_CASES = [
    ((2, 3, 7, 9), dict(kernel=2)),
    ((2, 3, 7, 9), dict(kernel=2, ceil_mode=True)),
    ((2, 3, 7, 9), dict(kernel=(3, 2), strides=(2, 1), padding=1)),
    ((1, 5, 11, 8), dict(kernel=3, strides=2, dilation=(2, 1), padding=1)),
    ((1, 5, 10, 8), dict(kernel=3, strides=2, padding=1, ceil_mode=True)),
    ((1, 5, 5, 5), dict(kernel=2, strides=2, padding=1, ceil_mode=True)),
    ((1, 5, 4, 7), dict(kernel=(2, 3), strides=(2, 2), padding=1, ceil_mode=True, dilation=(2, 1))),
]

AVG_REF_CASES = [
    ((2, 3, 7, 9), dict(kernel=2)),
    ((2, 3, 7, 9), dict(kernel=3, strides=2, padding=1, ceil_mode=True)),
    ((2, 3, 7, 9), dict(kernel=3, strides=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ((2, 3, 7, 9), dict(kernel=(3, 5), strides=(1, 3), padding=(1, 2))),
    ((1, 4, 10, 11), dict(kernel=(4, 3), strides=(3, 2), padding=(2, 1), ceil_mode=True)),
    ((1, 4, 10, 11), dict(kernel=(4, 3), strides=(3, 2), padding=(2, 1), ceil_mode=True, count_include_pad=False)),
    ((1, 5, 5, 5), dict(kernel=2, strides=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ((2, 3, 7, 9), dict(kernel=3, strides=2, padding=1, ceil_mode=True, divisor_override=4)),
    ((1, 4, 10, 11), dict(kernel=(4, 3), strides=(3, 2), padding=(2, 1), count_include_pad=False, divisor_override=7)),
]


def _torch_pool(fn_name, x, kwargs):
    torch = pytest.importorskip("torch")
    kw = dict(kwargs)
    kernel = kw.pop("kernel")
    if "strides" in kw:
        kw["stride"] = kw.pop("strides")
    return getattr(torch.nn.functional, fn_name)(torch.from_numpy(x), kernel, **kw).numpy()


@pytest.mark.parametrize("x_shape, kwargs", MAX_REF_CASES)
def test_max_pool_reference_vs_torch(x_shape, kwargs):
    x = np.random.default_rng(11).standard_normal(x_shape).astype(np.float32)
    op = MaxPool2dOp(args(t(x_shape))[0], **kwargs)
    y = op.reference(x)
    assert y.shape == tuple(op.result.type.get_shape())
    np.testing.assert_array_equal(y, _torch_pool("max_pool2d", x, kwargs))


@pytest.mark.parametrize("x_shape, kwargs", AVG_REF_CASES)
def test_avg_pool_reference_vs_torch(x_shape, kwargs):
    x = np.random.default_rng(12).standard_normal(x_shape).astype(np.float32)
    op = AvgPool2dOp(args(t(x_shape))[0], **kwargs)
    y = op.reference(x)
    assert y.shape == tuple(op.result.type.get_shape()) and y.dtype == np.float32
    np.testing.assert_allclose(y, _torch_pool("avg_pool2d", x, kwargs), rtol=1e-5, atol=1e-6)


def test_pool_reference_asymmetric_padding():
    """Asymmetric padding equals explicit padding (-inf / zeros) then an unpadded pool."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    pad = (1, 0, 0, 1)  # top, left, bottom, right
    (xv,) = args(t(x.shape))
    padded_inf = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)), constant_values=-np.inf)
    padded_zero = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)))
    ones = np.pad(np.ones_like(x), ((0, 0), (0, 0), (1, 0), (0, 1)))
    kw = dict(kernel=(3, 2), strides=(2, 1), padding=pad)
    np.testing.assert_array_equal(
        MaxPool2dOp(xv, **kw).reference(x), _torch_pool("max_pool2d", padded_inf, dict(kernel=(3, 2), strides=(2, 1)))
    )
    np.testing.assert_allclose(
        AvgPool2dOp(xv, **kw).reference(x),
        _torch_pool("avg_pool2d", padded_zero, dict(kernel=(3, 2), strides=(2, 1))),
        rtol=1e-5, atol=1e-6,
    )
    sums = _torch_pool("avg_pool2d", padded_zero, dict(kernel=(3, 2), strides=(2, 1)))
    counts = _torch_pool("avg_pool2d", ones, dict(kernel=(3, 2), strides=(2, 1)))
    np.testing.assert_allclose(
        AvgPool2dOp(xv, **kw, count_include_pad=False).reference(x), sums / counts, rtol=1e-5, atol=1e-6
    )


def test_avg_pool_divisor_override_must_be_non_zero():
    (x,) = args(t((1, 2, 6, 6)))
    with pytest.raises(VerifyException, match="divisor_override must be non-zero"):
        AvgPool2dOp(x, 2, divisor_override=0)


def test_max_pool_reference_int_and_symbolic():
    rng = np.random.default_rng(14)
    x = rng.integers(-100, 100, (2, 3, 7, 6)).astype(np.int32)
    (xv,) = args(t(("n", 3, "h", "w"), i32))
    y = MaxPool2dOp(xv, 3, strides=1, padding=1).reference(x)
    expected = _torch_pool("max_pool2d", x.astype(np.float32), dict(kernel=3, stride=1, padding=1))
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, expected.astype(np.int32))


# ---------------------------------------------------------------------------
# adaptive_avg_pool2d


@pytest.mark.parametrize(
    "x_shape, size, expected",
    [
        ((2, 3, 7, 9), (1, 1), (2, 3, 1, 1)),
        ((2, 3, 7, 9), (3, 4), (2, 3, 3, 4)),
        ((2, 3, 7, 9), 5, (2, 3, 5, 5)),
        (("n", "c", 7, 9), (2, 3), ("n", "c", 2, 3)),
        ((1, 2, 3, 2), (5, 7), (1, 2, 5, 7)),
    ],
)
def test_adaptive_avg_pool_result_type(x_shape, size, expected):
    (x,) = args(t(x_shape))
    assert shape_of(AdaptiveAvgPool2dOp(x, size).result.type) == expected


@pytest.mark.parametrize(
    "x_shape, size, message",
    [
        ((1, 3, 7), (1, 1), r"input must have rank 4"),
        ((1, 3, 7, 7), (0, 1), r"output_size must be >= 1, got \[0, 1\]"),
        ((1, 3, 7, 7), (1, 1, 1), r"output_size must have 2 values \(oh, ow\)"),
        ((1, 3, "h", 7), (1, 1), r"needs static height and width, got shape \(1, 3, h, 7\)"),
    ],
)
def test_adaptive_avg_pool_errors(x_shape, size, message):
    (x,) = args(t(x_shape))
    with pytest.raises(VerifyException, match=message):
        AdaptiveAvgPool2dOp(x, size)


@pytest.mark.parametrize(
    "x_shape, size",
    [((2, 3, 7, 9), (1, 1)), ((2, 3, 7, 9), (3, 4)), ((1, 4, 13, 10), (4, 7)), ((1, 2, 3, 2), (5, 7)), ((1, 64, 56, 56), (7, 7))],
)
def test_adaptive_avg_pool_reference_vs_torch(x_shape, size):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(15).standard_normal(x_shape).astype(np.float32)
    y = AdaptiveAvgPool2dOp(args(t(x_shape))[0], size).reference(x)
    expected = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), size).numpy()
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# adaptive_max_pool2d (the bins of adaptive_avg_pool2d)


@pytest.mark.parametrize(
    "x_shape, element, size, expected",
    [
        ((2, 3, 7, 9), f32, (3, 4), (2, 3, 3, 4)),
        (("n", "c", 7, 9), i32, 5, ("n", "c", 5, 5)),
        ((1, 2, 3, 2), f64, (5, 7), (1, 2, 5, 7)),
    ],
)
def test_adaptive_max_pool_result_type(x_shape, element, size, expected):
    (x,) = args(t(x_shape, element))
    op = AdaptiveMaxPool2dOp(x, size)
    assert shape_of(op.result.type) == expected and op.result.type.element_type == element


@pytest.mark.parametrize(
    "x_shape, element, size, message",
    [
        ((1, 3, 7, 7), i1, (1, 1), r"input must be numeric, got tensor<1x3x7x7xi1>"),
        ((1, 3, 7, 7), f32, (2, 0), r"output_size must be >= 1, got \[2, 0\]"),
        ((1, 3, 7, "w"), f32, (1, 1), r"adaptive_max_pool2d needs static height and width"),
    ],
)
def test_adaptive_max_pool_errors(x_shape, element, size, message):
    (x,) = args(t(x_shape, element))
    with pytest.raises(VerifyException, match=message):
        AdaptiveMaxPool2dOp(x, size)


@pytest.mark.parametrize(
    "x_shape, size, dtype",
    [((2, 3, 7, 9), (3, 4), np.float32), ((1, 4, 13, 10), (4, 7), np.float64), ((1, 2, 3, 2), (5, 7), np.float32), ((2, 3, 9, 8), (2, 3), np.int32)],
)
def test_adaptive_max_pool_reference_vs_torch(x_shape, size, dtype):
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(16).standard_normal(x_shape) * 50).astype(dtype)
    element = {np.float32: f32, np.float64: f64, np.int32: i32}[dtype]
    y = AdaptiveMaxPool2dOp(args(t(x_shape, element))[0], size).reference(x)
    expected, _ = torch.nn.functional.adaptive_max_pool2d(torch.from_numpy(x.astype(np.float64)), size, return_indices=True)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected.numpy().astype(dtype))


def test_adaptive_pools_round_trip_and_nhwc_reference():
    x, xi = args(t((2, 3, 9, 7)), t((2, 9, 7, 3), i32))
    text = assert_round_trip([AdaptiveMaxPool2dOp(x, (3, 2)), AdaptiveMaxPool2dOp(xi, 4, layout="NHWC")])
    assert "graph.adaptive_max_pool2d %0 {output_size = array<i64: 3, 2>} : tensor<2x3x9x7xf32> -> tensor<2x3x3x2xf32>" in text
    data = np.random.default_rng(17).integers(-99, 99, (2, 9, 7, 3)).astype(np.int32)
    nhwc = AdaptiveMaxPool2dOp(xi, 4, layout="NHWC").reference(data)
    nchw = AdaptiveMaxPool2dOp(args(t((2, 3, 9, 7), i32))[0], 4).reference(data.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(nhwc, nchw.transpose(0, 2, 3, 1))

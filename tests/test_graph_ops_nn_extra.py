"""graph.conv2d_transpose and graph.resize2d: result type inference, verifier errors, textual
round trip, numpy reference vs torch, compiled code vs the reference."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import f32, f64, i1, i32
from xdsl.utils.exceptions import VerifyException

from compare import compile_and_compare
from tensorkiln.dialects.graph import Graph, OpPatternKind
from tensorkiln.dialects.graph.base import ints
from tensorkiln.dialects.graph.nn import Conv2dTransposeOp, Resize2dOp
from tensorkiln.dialects.graph.types import shape_of
from graph_op_helpers import args, t, assert_round_trip, parse_and_verify


def test_registered_with_pattern_kinds():
    names = {op.name for op in Graph.operations}
    assert {"graph.conv2d_transpose", "graph.resize2d"} <= names
    assert Conv2dTransposeOp.PATTERN_KIND == OpPatternKind.OUT_ELEMWISE_FUSABLE
    assert Resize2dOp.PATTERN_KIND == OpPatternKind.INJECTIVE


# ---------------------------------------------------------------------------
# conv2d_transpose: types

CONV_T_CASES = [
    # x shape, w shape (C, O/groups, KH, KW), kwargs, expected result shape
    ((2, 3, 5, 6), (3, 4, 3, 3), {}, (2, 4, 7, 8)),
    ((2, 3, 5, 6), (3, 4, 3, 3), dict(strides=2), (2, 4, 11, 13)),
    ((2, 3, 5, 6), (3, 4, 3, 3), dict(strides=2, padding=1, output_padding=1), (2, 4, 10, 12)),
    ((1, 4, 5, 6), (4, 3, 3, 3), dict(strides=2, padding=(1, 1, 1, 1), output_padding=(1, 0)), (1, 3, 10, 11)),
    ((1, 4, 5, 6), (4, 3, 2, 3), dict(strides=(1, 2), padding=(0, 1, 1, 0)), (1, 3, 5, 12)),
    ((1, 4, 3, 3), (4, 2, 3, 3), dict(dilation=2, groups=2), (1, 4, 7, 7)),
    ((1, 6, 4, 4), (6, 1, 3, 3), dict(groups=6, strides=3, dilation=2, output_padding=2), (1, 6, 16, 16)),
    ((1, 2, 1, 1), (2, 5, 1, 1), {}, (1, 5, 1, 1)),
    (("n", 3, 5, 6), (3, 4, 3, 3), dict(strides=2), ("n", 4, 11, 13)),
    (("n", 3, "h", "w"), (3, 4, 3, 3), dict(padding=1), ("n", 4, "h", "w")),
    ((1, 3, "h", 6), (3, 4, 3, 1), dict(padding=(2, 0, 0, 0)), (1, 4, "h", 6)),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs, expected", CONV_T_CASES)
def test_conv2d_transpose_result_type(x_shape, w_shape, kwargs, expected):
    groups = kwargs.get("groups", 1)
    x, w, b = args(t(x_shape), t(w_shape), t((w_shape[1] * groups,)))
    op = Conv2dTransposeOp(x, w, **kwargs)
    assert shape_of(op.result.type) == expected
    with_bias = Conv2dTransposeOp(x, w, b, **kwargs)
    assert with_bias.result.type == op.result.type and with_bias.bias is b and op.bias is None


def test_conv2d_transpose_properties_normalised():
    x, w = args(t((1, 4, 5, 5)), t((4, 2, 3, 3)))
    op = Conv2dTransposeOp(x, w, strides=3, padding=(1, 2), output_padding=1, dilation=2, groups=2)
    assert ints(op.strides) == (3, 3)
    assert ints(op.padding) == (1, 2, 1, 2)
    assert ints(op.output_padding) == (1, 1)
    assert ints(op.dilation) == (2, 2)
    assert op.groups.value.data == 2


CONV_T_ERRORS = [
    ((1, 4, 5, 5), (3, 2, 3, 3), {}, None, r"weight has 3 input channels .* the input has 4"),
    ((1, 5, 5, 5), (5, 2, 3, 3), dict(groups=2), None, r"input channels 5 are not divisible by groups 2"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(groups=2), (2,), r"bias must have shape \(4,\) = weight dim 1 2 x groups 2, got \(2,\)"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(strides=2, output_padding=2), None, r"output_padding \[2, 2\] must be smaller than the stride"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(output_padding=(0, 1)), None, r"output_padding \[0, 1\] must be smaller than the stride \[1, 1\] or the dilation \[1, 1\] along width"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(output_padding=(0, 0, 0)), None, r"output_padding must have 2 values"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(output_padding=-1), None, r"output_padding must be >= 0"),
    ((1, 4, 1, 5), (4, 2, 1, 3), dict(padding=(1, 0)), None, r"height: output size -1 = \(1 - 1\)\*1 - 1 - 1 \+ 1\*\(1 - 1\) \+ 0 \+ 1 is not positive"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(strides=0), None, r"strides must be >= 1"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(groups=0), None, r"groups must be >= 1, got 0"),
    ((1, 4, 5), (4, 2, 3, 3), {}, None, r"input must have rank 4"),
    ((1, 4, 5, 5), (4, 2, 3), {}, None, r"weight must have rank 4"),
    ((1, "c", 5, 5), (4, 2, 3, 3), {}, None, r"input channels must be static"),
]  # fmt: skip


@pytest.mark.parametrize("x_shape, w_shape, kwargs, b_shape, message", CONV_T_ERRORS)
def test_conv2d_transpose_errors(x_shape, w_shape, kwargs, b_shape, message):
    x, w, b = args(t(x_shape), t(w_shape), t(b_shape or (1,)))
    with pytest.raises(VerifyException, match=r"graph.conv2d_transpose: " + message):
        Conv2dTransposeOp(x, w, b if b_shape else None, **kwargs)


def test_conv2d_transpose_element_types():
    x, wi, xb, wb = args(t((1, 3, 5, 5)), t((3, 2, 3, 3), i32), t((1, 3, 5, 5), i1), t((3, 2, 3, 3), i1))
    with pytest.raises(VerifyException, match="must have one element type"):
        Conv2dTransposeOp(x, wi)
    with pytest.raises(VerifyException, match="must be numeric, got i1"):
        Conv2dTransposeOp(xb, wb)
    assert Conv2dTransposeOp(args(t((1, 3, 5, 5), i32))[0], wi).result.type.element_type == i32


def test_conv2d_transpose_round_trip_and_defaults():
    x, w, b = args(t(("n", 4, 5, 6)), t((4, 3, 3, 3)), t((3,)))
    plain = Conv2dTransposeOp(x, w)
    full = Conv2dTransposeOp(x, w, b, strides=2, padding=(1, 0, 1, 1), output_padding=(1, 0), dilation=(1, 2))
    text = assert_round_trip([plain, full])
    first = next(line for line in text.splitlines() if "graph.conv2d_transpose" in line)
    assert "{" not in first  # defaults are not printed
    assert "output_padding = array<i64: 1, 0>" in text and "padding = array<i64: 1, 0, 1, 1>" in text


def test_conv2d_transpose_parsed_wrong_result_type():
    text = """builtin.module {
  func.func @f(%x: tensor<1x4x5x6xf32>, %w: tensor<4x3x3x3xf32>) {
    %y = graph.conv2d_transpose %x, %w {strides = array<i64: 2, 2>} : tensor<1x4x5x6xf32>, tensor<4x3x3x3xf32> -> tensor<1x3x10x12xf32>
    func.return
  }
}"""
    with pytest.raises(VerifyException, match=r"result type tensor<1x3x10x12xf32> does not match the inferred type tensor<1x3x11x13xf32>"):
        parse_and_verify(text)


# ---------------------------------------------------------------------------
# conv2d_transpose: reference vs torch, compiled vs reference

CONV_T_NUMERIC = [
    # C, O, kernel, kwargs (torch names), input hw
    (3, 5, 3, {}, (5, 6)),
    (4, 6, 3, dict(stride=2, padding=1, output_padding=1, groups=2), (5, 7)),
    (3, 4, (2, 3), dict(stride=(1, 2), padding=(0, 1), output_padding=(0, 1)), (4, 5)),
    (4, 4, 3, dict(stride=3, padding=2, output_padding=(2, 0), dilation=2, groups=4), (3, 5)),
    (2, 3, 4, dict(stride=2, padding=3, dilation=3), (7, 3)),
    (2, 2, 1, dict(stride=2), (3, 4)),
]


def _torch_conv_t_to_graph(kwargs):
    return dict(
        strides=kwargs.get("stride", 1),
        padding=kwargs.get("padding", 0),
        output_padding=kwargs.get("output_padding", 0),
        dilation=kwargs.get("dilation", 1),
        groups=kwargs.get("groups", 1),
    )


@pytest.mark.parametrize("channels, out, kernel, kwargs, hw", CONV_T_NUMERIC)
def test_conv2d_transpose_reference_matches_torch(rng, channels, out, kernel, kwargs, hw):
    torch = pytest.importorskip("torch")
    layer = torch.nn.ConvTranspose2d(channels, out, kernel, **kwargs)
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    x = rng.standard_normal((2, channels, *hw)).astype(np.float32)
    expected = layer(torch.from_numpy(x)).detach().numpy()
    xv, wv, bv = args(t(x.shape), t(weight.shape), t(bias.shape))
    op = Conv2dTransposeOp(xv, wv, bv, **_torch_conv_t_to_graph(kwargs))
    assert shape_of(op.result.type) == expected.shape
    got = op.reference(x, weight, bias)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("channels, out, kernel, kwargs, hw", CONV_T_NUMERIC)
def test_conv2d_transpose_compiled(rng, channels, out, kernel, kwargs, hw):
    groups = kwargs.get("groups", 1)
    kernel = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    w_shape = (channels, out // groups, *kernel)
    props = _torch_conv_t_to_graph(kwargs)
    compile_and_compare(
        rng, lambda b, x, w, bias: b.conv2d_transpose(x, w, bias, **props), [(2, channels, *hw), w_shape, (out,)]
    )


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_conv2d_transpose_compiled_other_dtypes(rng, dtype):
    compile_and_compare(
        rng,
        lambda b, x, w: b.conv2d_transpose(x, w, strides=2, padding=(1, 0, 0, 1), output_padding=1),
        [(1, 3, 4, 5), (3, 2, 3, 2)],
        dtype=dtype,
    )


def test_conv2d_transpose_integer_reference_is_exact(rng):
    x = rng.integers(-9, 9, (1, 2, 4, 3)).astype(np.int32)
    w = rng.integers(-9, 9, (2, 3, 3, 3)).astype(np.int32)
    xv, wv = args(t(x.shape, i32), t(w.shape, i32))
    op = Conv2dTransposeOp(xv, wv, strides=2, padding=1)
    fv, fw = args(t(x.shape), t(w.shape))
    as_float = Conv2dTransposeOp(fv, fw, strides=2, padding=1).reference(x.astype(np.float32), w.astype(np.float32))
    got = op.reference(x, w)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, as_float.astype(np.int32))


# ---------------------------------------------------------------------------
# resize2d: types


@pytest.mark.parametrize(
    "x_shape, kwargs, expected",
    [
        ((2, 3, 5, 7), dict(size=(10, 14)), (2, 3, 10, 14)),
        ((2, 3, 5, 7), dict(size=4, mode="bilinear"), (2, 3, 4, 4)),
        (("n", "c", 5, 7), dict(size=(12, 17), mode="nearest", scale_factors=2.5), ("n", "c", 12, 17)),
        ((1, 1, 5, 7), dict(size=(1, 1), mode="bilinear", align_corners=True), (1, 1, 1, 1)),
        ((1, 1, 5, 7), dict(size=(8, 3), mode="nearest_exact", scale_factors=(1.7, 0.5)), (1, 1, 8, 3)),
    ],
)
def test_resize2d_result_type(x_shape, kwargs, expected):
    (x,) = args(t(x_shape))
    assert shape_of(Resize2dOp(x, **kwargs).result.type) == expected


RESIZE_ERRORS = [
    ((1, 3, 5, 7), f32, dict(size=(4, 4), mode="bicubic"), r"mode must be one of nearest, nearest_exact, bilinear, got 'bicubic'"),
    ((1, 3, 5, 7), f32, dict(size=(4, 4), align_corners=True), r"align_corners is only meaningful for bilinear mode, got mode 'nearest'"),
    ((1, 3, 5, 7), i32, dict(size=(4, 4), mode="bilinear"), r"bilinear mode needs a float input"),
    ((1, 3, 5, 7), f32, dict(size=(4, 4, 4)), r"size must have 2 values \(oh, ow\)"),
    ((1, 3, 5, 7), f32, dict(size=(0, 4)), r"size must be >= 1, got \[0, 4\]"),
    ((1, 3, 5, 7), f32, dict(size=(4, 4), scale_factors=(2.0, 2.0, 2.0)), r"scale_factors must have 2 values"),
    ((1, 3, 5, 7), f32, dict(size=(4, 4), scale_factors=(2.0, 0.0)), r"scale_factors must be positive, got \[2.0, 0.0\]"),
    ((1, 3, "h", 7), f32, dict(size=(4, 4)), r"resize2d needs static height and width"),
    ((3, 5, 7), f32, dict(size=(4, 4)), r"input must have rank 4"),
]  # fmt: skip


@pytest.mark.parametrize("x_shape, element, kwargs, message", RESIZE_ERRORS)
def test_resize2d_errors(x_shape, element, kwargs, message):
    (x,) = args(t(x_shape, element))
    with pytest.raises(VerifyException, match=r"graph.resize2d: " + message):
        Resize2dOp(x, **kwargs)


def test_resize2d_nearest_takes_any_element_type():
    for element in (i32, i1, f64):
        (x,) = args(t((1, 2, 3, 3), element))
        assert Resize2dOp(x, size=(6, 6)).result.type == t((1, 2, 6, 6), element)


def test_resize2d_round_trip():
    x, y = args(t(("n", 3, 5, 7)), t((1, 2, 4, 4), i32))
    ops = [
        Resize2dOp(x, size=(10, 13), mode="bilinear", align_corners=True),
        Resize2dOp(x, size=(12, 17), scale_factors=(2.5, 1 / 3)),
        Resize2dOp(y, size=(7, 9), mode="nearest_exact"),
    ]
    text = assert_round_trip(ops)
    assert 'mode = "bilinear"' in text and "align_corners = true" in text
    assert "scale_factors = array<f64: 2.5" in text
    parsed = parse_and_verify(text)
    (_, second, _) = [op for op in parsed.walk() if isinstance(op, Resize2dOp)]
    assert second._scale_factors() == (2.5, 1 / 3)  # printed exactly


def test_resize2d_parse_errors():
    text = """builtin.module {
  func.func @f(%x: tensor<1x2x5x7xf32>) {
    %y = graph.resize2d %x {size = array<i64: 3, 3>, mode = "bilinear", scale_factors = array<i64: 2, 2>} : tensor<1x2x5x7xf32> -> tensor<1x2x3x3xf32>
    func.return
  }
}"""
    with pytest.raises(VerifyException, match=r"scale_factors must be an array<f64: ...>"):
        parse_and_verify(text)
    with pytest.raises(VerifyException, match=r"does not match the inferred type tensor<1x2x4x3xf32>"):
        # valid scale factors, but a size (4, 3) that the result type does not have
        parse_and_verify(text.replace("array<i64: 2, 2>", "array<f64: 2.0, 2.0>").replace("i64: 3, 3", "i64: 4, 3"))


# ---------------------------------------------------------------------------
# resize2d: reference vs torch (incl. torch's special cases), compiled vs reference

RESIZE_NUMERIC = [
    # mode, align_corners, scale factor or None, output size or None
    ("nearest", False, 2.0, None),
    ("nearest", False, 2.5, None),
    ("nearest", False, 1.7, None),
    ("nearest", False, 0.6, None),
    ("nearest", False, 1.1, None),  # same size: copy
    ("nearest", False, 2.1, None),  # double size: halve the index
    ("nearest", False, None, (11, 4)),
    ("nearest_exact", False, 1.7, None),
    ("nearest_exact", False, 0.4, None),
    ("nearest_exact", False, None, (9, 13)),
    ("bilinear", False, 2.0, None),
    ("bilinear", False, 0.6, None),
    ("bilinear", False, 1.1, None),
    ("bilinear", False, None, (9, 13)),
    ("bilinear", True, 2.5, None),
    ("bilinear", True, None, (9, 13)),
    ("bilinear", True, None, (1, 2)),
    ("bilinear", False, None, (5, 7)),
]


def _torch_resize(x: np.ndarray, mode, align_corners, factor, size) -> np.ndarray:
    torch = pytest.importorskip("torch")
    return torch.nn.functional.interpolate(
        torch.from_numpy(x), size=size, scale_factor=factor, mode=mode.replace("_", "-"),
        align_corners=align_corners if mode == "bilinear" else None,
    ).numpy()  # fmt: skip


@pytest.mark.parametrize("hw", [(5, 7), (4, 3)])
@pytest.mark.parametrize("mode, align_corners, factor, size", RESIZE_NUMERIC)
def test_resize2d_reference_matches_torch(rng, hw, mode, align_corners, factor, size):
    x = rng.standard_normal((2, 3, *hw)).astype(np.float32)
    expected = _torch_resize(x, mode, align_corners, factor, size)
    (xv,) = args(t(x.shape))
    op = Resize2dOp(xv, expected.shape[2:], mode, align_corners, None if factor is None else (factor, factor))
    got = op.reference(x)
    assert got.dtype == np.float32 and got.shape == expected.shape
    if mode == "bilinear":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mode, align_corners", [("nearest", False), ("nearest_exact", False), ("bilinear", False),
                                                 ("bilinear", True)])  # fmt: skip
def test_resize2d_from_one_pixel(rng, mode, align_corners):
    x = rng.standard_normal((1, 2, 1, 1)).astype(np.float32)
    expected = _torch_resize(x, mode, align_corners, None, (3, 4))
    (xv,) = args(t(x.shape))
    np.testing.assert_array_equal(Resize2dOp(xv, (3, 4), mode, align_corners).reference(x), expected)


@pytest.mark.parametrize("mode, align_corners, factor, size", RESIZE_NUMERIC)
def test_resize2d_compiled(rng, mode, align_corners, factor, size):
    in_shape = (2, 3, 5, 7)
    out = _torch_resize(np.zeros(in_shape, np.float32), mode, align_corners, factor, size).shape[2:]
    factors = None if factor is None else (factor, factor)
    compile_and_compare(
        rng, lambda b, x: b.resize2d(x, out, mode, align_corners, factors), [in_shape], rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("dtype", ["int32", "bool", "float64"])
def test_resize2d_nearest_compiled_other_dtypes(rng, dtype):
    compile_and_compare(rng, lambda b, x: b.resize2d(x, (7, 3), "nearest"), [(1, 2, 3, 4)], dtype=dtype)
    compile_and_compare(rng, lambda b, x: b.resize2d(x, (7, 9), "nearest_exact", scale_factors=(2.4, 2.4)),
                        [(1, 2, 3, 4)], dtype=dtype)  # fmt: skip


def test_resize2d_bilinear_float64_compiled(rng):
    compile_and_compare(rng, lambda b, x: b.resize2d(x, (9, 4), "bilinear", True), [(2, 1, 4, 6)], dtype="float64")


def test_resize2d_symbolic_batch_compiled(rng):
    import tensorkiln as tk

    b = tk.GraphBuilder()
    x = b.input("x", ("n", 2, 3, 4))
    module = b.finish(b.resize2d(x, (6, 9), "bilinear"))
    data = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    expected = _torch_resize(data, "bilinear", False, None, (6, 9))
    np.testing.assert_allclose(tk.create_executor("interpreter", module).evaluate()(data), expected, rtol=1e-6, atol=1e-6)

"""graph.quantize / dequantize / qdense / qmatmul / qconv2d: IR round trip, verifier
errors, and numerics compiled vs the numpy references vs ONNX Runtime's QuantizeLinear,
DequantizeLinear, QLinearMatMul and QLinearConv (bit for bit)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.dialects.graph import quant
from graph_op_helpers import doc_examples, parse_and_verify

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

QINFO = {np.int8: (-128, 127), np.uint8: (0, 255)}


def qrandom(rng, shape, dtype) -> np.ndarray:
    low, high = QINFO[dtype]
    return rng.integers(low, high + 1, shape).astype(dtype)


def build_and_reference(module):
    return tk.build(module), tk.create_executor("interpreter", module).evaluate()


def run_onnx(node, inputs: dict, constants: dict, out=np.float32):
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], helper.np_dtype_to_tensor_dtype(np.dtype(out)), None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in constants.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


# ---------------------------------------------------------------------------
# IR


@pytest.mark.parametrize("line", doc_examples(quant))
def test_doc_examples_parse(line):
    """Each docstring example parses and verifies, its operands as function arguments
    (typed in order of appearance: the quantized products list types in groups)."""
    body = line.split(" = ", 1)[1]
    head, types = body.rsplit(" : ", 1)
    operand_types = re.findall(r"tensor<[^>]*>", types.rsplit(" -> ", 1)[0])
    names = re.findall(r"%\w+", head)
    assert len(names) == len(operand_types), line
    signature = ", ".join(dict.fromkeys(f"{n}: {t}" for n, t in zip(names, operand_types)))
    parse_and_verify(f"builtin.module {{\n func.func @f({signature}) {{\n  {line}\n  func.return\n }}\n}}")


def _quantize_text(scale_type: str, zp_type: str, result: str, props: str = "") -> str:
    return f"""builtin.module {{
  func.func @f(%x: tensor<2x3xf32>, %s: {scale_type}, %z: {zp_type}) {{
    %q = graph.quantize %x, %s, %z {props} : tensor<2x3xf32>, {scale_type}, {zp_type} -> {result}
    func.return
  }}
}}"""


@pytest.mark.parametrize(
    "scale, zp, result, props, message",
    [
        ("tensor<4xf32>", "tensor<4xi8>", "tensor<2x3xi8>", "{axis = 1 : i64}", "4 scales, but its axis 1 has size 3"),
        ("tensor<3xf32>", "tensor<3xi8>", "tensor<2x3xi8>", "{axis = 2 : i64}", "axis 2 is out of range for rank 2"),
        ("tensor<f32>", "tensor<3xi8>", "tensor<2x3xi8>", "", "must have one shape"),
        ("tensor<f16>", "tensor<i8>", "tensor<2x3xi8>", "", "scale must be float32"),
        ("tensor<f32>", "tensor<ui8>", "tensor<2x3xui8>", "", "dtype 'i8'"),
        ("tensor<f32>", "tensor<i16>", "tensor<2x3xi16>", "", "dtype 'i8'"),
    ],
)
def test_quantize_verifier_errors(scale, zp, result, props, message):
    with pytest.raises(Exception, match=message):
        parse_and_verify(_quantize_text(scale, zp, result, props))


def test_per_channel_axis_accepts_negative_and_round_trips(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (2, 3))
    q = b.quantize(x, b.constant(np.float32([0.1, 0.2, 0.3])), b.constant(np.int8([0, 1, 2])), axis=-1)
    text = str(b.finish(q))
    assert "axis = -1" in text
    parse_and_verify(text)


def test_product_verifier_errors():
    b = tk.GraphBuilder()
    x = b.input("x", (3, 5), np.uint8)
    params = [b.constant(np.float32(0.1)), b.constant(np.uint8(3)), b.constant(np.float32([0.1, 0.2])),
              b.constant(np.int8([0, 0])), b.constant(np.float32(0.2)), b.constant(np.uint8(1))]  # fmt: skip
    w = b.constant(np.ones((4, 5), np.int8))
    with pytest.raises(VerifyException, match="weight has 2 scales, but its axis 0 has size 4"):
        b.qdense(x, w, None, params)
    params[2], params[3] = b.constant(np.float32(0.1)), b.constant(np.int8(0))
    with pytest.raises(VerifyException, match="bias must be int32"):
        b.qdense(x, w, b.constant(np.zeros(4, np.float32)), params)
    with pytest.raises(VerifyException, match="contraction dims differ"):
        b.qdense(x, b.constant(np.ones((4, 6), np.int8)), None, params)
    with pytest.raises(VerifyException, match="input scale .* must have one shape"):
        b.qdense(x, w, None, [params[0], b.constant(np.uint8([1, 2])), *params[2:]])
    image = b.input("image", (1, 6, 5, 5), np.uint8)
    with pytest.raises(VerifyException, match="groups 4 do not match"):
        b.qconv2d(image, b.constant(np.ones((4, 3, 3, 3), np.int8)), None, params, groups=4)


# ---------------------------------------------------------------------------
# quantize / dequantize numerics


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_dequantize_vs_onnxruntime(rng, dtype, per_channel):
    shape = (3, 7, 5)
    x = (rng.normal(size=shape) * 4).astype(np.float32)
    scale = rng.uniform(0.01, 0.1, 7).astype(np.float32) if per_channel else np.float32(0.03)
    zp = qrandom(rng, scale.shape, dtype)
    # saturation edges, ties (half-way points round to even) and a NaN
    s0 = float(np.asarray(scale).reshape(-1)[0])
    x[0, 0, :4] = [1e9, -1e9, 2.5 * s0, 3.5 * s0]
    x[1, 0, 0] = np.nan
    b = tk.GraphBuilder()
    xi = b.input("x", shape)
    q = b.quantize(xi, b.constant(scale), b.constant(zp), axis=1)
    lib, ref = build_and_reference(b.finish(q, b.dequantize(q, b.constant(scale), b.constant(zp), axis=1)))
    got_q, got_x = lib(x)
    want_q, want_x = ref(x)
    np.testing.assert_array_equal(got_q, want_q)
    np.testing.assert_array_equal(got_x, want_x)
    assert got_q.dtype == dtype
    low, high = QINFO[dtype]
    z0 = int(np.asarray(zp).reshape(-1)[0])
    assert got_q[0, 0, 0] == high and got_q[0, 0, 1] == low
    assert got_q[1, 0, 0] == z0  # NaN -> the zero point
    assert int(got_q[0, 0, 2]) == np.clip(2 + z0, low, high) and int(got_q[0, 0, 3]) == np.clip(4 + z0, low, high)
    finite = np.where(np.isnan(x), 0, x)
    quantize = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    want = run_onnx(quantize, {"x": finite}, {"s": scale, "z": zp}, dtype)
    mask = ~np.isnan(x)
    np.testing.assert_array_equal(got_q[mask], want[mask])
    dequantize = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)
    np.testing.assert_array_equal(got_x, run_onnx(dequantize, {"q": got_q}, {"s": scale, "z": zp}))


def test_dequantize_int32_bias(rng):
    q = rng.integers(-(2**20), 2**20, (6,)).astype(np.int32)
    b = tk.GraphBuilder()
    qi = b.input("q", (6,), np.int32)
    scale = rng.uniform(1e-4, 1e-3, 6).astype(np.float32)
    lib, ref = build_and_reference(b.finish(b.dequantize(qi, b.constant(scale), b.constant(np.zeros(6, np.int32)), axis=0)))
    np.testing.assert_array_equal(lib(q), ref(q))
    np.testing.assert_allclose(lib(q), q * scale.astype(np.float64), rtol=1e-6)


# ---------------------------------------------------------------------------
# quantized products


def product_params(rng, b, x_dtype, y_dtype, channels, per_channel=True, extreme=False):
    """(scale, zero point) of input, weight, result; the zero points at the range's edges with ``extreme``."""
    x_zp = QINFO[x_dtype][1] if extreme else int(qrandom(rng, (), x_dtype))
    y_zp = QINFO[y_dtype][0] if extreme else int(qrandom(rng, (), y_dtype))
    w_scale = rng.uniform(0.002, 0.02, channels if per_channel else ()).astype(np.float32)
    w_zp = rng.integers(-3, 4, w_scale.shape).astype(np.int8)
    values = [np.float32(0.05), np.asarray(x_zp, x_dtype), w_scale, w_zp, np.float32(0.4), np.asarray(y_zp, y_dtype)]
    return values, [b.constant(v) for v in values]


@pytest.mark.parametrize(
    "rows, k, n, x_dtype, y_dtype, relu, extreme",
    [
        ((3,), 13, 7, np.uint8, np.uint8, False, False),
        ((2, 5), 37, 21, np.int8, np.int8, True, False),
        ((1,), 6, 33, np.uint8, np.int8, False, True),
        ((17,), 65, 3, np.int8, np.uint8, True, True),
    ],
)
def test_qdense_and_qmatmul(rng, rows, k, n, x_dtype, y_dtype, relu, extreme):
    x = qrandom(rng, (*rows, k), x_dtype)
    x.reshape(-1)[:2] = QINFO[x_dtype]  # values at the range's ends
    w = qrandom(rng, (n, k), np.int8)
    w.reshape(-1)[:2] = (-128, 127)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    b = tk.GraphBuilder()
    xi = b.input("x", x.shape, x_dtype)
    values, params = product_params(rng, b, x_dtype, y_dtype, n, extreme=extreme)
    dense = b.qdense(xi, b.constant(w), b.constant(bias), params, relu=relu)
    matmul = b.qmatmul(xi, b.constant(np.ascontiguousarray(w.T)), b.constant(bias), params, relu=relu)
    lib, ref = build_and_reference(b.finish(dense, matmul))
    got_dense, got_matmul = lib(x)
    want, _ = ref(x)
    assert got_dense.dtype == y_dtype and got_dense.shape == (*rows, n)
    np.testing.assert_array_equal(got_dense, want)
    np.testing.assert_array_equal(got_matmul, want)
    if relu:
        assert got_dense.min() >= values[5]
    # the definition, written out
    acc = (x.astype(np.int64) - int(values[1])) @ (w.astype(np.int64) - values[3][:, None]).T + bias
    m = (np.float32(values[0]) * values[2]) / np.float32(values[4])
    low, high = QINFO[y_dtype]
    y = np.clip(np.rint(acc.astype(np.float32) * m) + int(values[5]), max(low, int(values[5])) if relu else low, high)
    np.testing.assert_array_equal(got_dense, y.astype(y_dtype))


def test_qmatmul_vs_onnxruntime(rng):
    a = qrandom(rng, (2, 9, 19), np.uint8)
    bw = qrandom(rng, (19, 11), np.int8)
    consts = dict(a_s=np.float32(0.03), a_z=np.uint8(131), b_s=np.float32(0.02), b_z=np.int8(0), y_s=np.float32(0.5), y_z=np.uint8(9))
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"], ["y"])
    want = run_onnx(node, {"a": a}, {**consts, "b": bw}, np.uint8)
    b = tk.GraphBuilder()
    ai = b.input("a", a.shape, np.uint8)
    params = [b.constant(consts[n]) for n in ("a_s", "a_z", "b_s", "b_z", "y_s", "y_z")]
    got = tk.build(b.finish(b.qmatmul(ai, b.constant(bw), None, params)))(a)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "layout, x_dtype, groups, strides, padding, relu",
    [
        ("NCHW", np.uint8, 1, 1, 1, False),
        ("NHWC", np.int8, 2, 2, (0, 1, 2, 1), True),
        ("NHWC", np.uint8, 6, 1, 1, False),  # depthwise
    ],
)
def test_qconv2d(rng, layout, x_dtype, groups, strides, padding, relu):
    c, o = 6, 12 if groups != 6 else 6
    nchw = (2, c, 9, 7)
    shape = nchw if layout == "NCHW" else (2, 9, 7, c)
    w_oihw = qrandom(rng, (o, c // groups, 3, 3), np.int8)
    w = w_oihw if layout == "NCHW" else np.ascontiguousarray(w_oihw.transpose(2, 3, 1, 0))
    x = qrandom(rng, shape, x_dtype)
    bias = rng.integers(-2000, 2000, o).astype(np.int32)
    b = tk.GraphBuilder()
    xi = b.input("x", shape, x_dtype)
    values, params = product_params(rng, b, x_dtype, x_dtype, o)
    y = b.qconv2d(xi, b.constant(w), b.constant(bias), params, strides=strides, padding=padding, groups=groups, layout=layout, relu=relu)
    lib, ref = build_and_reference(b.finish(y))
    np.testing.assert_array_equal(lib(x), ref(x))
    # vs ONNX Runtime (NCHW), weight zero points 0 as its QLinearConv requires for int8 weights
    if layout == "NCHW" or groups == 6:
        return
    values[3] = np.zeros(o, np.int8)
    pads = list(padding) if isinstance(padding, tuple) else [padding] * 4
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y"],
        pads=[pads[0], pads[1], pads[2], pads[3]], strides=[strides] * 2, group=groups,
    )  # fmt: skip
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    names = ("xs", "xz", "ws", "wz", "ys", "yz")
    want = run_onnx(node, {"x": x_nchw}, {**dict(zip(names, values)), "w": w_oihw, "bias": bias}, x_dtype)
    b = tk.GraphBuilder()
    xi = b.input("x", shape, x_dtype)
    params = [b.constant(v) for v in values]
    y = b.qconv2d(xi, b.constant(w), b.constant(bias), params, strides=strides, padding=padding, groups=groups, layout=layout, relu=relu)
    got = tk.build(b.finish(y))(x).transpose(0, 3, 1, 2)
    if relu:
        want = np.maximum(want, values[5])
    np.testing.assert_array_equal(got, want)

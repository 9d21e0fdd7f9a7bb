"""Quantized ONNX models: ONNX Runtime's quantizer output (QDQ from quantize_static,
QOperator, quantize_dynamic) imported, folded into int8 kernels and compared with ONNX
Runtime running the same file; unsupported schemes refused naming node and scheme."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph import quant
from tensorkiln.passes.fold_qdq import fold_qdq

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
quantization = pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tensorkiln.frontends.onnx import from_onnx  # noqa: E402


class SmallNet(torch.nn.Module):
    """conv-relu, a residual conv, global pooling, a classifier."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = torch.relu(self.c1(x))
        h = torch.relu(h + self.c2(h))
        return self.fc(h.mean((2, 3)))


class Reader(quantization.CalibrationDataReader):
    def __init__(self, rng, shape, count=6):
        self.samples = iter([{"x": rng.normal(size=shape).astype(np.float32)} for _ in range(count)])

    def get_next(self):
        return next(self.samples, None)


def exported(model, shape, path):
    torch.onnx.export(model.eval(), (torch.randn(*shape),), str(path), dynamo=False, input_names=["x"], output_names=["y"], opset_version=17)


def session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("activations", ["QUInt8", "QInt8"])
def test_qdq_static_model_exact_vs_onnxruntime(tmp_path, rng, activations):
    torch.manual_seed(0)
    shape = (2, 3, 12, 12)
    exported(SmallNet(), shape, tmp_path / "net.onnx")
    quantization.quantize_static(
        str(tmp_path / "net.onnx"), str(tmp_path / "q.onnx"), Reader(rng, shape),
        quant_format=quantization.QuantFormat.QDQ, per_channel=True,
        activation_type=getattr(quantization.QuantType, activations), weight_type=quantization.QuantType.QInt8,
    )  # fmt: skip
    module = from_onnx(onnx.load(str(tmp_path / "q.onnx")))
    folded = module.clone()
    assert fold_qdq(folded) == []
    assert len([op for op in folded.walk() if isinstance(op, quant.QConv2dOp | quant.QDenseOp)]) == 3
    lib, theirs = tk.build(folded), session(tmp_path / "q.onnx")
    for _ in range(3):
        x = rng.normal(size=shape).astype(np.float32)
        np.testing.assert_array_equal(lib(x), theirs.run(None, {"x": x})[0])


def test_qoperator_matmul_model(tmp_path, rng):
    """QOperator form of a bias-free MLP: QLinearMatMul nodes."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32, bias=False), torch.nn.ReLU(), torch.nn.Linear(32, 7, bias=False))
    exported(model, (5, 20), tmp_path / "mlp.onnx")
    quantization.quantize_static(
        str(tmp_path / "mlp.onnx"), str(tmp_path / "q.onnx"), Reader(rng, (5, 20)),
        quant_format=quantization.QuantFormat.QOperator, activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8,
    )  # fmt: skip
    model_proto = onnx.load(str(tmp_path / "q.onnx"))
    assert "QLinearMatMul" in {n.op_type for n in model_proto.graph.node}
    lib, theirs = tk.build(from_onnx(model_proto)), session(tmp_path / "q.onnx")
    x = rng.normal(size=(5, 20)).astype(np.float32)
    np.testing.assert_array_equal(lib(x), theirs.run(None, {"x": x})[0])


def test_dynamic_quantization(tmp_path, rng):
    """quantize_dynamic: DynamicQuantizeLinear + MatMulInteger (int32, exact) + float rescaling."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.ReLU(), torch.nn.Linear(40, 6))
    exported(model, (3, 24), tmp_path / "mlp.onnx")
    quantization.quantize_dynamic(str(tmp_path / "mlp.onnx"), str(tmp_path / "q.onnx"), weight_type=quantization.QuantType.QInt8)
    model_proto = onnx.load(str(tmp_path / "q.onnx"))
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in model_proto.graph.node}
    lib, theirs = tk.build(from_onnx(model_proto)), session(tmp_path / "q.onnx")
    x = rng.normal(size=(3, 24)).astype(np.float32)
    want = theirs.run(None, {"x": x})[0]
    np.testing.assert_allclose(lib(x), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def _single_node_model(node, inputs, initializers, out_type, opset=21):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(node.output[0], out_type, [4, 4])],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(
    "attrs, zero_point, scale, message",
    [
        # (blocked quantization and 16/4/2-bit types convert: tests/test_onnx_frontend.py, wide_and_narrow)
        ({}, np.int8(0), np.float64(0.1), "a float64 scale"),
        ({"axis": 1}, np.zeros(3, np.int8), np.ones(3, np.float32), "3 scales for axis 1 of size 4"),
    ],
)
def test_unsupported_schemes_name_node_and_scheme(attrs, zero_point, scale, message):
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="quant_3", **attrs)
    out_type = helper.np_dtype_to_tensor_dtype(np.asarray(zero_point).dtype)
    model = _single_node_model(node, [("x", TensorProto.FLOAT, [4, 4])], {"s": scale, "z": zero_point}, out_type)
    with pytest.raises(Exception, match=message) as error:
        from_onnx(model)
    assert "quant_3" in str(error.value)


def test_per_tensor_dequantize_of_a_vector(rng):
    """A per-tensor DequantizeLinear of a 1-d tensor (a quantized bias) ignores the default axis 1."""
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="bias_dq")
    q = rng.integers(0, 256, 9).astype(np.uint8)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("q", TensorProto.UINT8, [9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [9])],
        [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.uint8(7), "z")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    np.testing.assert_allclose(tk.build(from_onnx(model))(q), (q.astype(np.float32) - 7) * np.float32(0.1), rtol=1e-6)

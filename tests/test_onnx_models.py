"""The real models the onnx package ships (``onnx/backend/test/data/light``: AlexNet,
DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512)
import, build and match ONNX Runtime on random inputs (relative L2 error <= 1e-4).

The files hold their weights as ``ConstantOfShape`` fills (to stay light); they are
replaced by seeded random initializers (batch-norm variances positive) so that every
layer computes something that can differ. The logits before a final Softmax are compared
too (a saturated softmax would hide differences). The three models with 60-140 M
weights run with ``TK_ONNX_BIG_MODELS=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the reference these tests compare with")
from onnx import numpy_helper  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.onnx import from_onnx  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
SMALL = ["densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet"]
BIG = ["bvlc_alexnet", "vgg19", "zfnet512"]


def with_random_weights(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """``model`` with its ``ConstantOfShape`` weights replaced by random initializers
    (scaled by fan-in), and the input of a final Softmax as a second output."""
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    shapes = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    variances = {n.input[4] for n in out.graph.node if n.op_type == "BatchNormalization"}
    kept, weights = [], []
    for node in out.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(v) for v in shapes[node.input[0]])
            if node.output[0] in variances:
                values = rng.uniform(0.5, 1.5, shape)
            else:
                values = rng.standard_normal(shape) / np.sqrt(max(int(np.prod(shape[1:])), 1))
            weights.append(numpy_helper.from_array(values.astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    del out.graph.node[:]
    out.graph.node.extend(kept)
    out.graph.initializer.extend(weights)
    out.ir_version = max(out.ir_version, 4)  # (initializers need not be listed as inputs from IR 4 on)
    last = out.graph.node[-1]
    if last.op_type == "Softmax":
        inferred = onnx.shape_inference.infer_shapes(out)
        out.graph.output.append(next(v for v in inferred.graph.value_info if v.name == last.input[0]))
    return out


def _relative_l2(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - expected) / np.linalg.norm(expected))


def _check(name: str) -> None:
    model = with_random_weights(onnx.load(LIGHT / f"light_{name}.onnx"), seed=34)
    initializers = {t.name for t in model.graph.initializer}
    data = next(i for i in model.graph.input if i.name not in initializers)
    shape = [d.dim_value for d in data.type.tensor_type.shape.dim]
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, {data.name: x})
    got = tk.build(from_onnx(model))(x)
    got = list(got) if isinstance(got, list | tuple) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        assert np.std(e) > 0, "a constant output would not test anything"
        assert _relative_l2(g, e) <= 1e-4


@pytest.mark.parametrize("name", SMALL)
def test_light_model_matches_onnxruntime(name: str) -> None:
    _check(name)


@pytest.mark.skipif(not os.environ.get("TK_ONNX_BIG_MODELS"), reason="60-140 M weights: set TK_ONNX_BIG_MODELS=1")
@pytest.mark.parametrize("name", BIG)
def test_big_light_model_matches_onnxruntime(name: str) -> None:
    _check(name)

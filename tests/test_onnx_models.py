"""The real models the onnx package ships (``onnx/backend/test/data/light``: AlexNet,
DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512)
import, build and match ONNX Runtime on random inputs (relative L2 error <= 1e-4).

The files hold their weights as ``ConstantOfShape`` fills (to stay light); they are
replaced by seeded random initializers (``tensorkiln.examples.onnx_models``) so that
every layer computes something that can differ. The logits before a final Softmax are
compared too (a saturated softmax would hide differences). The three models with 60-140 M
weights run with ``TK_ONNX_BIG_MODELS=1``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the reference these tests compare with")
import tensorkiln as tk  # noqa: E402
from tensorkiln.examples.onnx_models import data_input, input_shape, light_model  # noqa: E402
from tensorkiln.frontends.onnx import from_onnx  # noqa: E402

SMALL = ["densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet"]
BIG = ["bvlc_alexnet", "vgg19", "zfnet512"]


def _relative_l2(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - expected) / np.linalg.norm(expected))


def _check(name: str) -> None:
    model = light_model(name, seed=34, expose_logits=True)
    data = data_input(model)
    x = np.random.default_rng(7).standard_normal(input_shape(model)).astype(np.float32)
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

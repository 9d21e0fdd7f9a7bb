"""ONNX models to test and time the ONNX frontend with: the real image models the onnx
package ships (``onnx/backend/test/data/light``), with seeded random weights.

The files hold their weights as ``ConstantOfShape`` fills (to stay light); here they
become random initializers scaled by fan-in, batch-norm variances positive, so every
layer computes something that can differ between two implementations::

    from tensorkiln.examples.onnx_models import LIGHT_MODELS, light_model

    model = light_model("resnet50", seed=0)        # an onnx.ModelProto
    x = np.random.default_rng(1).standard_normal(input_shape(model)).astype("f4")

Needs the onnx package.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
#: the light models, by name (``light_<name>.onnx``), smallest weights first
LIGHT_MODELS = ("squeezenet", "shufflenet", "inception_v1", "inception_v2", "densenet121", "resnet50", "bvlc_alexnet", "zfnet512", "vgg19")


def light_model(name: str, seed: int = 0, expose_logits: bool = False) -> onnx.ModelProto:
    """The light model ``name`` with random weights; with ``expose_logits`` the input of a
    final Softmax is a second output (a saturated softmax hides differences)."""
    model = onnx.load(LIGHT_DIR / f"light_{name}.onnx")
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    variances = {n.input[4] for n in model.graph.node if n.op_type == "BatchNormalization"}
    kept, weights = [], []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(v) for v in shapes[node.input[0]])
            if node.output[0] in variances:
                values = rng.uniform(0.5, 1.5, shape)
            else:
                values = rng.standard_normal(shape) / np.sqrt(max(int(np.prod(shape[1:])), 1))
            weights.append(numpy_helper.from_array(values.astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    model.graph.initializer.extend(weights)
    model.ir_version = max(model.ir_version, 4)  # (initializers need not be listed as inputs from IR 4 on)
    last = model.graph.node[-1]
    if expose_logits and last.op_type == "Softmax":
        inferred = onnx.shape_inference.infer_shapes(model)
        model.graph.output.append(next(v for v in inferred.graph.value_info if v.name == last.input[0]))
    return model


def data_input(model: onnx.ModelProto) -> onnx.ValueInfoProto:
    """The model's one graph input that is not an initializer (the image)."""
    initializers = {t.name for t in model.graph.initializer}
    return next(i for i in model.graph.input if i.name not in initializers)


def input_shape(model: onnx.ModelProto) -> tuple[int, ...]:
    return tuple(d.dim_value for d in data_input(model).type.tensor_type.shape.dim)


__all__ = ["LIGHT_DIR", "LIGHT_MODELS", "data_input", "input_shape", "light_model"]

"""Round trips through ONNX: every model of the torch zoo (``tensorkiln.examples.torch_zoo``)
exported with ``torch.onnx.export(..., dynamo=True)`` and a dynamic batch axis, imported
with ``from_onnx`` (the batch a symbolic dim, compiled once), matches torch eager at two
batch sizes and the same model imported through ``torch.export`` (``from_exported_program``);
relative L2 error <= 1e-5 in float32, integer outputs exactly."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the round trips export torch models")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript", reason="torch.onnx's dynamo exporter needs onnxscript")

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph.types import shape_of  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.frontends.onnx import from_onnx  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

TOLERANCE = 1e-5


def _outputs(result) -> list[np.ndarray]:
    values = result if isinstance(result, list | tuple) else [result]
    return [v.detach().numpy() if isinstance(v, torch.Tensor) else np.asarray(v) for v in values]


def _assert_close(got: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        if e.dtype.kind == "f":
            error = np.linalg.norm(g.astype(np.float64) - e) / max(np.linalg.norm(e.astype(np.float64)), 1e-30)
            assert error <= TOLERANCE, f"relative L2 error {error:.2e}"
        else:
            np.testing.assert_array_equal(g, e)


def _export(model, args):
    batch = torch.export.Dim("batch", min=1, max=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            program = torch.onnx.export(model, args, dynamo=True, dynamic_shapes=tuple({0: batch} for _ in args), verbose=False)
        finally:
            logging.disable(logging.NOTSET)
    return program.model_proto


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_through_onnx(name: str) -> None:
    entry = ZOO[name]
    model = entry.build()
    args = random_inputs(entry, seed=1)
    module = from_onnx(_export(model, args))
    first = shape_of(module.body.block.first_op.body.block.args[0].type)[0]
    assert isinstance(first, str), f"the batch axis should be symbolic, got {first}"
    lib = tk.build(module)
    for batch in (1, 5):
        inputs = random_inputs(entry, seed=3, batch=batch)
        with torch.no_grad():
            expected = _outputs(model(*inputs))
        _assert_close(_outputs(lib(*(x.numpy() for x in inputs))), expected)
    through_export = tk.build(from_exported_program(torch.export.export(model, args)))
    inputs = [x.numpy() for x in random_inputs(entry, seed=4)]
    _assert_close(_outputs(lib(*inputs)), _outputs(through_export(*inputs)))

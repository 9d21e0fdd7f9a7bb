"""tensorkiln as an ONNX backend (``onnx.backend.base.Backend``; here, at the top of the layers,
not in ``frontends/onnx``: it compiles, and frontends only produce graph IR): ``prepare`` imports a model
with :func:`~tensorkiln.frontends.onnx.from_onnx` and compiles it with ``tk.build``; the
prepared model's ``run`` takes the inputs as a list (or a dict by name) and returns the
outputs in the model's order. ONNX's own backend test runner runs against it::

    import onnx.backend.test
    import tensorkiln.tools.onnx_backend as tk_backend

    globals().update(onnx.backend.test.BackendTest(tk_backend, __name__).test_cases)

or one model by hand::

    rep = tk_backend.prepare(onnx.load("model.onnx"))
    (y,) = rep.run([x])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from ..build import build
from ..frontends.onnx import OnnxInputValuesNeeded, from_onnx, from_onnx_with_values
from ..frontends.onnx.held import boundary, from_held, to_held


class TensorkilnRep(BackendRep):
    """A model compiled by tensorkiln, run with ONNX's calling convention.

    A model that uses graph inputs as shapes, axes or sizes is compiled at ``run`` for the
    values given there (once per distinct set of values, kept)."""

    def __init__(self, model: onnx.ModelProto, options: Mapping[str, Any]):
        initializers = {t.name for t in model.graph.initializer}
        self.model = model
        self.options = dict(options)
        self.input_names = [i.name for i in model.graph.input if i.name not in initializers]
        self.output_names = [o.name for o in model.graph.output]
        #: inputs and outputs of types held in others (uint32, float8, int4: frontends/onnx/held.py)
        self._held_inputs, self._held_outputs = boundary(model)
        self._outputs = namedtuple("Outputs", [f"o{k}" for k in range(len(self.output_names))], rename=True)  # noqa: PYI024
        #: the compiled model for each set of bound input values (() -> the one without)
        self._compiled: dict[tuple, tuple[Any, tuple[str, ...]]] = {}
        self._needs: tuple[str, ...] = ()
        try:
            self._compiled[()] = (self._build(from_onnx(model, shape=self.options.get("shape"))), ())
        except OnnxInputValuesNeeded as e:
            self._needs = tuple(e.inputs)

    def _build(self, module: Any) -> Any:
        return build(module, target=self.options.get("target", "llvm"))

    def _for(self, values: Mapping[str, np.ndarray]) -> tuple[Any, tuple[str, ...]]:
        if not self._needs:
            return self._compiled[()]
        key = tuple((n, values[n].dtype.str, values[n].shape, values[n].tobytes()) for n in self._needs if n in values)
        if key not in self._compiled:
            module, bound = from_onnx_with_values(self.model, values, shape=self.options.get("shape"))
            self._compiled[key] = (self._build(module), tuple(bound))
        return self._compiled[key]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, Mapping):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ValueError(f"inputs {missing} are not given (the model takes {self.input_names})")
            arrays = [inputs[n] for n in self.input_names]
        elif isinstance(inputs, np.ndarray):
            arrays = [inputs]
        else:
            arrays = list(inputs)
        values = dict(zip(self.input_names, (np.asarray(a) for a in arrays)))
        values = {n: to_held(v, self._held_inputs[n], n) if n in self._held_inputs else v for n, v in values.items()}
        compiled, bound = self._for(values)
        results = compiled(*(v for n, v in values.items() if n not in bound))
        results = list(results) if isinstance(results, list | tuple) else [results]
        results = [from_held(r, h) if h is not None else r for r, h in zip(results, self._held_outputs)]
        return self._outputs(*results)


class TensorkilnBackend(Backend):
    """``onnx.backend.base.Backend`` on tensorkiln (CPU: the default llvm target)."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> TensorkilnRep:
        """Import and compile ``model``; ``kwargs``: ``shape`` (for :func:`from_onnx`) and
        ``target`` (for ``tk.build``)."""
        super().prepare(model, device, **kwargs)
        if not cls.supports_device(device):
            raise ValueError(f"device {device!r} is not supported (tensorkiln's ONNX backend runs on CPU)")
        return TensorkilnRep(model, kwargs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info: Sequence[tuple] | None = None, **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        """Run one node on numpy inputs (a model of that node alone, with the newest opset)."""
        arrays = [np.asarray(a) for a in (inputs.values() if isinstance(inputs, Mapping) else inputs)]
        names = [n for n in node.input if n]
        graph_inputs = [
            onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in zip(names, arrays)
        ]
        schema = onnx.defs.get_schema(node.op_type, domain=node.domain)
        types = {v.name: v.type for v in graph_inputs}
        inferred = onnx.shape_inference.infer_node_outputs(schema, node, types)
        graph_outputs = [onnx.helper.make_value_info(name, inferred[name]) for name in node.output if name]
        model = onnx.helper.make_model(onnx.helper.make_graph([node], "node", graph_inputs, graph_outputs))
        return cls.prepare(model, device, **kwargs).run(arrays)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU


prepare = TensorkilnBackend.prepare
run_model = TensorkilnBackend.run_model
run_node = TensorkilnBackend.run_node
supports_device = TensorkilnBackend.supports_device

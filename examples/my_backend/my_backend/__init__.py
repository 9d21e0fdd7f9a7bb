"""An example BYOC backend for tensorkiln: dense layers (+ReLU) offloaded to numpy.

``import my_backend`` registers the backend ``"mine"``: its pattern table (what it takes
from a model) and its codegen (a region of the model -> an external module that computes
it). ``tk.byoc.partition_for(module, "mine")`` then hands it every dense layer whose
weights are constants, with the ReLU after it where there is one; ``tk.build`` compiles
the rest and calls this module for those parts.
"""

from __future__ import annotations

import numpy as np

import tensorkiln as tk
from tensorkiln.byoc import PythonExternalModule, is_constant, is_op, register_kind, wildcard
from tensorkiln.byoc.external import spec_of

BACKEND = "mine"


@register_kind  # so an exported artifact can rebuild it: tensorkiln.runtime.load_module
class DenseChain(PythonExternalModule):
    """Dense layers applied one after the other: ``x @ w.T + b``, then ReLU where asked."""

    kind = "mine.dense_chain"

    def __init__(self, symbol, backend, inputs, outputs, relus=()):
        super().__init__(symbol, backend, inputs, outputs)
        self.relus = list(relus)  # one flag per layer; the weights come through init()

    def run(self, x: np.ndarray) -> list[np.ndarray]:
        for k, relu in enumerate(self.relus):
            x = x @ self.weights[f"w{k}"].T + self.weights[f"b{k}"]
            if relu:
                x = np.maximum(x, 0)
        return [x.astype(np.float32)]

    def payload(self) -> dict:
        return {"relus": self.relus}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload):
        return cls(symbol, backend, inputs, outputs, payload["relus"])


def codegen(region) -> DenseChain:
    """Compile one ``byoc.region``: a chain of ``mine.dense`` / ``mine.dense_relu`` composites."""
    relus, weights = [], {}
    for k, composite in enumerate(region.composites()):
        constants = [op.value.array for op in composite.body.block.ops if op.name == "graph.constant"]
        if len(constants) != 2:
            raise ValueError(f"{BACKEND}: composite {k} of region {region.symbol.data} has no constant weight and bias")
        weights[f"w{k}"], weights[f"b{k}"] = constants
        relus.append(composite.pattern.data.endswith("dense_relu"))
    inputs = [spec_of(a.type) for a in region.body.block.args]
    outputs = [spec_of(t) for t in region.outputs.types]
    if len(inputs) != 1 or len(outputs) != 1:
        raise ValueError(f"{BACKEND}: region {region.symbol.data} is not a chain (inputs {len(inputs)}, outputs {len(outputs)})")
    module = DenseChain(region.symbol.data, BACKEND, inputs, outputs, relus)
    module.init(weights)
    return module


def register() -> None:
    """Register the backend (done on import; again after ``tk.byoc.unregister_backend``)."""
    dense = is_op("graph.dense", wildcard(), is_constant(), is_constant())
    tk.byoc.register_backend(BACKEND, codegen=codegen)
    tk.byoc.register_patterns(BACKEND, [  # (name, pattern, check or None, priority): higher first
        ("dense_relu", is_op("graph.relu", dense), None, 2),
        ("dense", dense, None, 1),
    ])


register()

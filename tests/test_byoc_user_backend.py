"""A backend of one's own, from user code alone (no tensorkiln file edited): patterns for
``relu(a + b)`` and ``a * b``, a codegen, and an external module computing with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.byoc import PythonExternalModule, TensorSpec, is_op, register_kind, wildcard
from tensorkiln.byoc.external import spec_of

ELEMENTWISE = {"graph.add": np.add, "graph.mul": np.multiply, "graph.relu": lambda x: np.maximum(x, 0)}


@register_kind
class ToyModule(PythonExternalModule):
    """Runs a region's ops one by one with numpy; the program is a list of (op, args)."""

    kind = "toy.elementwise"

    def __init__(self, symbol, backend, inputs, outputs, program=()):
        super().__init__(symbol, backend, inputs, outputs)
        self.program = [(name, tuple(args)) for name, args in program]
        self.calls = 0

    def run(self, *inputs):
        self.calls += 1
        values = list(inputs)
        for name, args in self.program:
            values.append(ELEMENTWISE[name](*(values[a] for a in args)).astype(np.float32))
        return [values[-1]]

    def payload(self):
        return {"program": [[n, list(a)] for n, a in self.program]}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload):
        return cls(symbol, backend, inputs, outputs, payload["program"])


def toy_codegen(region):
    """Number the region's values: its inputs, then each op's result in order."""
    index = {arg: k for k, arg in enumerate(region.body.block.args)}
    program = []
    for composite in region.composites():
        local = {a: index[v] for a, v in zip(composite.body.block.args, composite.inputs)}
        for op in list(composite.body.block.ops)[:-1]:  # all but byoc.yield
            program.append((op.name, [local[v] for v in op.operands]))
            local[op.results[0]] = len(region.body.block.args) + len(program) - 1
        index[composite.result] = local[composite.body.block.last_op.values[0]]
    inputs = [spec_of(a.type) for a in region.body.block.args]
    outputs = [spec_of(t) for t in region.outputs.types]
    return ToyModule(region.symbol.data, "toy", inputs, outputs, program)


@pytest.fixture(scope="module")
def toy_backend():
    add = is_op("graph.add", wildcard(), wildcard())
    tk.byoc.register_backend("toy", toy_codegen)
    tk.byoc.register_patterns(
        "toy",
        [
            ("add_relu", is_op("graph.relu", add), lambda m: m.root.results[0].type == m.ops[1].lhs.type, 2),
            ("mul", is_op("graph.mul", wildcard(), wildcard()), None, 1),
        ],
    )
    yield "toy"
    tk.byoc.unregister_backend("toy")


def test_a_user_backend_offloads_and_runs_compiled(toy_backend, rng):
    b = tk.GraphBuilder()
    x, y = b.input("x", ("n", 13)), b.input("y", ("n", 13))
    module = b.finish(b.exp(b.relu(b.add(b.mul(x, y), y))))
    part = tk.byoc.partition_for(module, toy_backend)
    (toy,) = tk.byoc.external_modules(part)  # mul and relu(add) merged; exp stays ours
    assert toy.program == [("graph.mul", (0, 1)), ("graph.add", (2, 1)), ("graph.relu", (3,))]
    assert toy.inputs == [TensorSpec("", ("n", 13), np.dtype("<f4"))] * 2
    xs = [rng.standard_normal((5, 13)).astype(np.float32) for _ in range(2)]
    want = np.exp(np.maximum(xs[0] * xs[1] + xs[1], 0))
    np.testing.assert_allclose(tk.build(part)(*xs), want, rtol=1e-6)
    assert toy.calls == 1
    copy = tk.byoc.deserialize(toy.serialize())
    np.testing.assert_array_equal(copy.run(*xs)[0], toy.run(*xs)[0])

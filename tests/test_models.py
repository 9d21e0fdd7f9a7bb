"""End to end: the bundled MLP and CNN, built with the builder API, compiled, matching
the interpreter on fresh inputs; the tensorkiln command runs them."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.examples.models import elementwise_chain, mlp, small_cnn


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.linalg.norm(got - expected) / np.linalg.norm(expected))


@pytest.mark.parametrize("batch", [1, 3])
def test_mlp_matches_interpreter(rng, batch):
    module, _ = mlp(batch=batch, seed=int(rng.integers(1 << 30)))
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    got = tk.build(module)(x)
    expected = tk.create_executor("interpreter", module).evaluate()(x)
    assert got.shape == (batch, 10) and got.dtype == np.float32
    assert _relative_error(got, expected) <= 1e-5


@pytest.mark.parametrize("batch, size", [(1, 32), (2, 17)])
def test_cnn_matches_interpreter(rng, batch, size):
    module, _ = small_cnn(batch=batch, size=size, seed=int(rng.integers(1 << 30)))
    x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
    got = tk.build(module)(x)
    expected = tk.create_executor("interpreter", module).evaluate()(x)
    assert got.shape == (batch, 10)
    assert _relative_error(got, expected) <= 1e-5


def test_cnn_matches_torch(rng):
    torch = pytest.importorskip("torch")
    module, _ = small_cnn(seed=3)
    from tensorkiln.dialects.graph import ConstantOp

    # in the order small_cnn creates them (names may carry a suffix if reused in-process)
    names = ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"]
    arrays = [torch.from_numpy(op.array()) for op in module.walk() if isinstance(op, ConstantOp)]
    weights = dict(zip(names, arrays, strict=True))
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    F = torch.nn.functional
    h = F.relu(F.conv2d(torch.from_numpy(x), weights["conv1.weight"], weights["conv1.bias"], padding=1))
    h = F.max_pool2d(h, 2, 2)
    h = F.relu(F.conv2d(h, weights["conv2.weight"], weights["conv2.bias"], padding=1))
    h = F.adaptive_avg_pool2d(h, 1).reshape(1, -1)
    expected = F.linear(h, weights["fc.weight"], weights["fc.bias"]).numpy()
    assert _relative_error(tk.build(module)(x), expected) <= 1e-5


def test_several_outputs_and_an_input_returned(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (4, 5))
    y = b.exp(x)
    module = b.finish(y, x, y, b.reduce_sum(y, (1,)))
    data = rng.standard_normal((4, 5)).astype(np.float32)
    outs = tk.build(module)(data)
    assert isinstance(outs, tuple) and len(outs) == 4
    np.testing.assert_allclose(outs[0], np.exp(data), rtol=1e-6)
    np.testing.assert_array_equal(outs[1], data)
    np.testing.assert_array_equal(outs[2], outs[0])
    assert outs[0] is not outs[2]
    np.testing.assert_allclose(outs[3], np.exp(data).sum(1), rtol=1e-5)


def test_long_chain(rng):
    module, _ = elementwise_chain(60, shape=(3, 7))
    x = rng.standard_normal((3, 7)).astype(np.float32)
    np.testing.assert_allclose(
        tk.build(module)(x), tk.create_executor("interpreter", module).evaluate()(x), rtol=1e-5, atol=1e-6
    )


def test_main_command_runs_the_bundled_models(capsys):
    from tensorkiln.tools.main import main

    assert main(["--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "mlp" in out and "cnn" in out and "all outputs match the interpreter" in out


def test_interpreter_outputs_are_fresh_arrays(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (2, 3))
    y = b.exp(x)
    module = b.finish(x, y, y)
    data = rng.standard_normal((2, 3)).astype(np.float32)
    same, first, second = tk.create_executor("interpreter", module).evaluate()(data)
    assert not np.shares_memory(same, data) and not np.shares_memory(first, second)
    np.testing.assert_array_equal(same, data)


def test_builder_scalar_takes_the_value_operand_type(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (4,))
    module = b.finish(b.where(b.compare(x, 0.0, "gt"), x, 0.5))
    data = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_array_equal(tk.build(module)(data), np.where(data > 0, data, np.float32(0.5)))

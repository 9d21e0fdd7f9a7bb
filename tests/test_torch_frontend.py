"""The torch frontend's contract beyond single ops: parameters by reference or as inputs,
the structure of what a model returns, errors (unsupported ops all at once, unsupported
dtypes, a failing converter naming the node and the user's line), source locations."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend needs torch")
nn, F = torch.nn, torch.nn.functional

import torch.nn.functional as F  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph import ConstantOp  # noqa: E402
from tensorkiln.dialects.graph.types import WeightAttr  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.complex import COMPLEX_CONVERTERS  # noqa: E402
from tensorkiln.frontends.torch.registry import CONVERTERS  # noqa: E402
from xdsl.dialects import func  # noqa: E402
from xdsl.dialects.builtin import FileLineColLoc, NameLoc  # noqa: E402


def _export(model: nn.Module, *args, **kwargs):
    return torch.export.export(model.eval(), args, **kwargs)


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - expected) / np.linalg.norm(expected.astype(np.float64)))


def _line_of(fn, text: str) -> int:
    """The line number of the line of ``fn``'s source containing ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


class ConvBNLinear(nn.Module):
    """A small model with parameters and batch-norm buffers (random running statistics)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 5)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.randn(4))
            self.bn.running_var.copy_(torch.rand(4) + 0.5)
            self.bn.weight.copy_(torch.rand(4) + 0.5)
            self.bn.bias.copy_(torch.randn(4))

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return self.fc(h.flatten(1))


def _weights(module) -> list[np.ndarray]:
    return [
        op.value.array for op in module.walk() if isinstance(op, ConstantOp) and isinstance(op.value, WeightAttr)
    ]


# ---------------------------------------------------------------------------
# parameters


def test_parameters_are_constants_held_by_reference(rng):
    model = ConvBNLinear().eval()
    module = from_exported_program(_export(model, torch.randn(2, 3, 6, 6)))
    weights = _weights(module)
    tensors = dict(model.named_parameters()) | {
        k: v for k, v in model.named_buffers() if v.dtype.is_floating_point
    }
    for name, tensor in tensors.items():
        data = tensor.detach().numpy()
        assert any(np.shares_memory(w, data) for w in weights), f"{name} was copied (no constant shares its memory)"
    # by reference, so a change to the torch parameter shows in the imported module
    with torch.no_grad():
        model.fc.weight.mul_(-2.0)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    got = tk.create_executor("interpreter", module).evaluate()(x)
    assert _relative_error(got, expected) <= 1e-5


def test_keep_params_as_input_returns_the_params_to_bind(rng):
    model = ConvBNLinear().eval()
    module, params = from_exported_program(_export(model, torch.randn(2, 3, 6, 6)), keep_params_as_input=True)
    state = model.state_dict()
    assert set(params) == set(state)
    for name, array in params.items():
        assert np.shares_memory(array, state[name].numpy()), f"params[{name!r}] is a copy of the torch tensor"
    assert not any(
        np.shares_memory(w, t.numpy()) for w in _weights(module) for t in state.values()
    ), "keep_params_as_input=True left parameters as constants in the module"
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert len(main.body.block.args) == 1 + len(params)

    lib = tk.build(module)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    got = lib(x, *params.values())
    assert got.shape == expected.shape
    assert _relative_error(got, expected) <= 1e-5
    # other values for the parameters give torch's result with those values
    new = {k: (v * 1.5 if v.dtype.kind == "f" else v) for k, v in params.items()}
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, order="C")) for k, v in new.items()})
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    assert _relative_error(lib(x, *new.values()), expected) <= 1e-5


# ---------------------------------------------------------------------------
# what a model returns


class Structured(nn.Module):
    def forward(self, x, y):
        s = x + y
        return s, (torch.relu(x), None, (y * 2.0, s.sum(1))), None, [x - y]


class SameTensorTwice(nn.Module):
    def forward(self, x):
        y = torch.tanh(x)
        return y, x, y


def _flat(result):
    if result is None:
        return []
    if isinstance(result, list | tuple):
        return [t for r in result for t in _flat(r)]
    return [result.numpy()]


@pytest.mark.parametrize("model_class", [Structured, SameTensorTwice])
def test_tuple_nested_and_none_outputs(rng, model_class):
    model = model_class()
    n_args = len(inspect.signature(model.forward).parameters)
    args = [torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)) for _ in range(n_args)]
    module = from_exported_program(_export(model, *args))
    expected = _flat(model(*args))
    for run in (tk.create_executor("interpreter", module).evaluate(), tk.build(module)):
        got = run(*(a.numpy() for a in args))
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_a_single_output_is_an_array_and_a_one_tuple_too(rng):
    class One(nn.Module):
        def forward(self, x):
            return torch.tanh(x)

    class OneTuple(nn.Module):
        def forward(self, x):
            return (torch.tanh(x), None)

    x = torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32))
    for model in (One(), OneTuple()):
        got = tk.build(from_exported_program(_export(model, x)))(x.numpy())
        assert isinstance(got, np.ndarray), type(got)
        np.testing.assert_allclose(got, np.tanh(x.numpy()), rtol=1e-6, atol=1e-6)


def test_max_pool_indices_are_not_silently_dropped():
    class PoolWithIndices(nn.Module):
        def forward(self, x):
            return F.max_pool2d(x, 2, return_indices=True)

    x = torch.randn(1, 2, 4, 4)
    try:
        module = from_exported_program(_export(PoolWithIndices(), x))
    except (UnsupportedOperatorError, TorchImportError):
        return  # a clear refusal is fine
    values, indices = PoolWithIndices()(x)
    got = tk.create_executor("interpreter", module).evaluate()(x.numpy())
    assert isinstance(got, tuple) and len(got) == 2, "the indices output was dropped"
    np.testing.assert_array_equal(got[1], indices.numpy())


# ---------------------------------------------------------------------------
# unsupported ops: all of them, at once, before any conversion


class UsesUnsupportedOps(nn.Module):
    """Supported ops around three that have no converter (one of them twice)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        eigenvalues = [torch.linalg.eigvals(h * k).real for k in (1, 2)]  # aten.linalg_eig x2
        factors, pivots = torch.linalg.ldl_factor(h @ h.mT)  # aten.linalg_ldl_factor_ex
        solved = torch.linalg.ldl_solve(factors, pivots, h)  # aten.linalg_ldl_solve
        return eigenvalues[0] + eigenvalues[1], solved


UNSUPPORTED = {
    "aten.linalg_eig.default": ["linalg_eig", "linalg_eig_1"],
    "aten.linalg_ldl_factor_ex.default": ["linalg_ldl_factor_ex"],
    "aten.linalg_ldl_solve.default": ["linalg_ldl_solve"],
}


def test_the_chosen_unsupported_ops_have_no_converter():
    assert not set(UNSUPPORTED) & (set(CONVERTERS) | set(COMPLEX_CONVERTERS)), "pick other unsupported ops for these tests"


def test_unsupported_ops_are_listed_at_once_with_counts_and_nodes(monkeypatch):
    ep = _export(UsesUnsupportedOps(), torch.randn(3, 4, 4))
    converted = []
    for name in ("aten.relu.default", "aten.linear.default"):  # record any conversion work
        original = CONVERTERS[name]
        monkeypatch.setitem(CONVERTERS, name, lambda *a, _f=original, **k: converted.append(a[1]) or _f(*a, **k))
    with pytest.raises(UnsupportedOperatorError) as info:
        from_exported_program(ep)
    message = str(info.value)
    assert message.startswith("3 unsupported operators (4 nodes)"), message
    for op, nodes in UNSUPPORTED.items():
        match = re.search(re.escape(op) + r" x(\d+) \(([^)]*)\)", message)
        assert match, f"{op} is not listed with a count and its nodes: {message}"
        assert int(match.group(1)) == len(nodes)
        assert match.group(2).split(", ") == nodes
    assert "relu" not in message and "linear" not in message, "supported ops are listed as unsupported"
    assert not converted, f"nodes were converted before the unsupported ops were reported: {converted}"


def test_unsupported_operator_error_is_a_not_implemented_error():
    assert issubclass(UnsupportedOperatorError, NotImplementedError)


# ---------------------------------------------------------------------------
# unsupported dtypes


class Double(nn.Module):
    def forward(self, x):
        return x * 2


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint64, torch.uint32])
def test_unsupported_input_dtype_is_a_clear_error(dtype):
    ep = _export(Double(), torch.ones(2, 3).to(dtype))
    with pytest.raises(TorchImportError) as info:
        from_exported_program(ep)
    message = str(info.value)
    assert "'x'" in message or message.startswith("x:"), f"the input is not named: {message}"
    assert str(dtype) in message and "not supported" in message and "float32" in message, message


class UInt16Buffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.full((3,), 5, dtype=torch.uint16))

    def forward(self, x):
        return x * 2  # the buffer is lifted as an input even though it is unused


def test_unsupported_parameter_dtype_names_the_parameter():
    ep = _export(UInt16Buffer(), torch.ones(2, 3))
    with pytest.raises((TorchImportError, TypeError), match=r"scale.*torch\.uint16.*not supported"):
        from_exported_program(ep)


class CastsToUInt16(nn.Module):
    def forward(self, x):
        y = torch.ops.aten._to_copy.default(x + 1, dtype=torch.uint16)
        return torch.ops.aten._to_copy.default(y, dtype=torch.float32)


def test_unsupported_intermediate_dtype_names_the_node_and_line():
    ep = _export(CastsToUInt16(), torch.ones(2, 3))
    with pytest.raises(TorchImportError) as info:
        from_exported_program(ep)
    message = str(info.value)
    assert "_to_copy" in message and "torch.uint16" in message and "not supported" in message, message
    assert f"{__file__}:{_line_of(CastsToUInt16.forward, 'dtype=torch.uint16')}" in message, message


# ---------------------------------------------------------------------------
# converter errors and locations


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        h = torch.relu(h)
        return torch.softmax(h * 2.0, dim=-1)


def test_a_converter_error_names_the_node_and_the_users_line(monkeypatch):
    def broken(ctx, node, *args, **kwargs):
        raise ValueError("something about the arguments is wrong")

    monkeypatch.setitem(CONVERTERS, "aten.relu.default", broken)
    with pytest.raises(TorchImportError) as info:
        from_exported_program(_export(Small(), torch.randn(2, 4)))
    message = str(info.value)
    assert "'relu'" in message and "aten.relu.default" in message, message
    assert f"{__file__}:{_line_of(Small.forward, 'torch.relu')}" in message, message
    assert "something about the arguments is wrong" in message


def _imported_with_nodes(model, *args):
    """The module, and the names of the fx nodes of the (decomposed) program it came from."""
    from tensorkiln.frontends.torch.importer import _decompose

    ep = _export(model, *args)
    return from_exported_program(ep), {n.name for n in _decompose(ep).graph.nodes}


def _body_ops(module):
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return [op for op in main.body.block.ops if not isinstance(op, func.ReturnOp)]


def _is_parameter(op, model) -> bool:
    state = [t.detach().numpy() for t in model.state_dict().values()]
    return (
        isinstance(op, ConstantOp)
        and isinstance(op.value, WeightAttr)
        and any(np.shares_memory(op.value.array, t) for t in state)
    )


def test_every_converted_op_carries_its_node_name_and_line():
    model = Small()
    module, nodes = _imported_with_nodes(model, torch.randn(2, 4))
    converted = [op for op in _body_ops(module) if not _is_parameter(op, model)]
    assert {op.name for op in converted} >= {"graph.dense", "graph.relu", "graph.mul", "graph.softmax"}
    for op in converted:
        assert isinstance(op.location, NameLoc), f"{op.name} has no NameLoc: {op.location}"
        assert op.location.desc.data in nodes, f"{op.name}: {op.location} names no fx node"
        assert isinstance(op.location.location, FileLineColLoc), f"{op.name}: {op.location} has no file:line"
    relu = next(op for op in converted if op.name == "graph.relu")
    assert relu.location.location.filename.data == __file__
    assert relu.location.location.line.data == _line_of(Small.forward, "torch.relu")


def test_parameter_constants_carry_a_location():
    module, nodes = _imported_with_nodes(Small(), torch.randn(2, 4))
    for op in _body_ops(module):
        assert isinstance(op.location, NameLoc), f"{op.name} has no NameLoc: {op.location}"


def test_a_module_call_is_located_at_the_users_line():
    module, _ = _imported_with_nodes(Small(), torch.randn(2, 4))
    dense = next(op for op in _body_ops(module) if op.name == "graph.dense")
    assert dense.location.location.filename.data == __file__, dense.location
    assert dense.location.location.line.data == _line_of(Small.forward, "self.fc(x)")


@pytest.mark.parametrize("index", [np.s_[:, -2:], np.s_[:, :3], np.s_[:, 2:5], np.s_[:, :]])
def test_in_place_slice_assignment(index):
    """``y[:, a:b] = v`` exports as slice_scatter/copy; the result matches torch."""

    class Assign(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            y[index] = 7.0
            return y + 1

    x = torch.randn(3, 6)
    module = from_exported_program(torch.export.export(Assign(), (x,)))
    np.testing.assert_array_equal(tk.build(module)(x.numpy()), Assign()(x).numpy())


def test_inputs_updated_in_place_are_not_returned():
    """torch.export returns an input's new value (x.add_) before the model's outputs: the
    compiled model returns what the model returns, as torch eager does."""

    class Bump(nn.Module):
        def forward(self, x, y):
            x.add_(1.5)
            return x * y, y - 1

    rng = np.random.default_rng()
    x, y = (torch.from_numpy(rng.standard_normal((3, 5)).astype(np.float32)) for _ in range(2))
    lib = tk.build(from_exported_program(torch.export.export(Bump(), (x.clone(), y))))
    got = lib(x.numpy(), y.numpy())
    assert len(got) == 2
    np.testing.assert_allclose(got[0], ((x + 1.5) * y).numpy(), rtol=1e-6)
    np.testing.assert_allclose(got[1], (y - 1).numpy(), rtol=1e-6)


def test_buffers_updated_in_place_are_refused_by_name():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls.add_(1)
            return x * 2

    with pytest.raises(TorchImportError, match="updates calls in place.*state_as_io=True"):
        from_exported_program(torch.export.export(Counter(), (torch.randn(3),)))


class StaticCacheAttention(nn.Module):
    """One decoding step with a static KV cache in buffers, written in place at the
    step's position (``index_copy_``, as transformers' StaticCache does); attention over
    the positions written so far. A step counter buffer too."""

    def __init__(self, d: int = 16, length: int = 12):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.register_buffer("keys", torch.zeros(1, length, d))
        self.register_buffer("values", torch.zeros(1, length, d))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x, position):
        self.keys.index_copy_(1, position, self.k(x))
        self.values.index_copy_(1, position, self.v(x))
        self.steps.add_(1)
        scores = self.q(x) @ self.keys.transpose(1, 2)
        seen = torch.arange(self.keys.shape[1]) <= position
        return torch.where(seen, scores, float("-inf")).softmax(-1) @ self.values


def test_buffers_updated_in_place_pass_through_as_state():
    torch.manual_seed(5)
    model = StaticCacheAttention().eval()
    x = torch.randn(1, 1, 16)
    ep = torch.export.export(model, (x, torch.tensor([0])))
    module, state = from_exported_program(ep, state_as_io=True)
    assert list(state) == ["keys", "values", "steps"]
    assert [a.name_hint for a in module.ops.first.body.block.args] == ["x", "position", "keys", "values", "steps"]
    lib = tk.build(module)
    reference = StaticCacheAttention().eval()
    reference.load_state_dict(model.state_dict())
    for step in range(5):
        x, position = torch.randn(1, 1, 16), torch.tensor([step])
        with torch.no_grad():
            want = reference(x, position)
        out, *new = lib(x.numpy(), position.numpy(), *state.values())
        state = dict(zip(state, new))
        np.testing.assert_allclose(out, want.numpy(), rtol=1e-5, atol=1e-6)
        for name, value in state.items():
            np.testing.assert_allclose(value, getattr(reference, name).numpy(), rtol=1e-6, atol=1e-7)
    assert state["steps"] == 5
    # with the weights as inputs too: (module, params, state), state inputs last
    module, params, state = from_exported_program(ep, keep_params_as_input=True, state_as_io=True)
    assert set(state) == {"keys", "values", "steps"} and not set(state) & set(params)
    assert [a.name_hint for a in module.ops.first.body.block.args][-3:] == ["keys", "values", "steps"]

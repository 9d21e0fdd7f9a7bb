"""The four executors (interpreter, graph, vm, aot): same outputs, the graph JSON and its
memory plan, the profiler and benchmark, argument errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.runtime.graph_program import FORMAT, GraphProgram, ProgramFormatError
from tensorkiln.runtime.memory_plan import plan_memory

KINDS = ("interpreter", "graph", "vm", "aot")


def _mlp_module(rng, batch="n"):
    b = tk.GraphBuilder()
    x = b.input("x", (batch, 37))
    h = b.relu(b.dense(x, rng.standard_normal((29, 37)).astype("f4"), rng.standard_normal(29).astype("f4")))
    y = b.softmax(b.dense(h, rng.standard_normal((11, 29)).astype("f4")), -1)
    return b.finish(y)


def _residual_module(rng, blocks=3, width=13):
    """A ResNet-style chain: each block is two dense+relu layers and a skip add."""
    b = tk.GraphBuilder()
    x = b.input("x", (5, width))
    h = x
    for _ in range(blocks):
        a = b.relu(b.dense(h, rng.standard_normal((width, width)).astype("f4") * 0.3))
        a = b.dense(a, rng.standard_normal((width, width)).astype("f4") * 0.3)
        h = b.relu(b.add(a, h))
    return b.finish(b.reduce_sum(h, [1], False))


@pytest.mark.parametrize("kind", KINDS)
def test_every_executor_matches_the_interpreter(kind, rng):
    module = _mlp_module(rng)
    reference = tk.create_executor("interpreter", module).evaluate()
    run = tk.create_executor(kind, module, target="llvm").evaluate()
    for n in (1, 3, 17):
        x = rng.standard_normal((n, 37)).astype("f4")
        np.testing.assert_allclose(run(x), reference(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_a_model_without_inputs(rng, opt_level):
    """All-constant graphs (folded whole at opt_level 2) still compile to a callable of
    no arguments (before: KeyError 'tk.entry' from the host lowering)."""
    table = rng.standard_normal((3, 7)).astype("f4")
    b = tk.GraphBuilder()
    module = b.finish(b.softmax(b.exp(b.constant(table)), -1), b.reduce_sum(b.constant(table), (1,)))
    e = np.exp(table)
    expected = (np.exp(e - e.max(1, keepdims=True)) / np.exp(e - e.max(1, keepdims=True)).sum(1, keepdims=True), table.sum(1))
    with tk.PassContext(opt_level=opt_level):
        outputs = [tk.build(module)()] + [tk.create_executor(kind, module).evaluate()() for kind in KINDS]
    for got in outputs:
        for g, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_a_model_without_inputs_or_outputs():
    """A model that computes nothing (no inputs, no outputs) builds and returns ()."""
    module = tk.GraphBuilder().finish()
    assert tk.build(module)() == ()
    for kind in KINDS:
        assert tk.create_executor(kind, module).evaluate()() == ()


def test_more_arguments_than_ctypes_calls(rng, tmp_path):
    """A model with 1030 weights (EfficientNet-B7 has 1185): its entry takes 1032
    arguments and its first kernel (1024 fused products) 1026, beyond ctypes' 1024. Every
    executor calls it (through the packed companions), the shared library too; one build
    at a symbolic batch size checks the dims read from the argument array."""
    from tensorkiln.runtime import load_module

    weights = [rng.uniform(0.9, 1.1, (1, 5)).astype("f4") for _ in range(1030)]
    b = tk.GraphBuilder()
    y = x = b.input("x", ("n", 5))
    for w in weights:
        y = b.mul(y, w)
    module = b.finish(y)
    lib = tk.build(module)
    assert len(lib.graph_program.nodes) == 2
    lib.export_library(tmp_path / "model")
    runs = [lib, lib.graph_executor(), *(load_module(tmp_path / "model", executor=k) for k in ("aot", "graph"))]
    for n in (1, 4):
        data = rng.standard_normal((n, 5)).astype("f4")
        expected = data * np.prod(np.concatenate(weights), axis=0)
        for run in runs:
            np.testing.assert_allclose(run(data), expected, rtol=1e-5)


def test_unknown_executor_kind_is_named():
    with pytest.raises(ValueError, match="unknown executor kind 'relay'.*graph.*vm"):
        tk.create_executor("relay", _mlp_module(np.random.default_rng(0)))


@pytest.mark.parametrize("kind", ["graph", "vm", "aot"])
def test_wrong_size_calls_raise_a_clear_error(kind, rng):
    run = tk.create_executor(kind, _mlp_module(rng)).evaluate()
    with pytest.raises(ValueError, match=r"argument 'x'.*dim 1.*expected 37, got 36"):
        run(np.zeros((3, 36), "f4"))
    with pytest.raises(ValueError, match=r"argument 'x': expected rank 2"):
        run(np.zeros((3,), "f4"))
    with pytest.raises(ValueError, match="expected 1 arguments"):
        run()


def test_params_bind_inputs_by_name(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 5))
    w = b.input("w", (7, 5))
    module = b.finish(b.dense(x, w))
    wv = rng.standard_normal((7, 5)).astype("f4")
    xv = rng.standard_normal((3, 5)).astype("f4")
    for kind in KINDS:
        run = tk.create_executor(kind, module, params={"w": wv}).evaluate()
        np.testing.assert_allclose(run(xv), xv @ wv.T, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"params \['v'\] are not inputs"):
        tk.create_executor("aot", module, params={"v": wv}).evaluate()


# ---------------------------------------------------------------------------
# the graph program


def test_graph_json_is_documented_and_round_trips(rng):
    lib = tk.build(_mlp_module(rng))
    program = lib.graph_program
    data = json.loads(program.dumps())
    assert data["format"] == FORMAT
    assert {"signature", "tensors", "storages", "nodes"} <= set(data)
    kinds = {t["kind"] for t in data["tensors"]}
    assert kinds == {"input", "output", "weight", "temp"}
    for node in data["nodes"]:
        assert node["kernel"] in program.kernels and all(0 <= a < len(data["tensors"]) for a in node["args"])
    x_tensor = next(t for t in data["tensors"] if t["kind"] == "input")
    assert x_tensor["shape"] == ["n", 37] and x_tensor["dtype"] == "float32" and x_tensor["dynamic_axes"] == [0]
    again = GraphProgram.loads(program.dumps())
    assert again.to_json() == program.to_json()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(format="other/1"), "format 'other/1'"),
        (lambda d: d["nodes"][0].update(args=[999]), "argument out of range"),
        (lambda d: d["tensors"][0].update(kind="ghost"), "unknown kind 'ghost'"),
        (lambda d: d["tensors"][0].update(shape=[-3, 4]), "bad shape"),
        (lambda d: d.pop("nodes"), "malformed graph program: KeyError"),
    ],
)
def test_malformed_graph_json_is_named(edit, message, rng):
    data = json.loads(tk.build(_mlp_module(rng)).graph_program.dumps())
    edit(data)
    with pytest.raises(ProgramFormatError, match=message):
        GraphProgram.from_json(data)
    with pytest.raises(ProgramFormatError, match="not valid JSON"):
        GraphProgram.loads("{nodes: ")


def _lifetimes(program: GraphProgram) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for k, node in enumerate(program.nodes):
        for t in node.args:
            if program.tensors[t].kind == "temp":
                first, _ = spans.get(t, (k, k))
                spans[t] = (first, k)
    return spans


def _assert_plan_is_safe(program: GraphProgram) -> None:
    """Tensors sharing a storage never live at the same time (a node's output never
    shares with its own arguments), and each storage fits its tensors."""
    spans = _lifetimes(program)
    for members in program.storages:
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                (a0, a1), (b0, b1) = spans[a], spans[b]
                assert a1 < b0 or b1 < a0, f"tensors {a} and {b} share a storage while both live"


def test_memory_plan_reuses_storage_on_a_resnet_style_model(rng):
    module = _residual_module(rng, blocks=4)
    lib = tk.build(module, opt_level=0)  # unfused: many intermediates
    program = lib.graph_program
    temporaries = program.temporaries
    assert len(temporaries) >= 12
    assert len(program.storages) < len(temporaries), "planned storage is not smaller than one buffer per intermediate"
    planned = sum(program.storage_bytes({}))
    unplanned = sum(program.tensors[t].nbytes({}) for t in temporaries)
    assert planned < unplanned
    _assert_plan_is_safe(program)
    x = rng.standard_normal((5, 13)).astype("f4")
    reference = tk.create_executor("interpreter", module).evaluate()(x)
    np.testing.assert_allclose(lib.graph_executor()(x), reference, rtol=1e-4, atol=1e-5)


def test_memory_plan_with_symbolic_sizes_is_right_at_every_size(rng):
    module = _mlp_module(rng)
    lib = tk.build(module, opt_level=0)
    _assert_plan_is_safe(lib.graph_program)
    graph, reference = lib.graph_executor(), tk.create_executor("interpreter", module).evaluate()
    for n in (17, 1, 64, 3):  # grow, shrink, grow: storages are sized per binding
        x = rng.standard_normal((n, 37)).astype("f4")
        np.testing.assert_allclose(graph(x), reference(x), rtol=1e-5, atol=1e-6)


def test_plan_memory_never_lets_a_result_share_with_its_arguments():
    from tensorkiln.runtime.graph_program import GraphNode, GraphTensor
    from tensorkiln.runtime.signature import Signature, TensorSpec

    f4 = np.dtype("float32")
    sig = Signature((TensorSpec("x", (4,), f4),), (TensorSpec("y", (4,), f4),))
    tensors = [GraphTensor("x", "input", (4,), f4, index=0), GraphTensor("y", "output", (4,), f4, index=0)]
    tensors += [GraphTensor(f"t{k}", "temp", (4,), f4) for k in range(3)]
    # t2 = f(t0, t1) where t0, t1 die at that node: t2 may not take their storage
    nodes = [GraphNode("a", (0, 2)), GraphNode("b", (0, 3)), GraphNode("c", (2, 3, 4)), GraphNode("d", (4, 1))]
    program = GraphProgram(sig, tensors, nodes)
    plan_memory(program)
    assert tensors[4].storage not in (tensors[2].storage, tensors[3].storage)
    assert len(program.storages) == 3


# ---------------------------------------------------------------------------
# profiler and benchmark


def test_profile_reports_kernels_sorted_and_the_three_latencies(rng):
    module = _residual_module(rng, blocks=2)
    lib = tk.build(module, opt_level=0)
    x = rng.standard_normal((5, 13)).astype("f4")
    report = lib.profile(x, runs=3)
    names = [k.name for k in report.kernels]
    assert set(names) == set(lib.graph_program.kernels)
    totals = [k.total_seconds for k in report.kernels]
    assert totals == sorted(totals, reverse=True)
    assert sum(k.calls for k in report.kernels) == len(lib.graph_program.nodes)
    assert abs(sum(k.share for k in report.kernels) - 1.0) < 1e-9
    for k in report.kernels:
        assert k.mean_seconds == pytest.approx(k.total_seconds / k.calls)
    assert report.compile_seconds == lib.compile_seconds > 0
    assert report.first_run_seconds is not None and report.first_run_seconds > 0
    assert report.steady_state_seconds > 0
    text = str(report)
    assert "compile" in text and "first run" in text and "steady state" in text and names[0] in text


def test_benchmark_returns_medians_like_time_evaluator(rng):
    lib = tk.build(_mlp_module(rng))
    x = rng.standard_normal((3, 37)).astype("f4")
    for executor in ("aot", "graph"):
        result = lib.benchmark(x, number=4, repeat=3, executor=executor)
        assert len(result.results) == 3 and result.number == 4
        assert result.min <= result.median <= result.max and result.mean > 0
    with pytest.raises(ValueError, match="number and repeat must be >= 1"):
        lib.benchmark(x, number=0)
    with pytest.raises(ValueError, match="unknown executor 'jit'"):
        lib.benchmark(x, executor="jit")


def test_graph_executor_plans_dims_computed_from_symbols():
    """Temporaries shaped (2*batch, 3): the plan sizes them from the expressions."""
    torch = pytest.importorskip("torch", reason="the torch frontend needs torch")
    from tensorkiln.frontends.torch import from_exported_program

    class Regroup(torch.nn.Module):
        def forward(self, x):
            return (torch.relu(x).reshape(x.shape[0] * 2, 3) * 2.0).sum(1)

    model = Regroup()
    ep = torch.export.export(model, (torch.randn(4, 6),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    lib = tk.build(from_exported_program(ep), opt_level=0)
    assert any(isinstance(d, str) and "*" in d for t in lib.graph_program.tensors for d in t.shape)
    _assert_plan_is_safe(lib.graph_program)
    for n in (1, 3, 17):
        x = torch.randn(n, 6)
        np.testing.assert_allclose(lib.graph_executor()(x.numpy()), model(x).numpy(), rtol=1e-6, atol=1e-6)

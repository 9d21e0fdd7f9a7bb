"""Graph optimization passes and the pass infrastructure.

Each pass: the module computes the same before (interpreter) and after (compiled, and
the interpreter where the rewrite must be bit-exact). The O1/O2 pipelines on the bundled
models and a torch Conv2d+BatchNorm2d. PassContext, IR dumps, timing, errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i32
from xdsl.passes import ModulePass

import tensorkiln as tk
from tensorkiln.dialects.graph import ConstantOp
from tensorkiln.examples.models import mlp, small_cnn
from tensorkiln.passes import pipeline
from tensorkiln.driver.pipelines import GRAPH_PIPELINES, graph_pipeline, optimize_graph
from tensorkiln.passes.pipeline import DUMP_IR_ENV, PassContext, PassError, PipelineReport, run_pipeline


def _ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def _interpret(module: ModuleOp, *inputs: np.ndarray):
    return tk.create_executor("interpreter", module).evaluate()(*inputs)


def _check_pass(module: ModuleOp, passes, inputs, *, rtol=1e-5, atol=1e-5, exact=False) -> ModuleOp:
    """Apply ``passes`` to a copy; the compiled copy (and its interpreter run) match the
    original's interpreter run. Returns the optimized copy."""
    before = _interpret(module, *inputs)
    optimized = module.clone()
    run_pipeline(optimized, passes, PassContext())
    after_interpreted = _interpret(optimized, *inputs)
    if exact:
        np.testing.assert_array_equal(
            np.asarray(after_interpreted).view(np.uint8), np.asarray(before).view(np.uint8)
        )
    else:
        np.testing.assert_allclose(after_interpreted, before, rtol=rtol, atol=atol)
    compiled = tk.build(optimized)(*inputs)
    np.testing.assert_allclose(compiled, before, rtol=rtol, atol=atol, equal_nan=True)
    return optimized


# ---------------------------------------------------------------------------
# fold-constants


def test_fold_constants_numeric(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (4, 8))
    w = b.constant(rng.standard_normal((16, 8)).astype(np.float32), "w")
    wt = b.transpose(w, (1, 0))  # (8, 16): a weight transform
    var = b.constant(rng.random(16).astype(np.float32) + 0.5, "var")
    scale = b.rsqrt(b.add(var, 1e-5))  # batch-norm scale arithmetic
    y = b.mul(b.matmul(x, wt), b.reshape(scale, (1, 16)))
    module = b.finish(y)
    optimized = _check_pass(module, ["fold-constants", "dce"], [rng.standard_normal((4, 8)).astype(np.float32)])
    assert _ops(optimized).count("graph.constant") == 2
    assert {"graph.transpose", "graph.rsqrt", "graph.reshape", "graph.add"}.isdisjoint(_ops(optimized))
    # folded constants are held by reference, not expanded into the IR
    assert all(
        op.value.name == "graph.weight" for op in optimized.walk() if isinstance(op, ConstantOp)
    )


def test_fold_constants_size_limit():
    b = tk.GraphBuilder()
    x = b.input("x", (256, 256))
    big = b.broadcast_to(b.constant(np.float32(2.0)), (256, 256))  # 256 KiB from 4 bytes
    small = b.broadcast_to(b.constant(np.float32(3.0)), (4, 4))
    module = b.finish(b.mul(x, big), small)
    run_pipeline(module, ["fold-constants"], PassContext())
    names = _ops(module)
    assert names.count("graph.broadcast_to") == 1  # the big one stays
    consts = [op.array() for op in module.walk() if isinstance(op, ConstantOp)]
    assert any(a.shape == (4, 4) and np.all(a == 3.0) for a in consts)


def test_fold_constants_folds_a_mask_built_around_a_big_splat(rng):
    """Swin3D's shifted-window mask: a splat (8x49x49, 77 KB: not folded alone) concatenated
    with region labels, sliced and concatenated again, folds into one 8x56x56 constant;
    a splat only reshaped, or read by computed values, stays a broadcast."""
    b = tk.GraphBuilder()
    x = b.input("x", (8, 56, 56))
    splat = b.broadcast_to(b.constant(np.float32(0.0)), (8, 49, 49))
    right = b.constant(rng.integers(1, 9, (8, 49, 7)).astype(np.float32), "right")
    bottom = b.constant(rng.integers(1, 9, (8, 7, 56)).astype(np.float32), "bottom")
    mask = b.concat([b.concat([splat, right], axis=2), bottom], axis=1)
    labels = b.constant(rng.integers(1, 9, (8, 56, 4)).astype(np.float32), "labels")
    mask = b.concat([b.slice(mask, [0], [52], axes=[2]), labels], axis=2)
    lone = b.reshape(b.broadcast_to(b.constant(np.float32(2.0)), (8, 49, 49)), (8, 2401))
    y = b.add(b.add(x, mask), b.mul(b.broadcast_to(b.constant(np.float32(3.0)), (8, 56, 56)), x))
    module = b.finish(b.add(y, b.reshape(b.reduce_sum(lone, [1], False), (8, 1, 1))))
    optimized = _check_pass(module, ["fold-constants", "dce"], [rng.standard_normal((8, 56, 56)).astype(np.float32)])
    assert "graph.concat" not in _ops(optimized) and "graph.slice" not in _ops(optimized)
    assert _ops(optimized).count("graph.broadcast_to") == 2  # x * 3 and the lone splat's
    assert any(op.array().shape == (8, 56, 56) for op in optimized.walk() if isinstance(op, ConstantOp))


def test_fold_constants_keeps_0d_values_0d(rng):
    """A chain of 0-d constants folds to 0-d arrays (np.ascontiguousarray made them 1-d:
    torch.lerp's weight chain failed to fold with 'gave shape (1,)')."""
    b = tk.GraphBuilder()
    x = b.input("x", (3, 4))
    w = b.constant(np.float32(-0.3))
    big = b.compare(b.abs(w), b.constant(np.float32(0.5)), "ge")
    weight = b.where(big, b.sub(w, b.constant(np.float32(1.0))), w)
    scalar = b.transpose(b.broadcast_to(weight, ()), ())
    module = b.finish(b.mul(x, scalar))
    run_pipeline(module, ["fold-constants"], PassContext())
    assert [op.array().shape for op in module.walk() if isinstance(op, ConstantOp) and op.result.uses] == [()]
    a = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(tk.build(module)(a), a * np.float32(-0.3), rtol=1e-6)


def test_fold_constants_every_op_by_its_reference(rng):
    """No per-op folding code: whatever has reference semantics folds (reductions,
    softmax, concat, slice, where, compare, cast)."""
    b = tk.GraphBuilder()
    c = b.constant(rng.standard_normal((3, 5)).astype(np.float32))
    parts = [
        b.reduce_sum(c, [1]),
        b.reduce_max(c, [1]),
        b.reduce_mean(b.softmax(c, 1), [1]),
        b.reduce_sum(b.slice(b.concat([c, c], 1), [2], [7], [1]), [1]),
        b.reduce_sum(b.where(b.compare(c, 0.0, "gt"), c, b.neg(c)), [1]),
        b.cast(b.reduce_min(c, [1]), i32),
    ]
    module = b.finish(*parts)
    before = _interpret(module)
    run_pipeline(module, ["fold-constants", "dce"], PassContext())
    assert set(_ops(module)) == {"graph.constant"}
    for got, want in zip(_interpret(module), before):
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# simplify


def _special_values(rng, shape) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[:6] = [-0.0, 0.0, np.inf, -np.inf, np.nan, -1e-45]
    return x


def test_simplify_exact(rng):
    """Every rewrite is bit-exact, signed zeros and NaN included; non-exact ones stay."""
    b = tk.GraphBuilder()
    x = b.input("x", (2, 3, 4))
    h = b.mul(x, np.ones((3, 4), np.float32))
    h = b.add(np.full((4,), -0.0, np.float32), h)
    h = b.sub(h, 0.0)
    h = b.div(h, 1.0)
    h = b.neg(b.neg(h))
    h = b.transpose(b.transpose(h, (2, 0, 1)), (1, 2, 0))
    h = b.reshape(b.reshape(h, (6, 4)), (2, 3, 4))
    h = b.cast(h, f32)
    h = b.broadcast_to(h, (2, 3, 4))
    h = b.slice(h, [0], [2], [0])
    plus_zero = b.add(h, 0.0)  # must stay: -0.0 + 0.0 = +0.0
    times_zero = b.mul(h, 0.0)  # must stay
    module = b.finish(h, plus_zero, times_zero)
    inputs = [_special_values(rng, (2, 3, 4))]
    before = _interpret(module, *inputs)
    optimized = module.clone()
    run_pipeline(optimized, ["simplify", "dce"], PassContext())
    names = _ops(optimized)
    assert names.count("graph.add") == 1 and names.count("graph.mul") == 1
    for op in ("graph.sub", "graph.div", "graph.neg", "graph.transpose", "graph.reshape",
               "graph.cast", "graph.broadcast_to", "graph.slice"):
        assert op not in names
    after = _interpret(optimized, *inputs)
    for got, want in zip(after, before):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    compiled = tk.build(optimized)(*inputs)
    for got, want in zip(compiled, before):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_allclose(got, want, equal_nan=True)


def test_simplify_keeps_broadcasting_identity():
    b = tk.GraphBuilder()
    x = b.input("x", (4,))
    module = b.finish(b.mul(x, np.ones((3, 4), np.float32)))
    run_pipeline(module, ["simplify"], PassContext())
    assert "graph.mul" in _ops(module)


# ---------------------------------------------------------------------------
# cse and dce


def test_cse_dce_numeric(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (4, 8))
    w = b.constant(rng.standard_normal((8, 8)).astype(np.float32), "w")
    a1 = b.relu(b.matmul(x, w))
    a2 = b.relu(b.matmul(x, w))
    b.exp(a1)  # dead
    module = b.finish(b.add(a1, a2))
    optimized = _check_pass(module, ["cse", "dce"], [rng.standard_normal((4, 8)).astype(np.float32)])
    assert _ops(optimized).count("graph.matmul") == 1
    assert "graph.exp" not in _ops(optimized)


def test_cse_keeps_distinct_weights():
    """Constants holding different arrays are not merged, even with equal contents
    (weights compare by identity); the same array is merged."""
    b = tk.GraphBuilder()
    x = b.input("x", (4,))
    data = np.arange(4, dtype=np.float32)
    w1 = b.constant(data, "w1")
    w2 = b.constant(data.copy(), "w2")
    module = b.finish(b.add(x, w1), b.add(x, w2), b.add(x, w1))
    run_pipeline(module, ["cse"], PassContext())
    assert _ops(module).count("graph.add") == 2
    assert _ops(module).count("graph.constant") == 2


# ---------------------------------------------------------------------------
# fold-batch-norm


def test_fold_batch_norm_builder_conv_and_dense(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (2, 3, 8, 8))
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = b.conv2d(x, w, None, padding=1)  # no bias: one is created
    y = b.add(b.mul(y, rng.random((1, 4, 1, 1)).astype(np.float32) + 0.5), rng.standard_normal((1, 4, 1, 1)).astype(np.float32))
    h = b.reshape(b.adaptive_avg_pool2d(b.relu(y), (1, 1)), (2, 4))
    d = b.dense(h, rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32))
    d = b.sub(b.mul(rng.random(5).astype(np.float32), d), rng.standard_normal((1, 5)).astype(np.float32))
    module = b.finish(d)
    optimized = _check_pass(module, ["fold-batch-norm", "dce"], [rng.standard_normal((2, 3, 8, 8)).astype(np.float32)], rtol=1e-4)
    names = _ops(optimized)
    assert not {"graph.mul", "graph.add", "graph.sub"} & set(names)


def _conv_bn(torch, seed: int = 0):
    torch.manual_seed(seed)

    class ConvBN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=True)
            self.bn = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 6, 3, stride=2, bias=False)
            self.bn2 = torch.nn.BatchNorm2d(6)

        def forward(self, x):
            return self.bn2(self.conv2(torch.relu(self.bn(self.conv(x)))))

    model = ConvBN().eval()
    with torch.no_grad():
        for bn in (model.bn, model.bn2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return model


def test_fold_batch_norm_torch(rng):
    torch = pytest.importorskip("torch")
    from tensorkiln.frontends.torch import from_exported_program

    model = _conv_bn(torch)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    expected = model(torch.from_numpy(x)).detach().numpy()
    module = from_exported_program(torch.export.export(model, (torch.from_numpy(x),)))
    assert "graph.mul" in _ops(module)
    run_pipeline(module, ["fold-constants", "fold-batch-norm", "dce"], PassContext())
    names = _ops(module)
    assert names.count("graph.conv2d") == 2
    assert not {"graph.mul", "graph.add", "graph.sub", "graph.rsqrt"} & set(names), names
    np.testing.assert_allclose(_interpret(module, x), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tk.build(module)(x), expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------
# whole pipelines


@pytest.mark.parametrize("opt_level", [1, 2])
@pytest.mark.parametrize("model", ["mlp", "small_cnn", "torch_conv_bn"])
def test_pipeline_on_models(rng, model, opt_level):
    if model == "mlp":
        module, inputs = mlp(batch=2, seed=1)
    elif model == "small_cnn":
        module, inputs = small_cnn(batch=2, size=16, seed=2)
    else:
        torch = pytest.importorskip("torch")
        from tensorkiln.frontends.torch import from_exported_program

        net = _conv_bn(torch, seed=5)
        inputs = [rng.standard_normal((1, 3, 12, 12)).astype(np.float32)]
        module = from_exported_program(torch.export.export(net, (torch.from_numpy(inputs[0]),)))
    before = _interpret(module, *inputs)
    optimized = module.clone()
    report = optimize_graph(optimized, PassContext(opt_level=opt_level))
    expected_passes = [p for p in graph_pipeline(opt_level) if p not in dict(report.skipped)]
    assert report.passes == expected_passes
    np.testing.assert_allclose(tk.build(optimized)(*inputs), before, rtol=1e-4, atol=1e-5)
    if model == "torch_conv_bn" and opt_level == 2:
        assert not {"graph.mul", "graph.add", "graph.rsqrt"} & set(_ops(optimized))


def test_opt_level_0_changes_nothing():
    module, _ = mlp()
    text = str(module)
    report = optimize_graph(module, PassContext(opt_level=0))
    # only the legalization every level runs, which has nothing to do without bfloat16
    assert report.passes == ["legalize-16bit-floats"] and str(module) == text


# ---------------------------------------------------------------------------
# PassContext, dumps, timing, errors


def test_pass_context_defaults_and_stack(monkeypatch):
    monkeypatch.delenv(DUMP_IR_ENV, raising=False)
    assert PassContext.current().opt_level == 2
    with PassContext(opt_level=3, config={"k": 1}) as outer:
        assert PassContext.current() is outer
        with PassContext(opt_level=1) as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert PassContext.current().opt_level == 2
    with pytest.raises(ValueError, match="opt_level"):
        PassContext(opt_level=4)


def test_optimize_graph_uses_current_context():
    module, _ = mlp()
    with PassContext(opt_level=1):
        report = optimize_graph(module)
    assert report.passes == ["legalize-16bit-floats", *GRAPH_PIPELINES[1]]


def test_dump_ir_one_file_per_pass(tmp_path):
    module, _ = mlp()
    ctx = PassContext(opt_level=1, dump_ir=tmp_path / "ir")
    report = optimize_graph(module, ctx)
    files = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert files == [
        "00_input.mlir", "01_legalize-16bit-floats.mlir", "02_fold-qdq.mlir", "03_fold-constants.mlir",
        "04_simplify.mlir", "05_dce.mlir",
    ]  # fmt: skip
    assert [p.name for p in report.dumps] == files
    assert "graph.dense" in (tmp_path / "ir" / "05_dce.mlir").read_text()
    # a second pipeline under the same context numbers on, without a second input
    run_pipeline(module, ["cse"], ctx)
    assert sorted(p.name for p in (tmp_path / "ir").iterdir())[-1] == "06_cse.mlir"


def test_dump_ir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(DUMP_IR_ENV, str(tmp_path / "env"))
    module, _ = mlp()
    run_pipeline(module, ["simplify", "dce"])
    assert sorted(p.name for p in (tmp_path / "env").iterdir()) == [
        "00_input.mlir", "01_simplify.mlir", "02_dce.mlir",
    ]
    # dump_ir=False turns dumps off whatever the environment says
    run_pipeline(module, ["simplify"], PassContext(dump_ir=False, opt_level=1))
    assert len(list((tmp_path / "env").iterdir())) == 3


def test_no_dump_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(DUMP_IR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    module, _ = mlp()
    report = run_pipeline(module, ["dce"], PassContext())
    assert report.dumps == [] and list(tmp_path.iterdir()) == []


def test_timing_report(capsys):
    module, _ = small_cnn()
    ctx = PassContext(timing=True)
    report = run_pipeline(module, "fold-constants,simplify,cse,dce", ctx)
    assert isinstance(report, PipelineReport)
    assert [name for name, _ in report] == ["fold-constants", "simplify", "cse", "dce"]
    assert all(isinstance(s, float) and s >= 0 for _, s in report)
    assert report.total_seconds == pytest.approx(sum(s for _, s in report))
    assert ctx.timings == report.timings
    printed = capsys.readouterr().err
    assert "fold-constants" in printed and "total" in printed


def test_disabled_and_optional_passes(monkeypatch):
    module, _ = mlp()
    report = optimize_graph(module, PassContext(disabled_passes=["cse", "fold-batch-norm"]))
    assert "cse" not in report.passes and "fold-batch-norm" not in report.passes
    assert ("cse", "disabled") in report.skipped
    # fuse-ops is skipped without error while it is not registered
    available = {k: v for k, v in pipeline._available_passes().items() if k != "fuse-ops"}
    monkeypatch.setattr(pipeline, "_available_passes", lambda: available)
    report = optimize_graph(mlp()[0], PassContext(opt_level=2))
    assert ("fuse-ops", "not registered") in report.skipped
    # an unknown name fails before any pass runs
    module = mlp()[0]
    text = str(module)
    with pytest.raises(ValueError, match="unknown pass 'no-such-pass'"):
        run_pipeline(module, ["fold-constants", "no-such-pass"], PassContext())
    assert str(module) == text


def test_pass_options_from_spec_and_config():
    def module_with_foldable():
        b = tk.GraphBuilder()
        x = b.input("x", (3,))
        return b.finish(b.add(x, b.neg(b.constant(np.ones(3, np.float32)))))

    m1 = module_with_foldable()
    run_pipeline(m1, ["fold-constants{inline_limit=8}"], PassContext())
    m2 = module_with_foldable()
    run_pipeline(m2, ["fold-constants"], PassContext(config={"fold-constants": {"inline_limit": 8}}))
    m3 = module_with_foldable()
    run_pipeline(m3, ["fold-constants"], PassContext())
    assert "dense<-1.000000e+00> : tensor<3xf32>" in str(m1)
    assert "dense<-1.000000e+00> : tensor<3xf32>" in str(m2)
    assert "dense<-1.000000e+00> : tensor<3xf32>" not in str(m3)


def test_instruments_called():
    calls = []

    class Recorder:
        def run_before_pass(self, name, module):
            calls.append(("before", name))

        def run_after_pass(self, name, module, seconds):
            calls.append(("after", name))

        def should_run(self, name, module):
            return name != "cse"

    module, _ = mlp()
    report = run_pipeline(module, ["simplify", "cse", "dce"], PassContext(instruments=[Recorder()]))
    assert calls == [("before", "simplify"), ("after", "simplify"), ("before", "dce"), ("after", "dce")]
    assert ("cse", "instrument") in report.skipped


def test_passes_run_with_fewer_gc_pauses_and_the_threshold_comes_back():
    import gc

    from tensorkiln.passes.pipeline import COMPILE_GC_THRESHOLD

    seen = []

    class Threshold:
        def run_before_pass(self, name, module):
            seen.append(gc.get_threshold()[0])

    before = gc.get_threshold()
    module, _ = mlp()
    with pytest.raises(ValueError):
        run_pipeline(module, ["simplify", "no-such-pass"], PassContext())
    run_pipeline(module, ["simplify", "dce"], PassContext(instruments=[Threshold()]))
    assert seen == [max(before[0], COMPILE_GC_THRESHOLD)] * 2
    assert gc.get_threshold() == before


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Test-only: gives the first graph.relu a wrong result type."""

    name = "break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for o in op.walk():
            if o.name == "graph.relu":
                o.results[0]._type = TensorType(f32, [7, 7])  # pyright: ignore
                return


@dataclass(frozen=True)
class RaisingPass(ModulePass):
    name = "raise-error"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise RuntimeError("boom")


def test_invalid_ir_names_the_pass(monkeypatch, tmp_path):
    available = {
        **pipeline._available_passes(),
        "break-ir": lambda: BreakIRPass,
        "raise-error": lambda: RaisingPass,
    }
    monkeypatch.setattr(pipeline, "_available_passes", lambda: available)
    module, _ = mlp()
    # by default the result is verified, and the error lists the passes run
    with pytest.raises(PassError, match=r"after the passes simplify, break-ir, dce .*verify='each'") as info:
        run_pipeline(mlp()[0], ["simplify", "break-ir", "dce"], PassContext())
    assert info.value.pass_name == ["simplify", "break-ir", "dce"] and "graph.relu" in str(info.value)
    # verify="each" names the pass, and the following passes do not run
    with pytest.raises(PassError, match="after pass 'break-ir'") as info:
        run_pipeline(module, ["simplify", "break-ir", "dce"], PassContext(dump_ir=tmp_path, verify="each"))
    assert info.value.pass_name == "break-ir"
    assert not (tmp_path / "03_dce.mlir").exists()
    assert "graph.relu" in str(info.value)
    # the broken IR is dumped for inspection
    assert (tmp_path / "02_break-ir.mlir").exists()
    # the next pipeline refuses the invalid input, naming no pass
    with pytest.raises(PassError, match="pipeline's input"):
        run_pipeline(module, ["dce"], PassContext())

    with pytest.raises(RuntimeError, match="boom") as info:
        run_pipeline(mlp()[0], ["simplify", "raise-error"], PassContext())
    assert any("raise-error" in note for note in info.value.__notes__)


def test_graph_opt_pass_by_name():
    module, _ = mlp()
    report = run_pipeline(module, ["graph-opt-O1"], PassContext())
    assert report.passes == ["graph-opt-O1"]
    module2, _ = mlp()
    run_pipeline(module2, ["graph-opt{opt_level=1}"], PassContext())
    module3, _ = mlp()
    run_pipeline(module3, GRAPH_PIPELINES[1], PassContext())
    assert _ops(module) == _ops(module2) == _ops(module3)

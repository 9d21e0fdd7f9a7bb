"""The driver: targets parsed once, the registry of target kinds (a new backend is one
registered kind, shown by a toy one defined here), the pass lists, the closing sequence."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.functions import find_function, signature_of
from tensorkiln.driver import (
    BuildRequest,
    Target,
    TargetKind,
    parse_target,
    register_target_kind,
    target_kinds,
    unregister_target_kind,
)
from tensorkiln.driver.compilable import compilable_copy
from tensorkiln.driver.pipelines import GRAPH_PIPELINES, graph_pipeline, optimize_graph
from tensorkiln.interpreter import evaluate_function
from tensorkiln.passes.pipeline import PassContext


def _mlp(rng, rows=5, features=19, hidden=11):
    b = tk.GraphBuilder()
    x = b.input("x", (rows, features))
    h = b.relu(b.dense(x, rng.standard_normal((hidden, features)).astype("f4")))
    y = b.dense(h, rng.standard_normal((3, hidden)).astype("f4"))
    return b.finish(y)


# -- targets ---------------------------------------------------------------------------


def test_a_target_string_is_parsed_once():
    first = parse_target("llvm -mattr=+avx2,-avx512f")
    assert parse_target("llvm -mattr=+avx2,-avx512f") is first  # cached: one parse per string
    assert parse_target(first) is first
    assert (first.kind, first.options) == ("llvm", ("-mattr=+avx2,-avx512f",))
    assert first.vector_bits == 256 and "+avx2" in first.features
    assert str(first) == "llvm -mattr=+avx2,-avx512f"
    cuda = parse_target("cuda -arch=sm_90 -tf32")
    assert cuda.kind == "cuda" and cuda.config.arch == "sm_90" and cuda.config.tf32
    assert cuda.vector_bits is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("vulkan", "unknown target kind 'vulkan' \\(registered: .*cuda.*llvm"),
        ("", "empty target string"),
        ("llvm -fast", "unknown option '-fast'"),
        ("cuda -arch=sm_75 -tf32", "TF32 tensor cores need sm_80"),
    ],
)
def test_bad_targets_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_target(text)
    with pytest.raises(ValueError, match=message):
        tk.build(_mlp(np.random.default_rng(0)), target=text)


def test_target_must_be_a_string_or_a_target():
    with pytest.raises(TypeError, match="target must be a string"):
        parse_target(3)


# -- a new backend is one registered target kind ---------------------------------------


class ToyOptions:
    """The toy backend's reading of ``"toy [-scale=S]"``: outputs are multiplied by S."""

    def __init__(self, scale: float):
        self.scale = scale

    @staticmethod
    def parse(text: str) -> ToyOptions:
        scale = 1.0
        for word in text.split()[1:]:
            key, _, value = word.partition("=")
            if key != "-scale":
                raise ValueError(f"unknown option {word!r} in target {text!r} (known: -scale=S)")
            scale = float(value)
        return ToyOptions(scale)


def build_toy(module, target: Target, request: BuildRequest):
    """The toy backend: the driver's front half (compilable copy, the graph pipeline of
    the request's level), then "code generation" that runs the optimized graph with
    numpy, scaled."""
    work = compilable_copy(module, request.ctx)
    optimize_graph(work, request.ctx, verify_input=False)
    function = find_function(work, request.function)
    signature = signature_of(function)

    def run(*args):
        outputs = evaluate_function(function, signature.check_inputs(args))
        scaled = [np.asarray(o * target.config.scale, spec.dtype) for o, spec in zip(outputs, signature.outputs)]
        return scaled[0] if len(scaled) == 1 else tuple(scaled)

    run.signature = signature
    return run


@pytest.fixture
def toy_kind():
    kind = register_target_kind(
        TargetKind("toy", parse=ToyOptions.parse, build=build_toy, emit_source=lambda m, t, f: str(m))
    )
    yield kind
    unregister_target_kind("toy")


def test_a_registered_target_kind_builds_through_tk_build(toy_kind, rng):
    module = _mlp(rng)
    x = rng.standard_normal((5, 19)).astype("f4")
    expected = tk.create_executor("interpreter", module).evaluate()(x)
    np.testing.assert_allclose(tk.build(module, target="toy")(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tk.build(module, target="toy -scale=2.5")(x), 2.5 * expected, rtol=1e-5, atol=1e-6)
    assert "graph.dense" in tk.emit_source(module, target="toy")
    assert target_kinds()["toy"] is toy_kind
    with pytest.raises(ValueError, match="unknown option '-fast'"):
        tk.build(module, target="toy -fast")


def test_a_kind_is_registered_once_unless_replaced(toy_kind):
    with pytest.raises(ValueError, match="already registered"):
        register_target_kind(TargetKind("toy", parse=ToyOptions.parse, build=build_toy))
    other = register_target_kind(TargetKind("toy", parse=ToyOptions.parse, build=build_toy), replace=True)
    assert target_kinds()["toy"] is other


def test_unregistered_kinds_are_gone(toy_kind, rng):
    unregister_target_kind("toy")
    with pytest.raises(ValueError, match="unknown target kind 'toy'"):
        tk.build(_mlp(rng), target="toy")


# -- pass lists ------------------------------------------------------------------------


def test_o3_is_o2_as_documented():
    assert GRAPH_PIPELINES[3] == GRAPH_PIPELINES[2]


def test_legalize_16bit_floats_runs_once_per_build(rng):
    lib = tk.build(_mlp(rng))
    names = [name for name, _ in lib.pass_timings]
    assert names.count("legalize-16bit-floats") == 1
    assert names[:2] == ["bf16-products", "legalize-16bit-floats"] and graph_pipeline(2)[0] == "legalize-16bit-floats"


def test_precision_picks_the_products_pass(rng):
    module = _mlp(rng)
    x = rng.standard_normal((5, 19)).astype("f4")
    fp32, bf16 = tk.build(module), tk.build(module, precision="bf16")
    assert [n for n, _ in bf16.pass_timings][0] == "bf16-products{autocast=true}"
    np.testing.assert_allclose(bf16(x), fp32(x), rtol=5e-2, atol=5e-2)  # bfloat16 products, float32 sums
    with pytest.raises(ValueError, match="precision must be one of 'fp32', 'bf16', got 'int4'"):
        tk.build(module, precision="int4")


def test_every_step_that_changes_ir_is_a_dumped_pass(tmp_path, rng):
    """checks-to-outputs, dedupe-kernels and hoist-temporaries show in dump_ir."""
    b = tk.GraphBuilder()
    x = b.input("x", (4, 6))
    y = b.relu(b.add(b.relu(x), b.relu(x)))
    tk.build(b.finish(y), dump_ir=str(tmp_path))
    dumped = [p.name.split("_", 1)[1].removesuffix(".mlir") for p in sorted(tmp_path.glob("*.mlir"))]
    assert dumped[:2] == ["input", "checks-to-outputs"]
    for name in ("dedupe-kernels", "hoist-temporaries", "graph-to-te"):
        assert name in dumped, dumped
    assert dumped.index("dedupe-kernels") < dumped.index("hoist-temporaries") < dumped.index("partition-loops")
    assert "loop.alloc" not in (tmp_path / next(p.name for p in tmp_path.glob("*_hoist-temporaries.mlir"))).read_text()


def test_schedule_pipeline_tells_the_vector_extensions_only():
    from tensorkiln.driver.pipelines import schedule_pipeline

    (spec,) = schedule_pipeline(parse_target("llvm -mcpu=x86-64 -mattr=+avx2,+fma").config)
    assert spec == 'default-schedule{vector_bits=256 features=""}'
    (spec,) = schedule_pipeline(parse_target("llvm -mcpu=x86-64 -mattr=+avx512f,+avx512vnni,+sse4.2").config)
    assert spec == 'default-schedule{vector_bits=512 features="+avx512f,+avx512vnni"}'
    # the last mention of a feature wins (the host's, then -mattr's)
    (spec,) = schedule_pipeline(parse_target("llvm -mcpu=x86-64 -mattr=+avx512f,+avx512vnni,-avx512vnni").config)
    assert spec == 'default-schedule{vector_bits=512 features="+avx512f"}'


# -- the closing sequence ----------------------------------------------------------------


def test_jit_loops_and_build_share_the_closing_sequence(rng):
    from tensorkiln.build import jit_loops, lower_to_loops  # the public paths

    module = _mlp(rng)
    lib = jit_loops(lower_to_loops(module), signature_of(find_function(module)))
    x = rng.standard_normal((5, 19)).astype("f4")
    np.testing.assert_allclose(lib(x), tk.build(module)(x), rtol=1e-5, atol=1e-5)
    names = [name for name, _ in lib.pass_timings]
    assert any(n.startswith("loop-to-llvm") for n in names) and "dedupe-kernels" not in names
    assert names[-1] == "load-object" and lib.graph_program is None


def test_the_vm_compiles_segments_through_a_callback(rng):
    from tensorkiln.driver.vm import compile_vm

    b = tk.GraphBuilder()
    x = b.input("x", (3, 4))
    module = b.finish(b.relu(x))
    seen = []

    def compile_segment(segment, name):
        seen.append(name)
        return tk.build(segment, function=name)

    vm = compile_vm(module, "main", compile_segment)
    x = rng.standard_normal((3, 4)).astype("f4")
    np.testing.assert_array_equal(vm(x), np.maximum(x, 0))
    assert seen == ["main"]


def test_pass_context_dump_names_stay_short(tmp_path):
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.input("x", (2, 2))))
    ctx = PassContext(dump_ir=str(tmp_path))
    path = ctx.dump(module, "a-pass{" + "option=1 " * 100 + "}")
    assert len(path.name) < 100

"""BYOC partitioning, golden: which ops each pass offloads, priorities, merging without
cycles, constants bound or lifted, the pattern language and registry errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.utils.exceptions import PassFailedException

import tensorkiln as tk
from tensorkiln.byoc import is_constant, is_op, wildcard
from tensorkiln.dialects.byoc import CompositeOp, RegionOp
from tensorkiln.byoc.merge import merge_block
from tensorkiln.byoc.partition import PartitionPass
from tensorkiln.byoc.registry import register_patterns, unregister_backend
from tensorkiln.dialects.graph import ConstantOp
from tensorkiln.dialects.graph.linalg import DenseOp
from tensorkiln.universe import make_context


def _f4(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _top_ops(module) -> list:
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return list(function.body.block.ops)


def _composites(module) -> list[str]:
    return [op.pattern.data for op in module.walk() if isinstance(op, CompositeOp)]


def _partition(module, backend: str, **kw):
    return tk.byoc.partition_for(module, backend, codegen=False, **kw)


def _composites_only(module, backend: str):
    """Only the partition pass: composites, no regions yet."""
    part = module.clone()
    PartitionPass(backend=backend).apply(make_context(), part)
    return part


def _interpret(module, *xs):
    return tk.create_executor("interpreter", module).evaluate()(*xs)


def _mlp(rng, bias_as_add: bool = False):
    b = tk.GraphBuilder()
    x = b.input("x", (5, 33))
    w1, b1, w2 = _f4(rng, 19, 33), _f4(rng, 19), _f4(rng, 7, 19)
    h = b.add(b.dense(x, w1), b1) if bias_as_add else b.dense(x, w1, b1)
    y = b.dense(b.relu(h), w2)
    return b.finish(b.softmax(y, -1))


@pytest.mark.parametrize("bias_as_add", [False, True])
def test_priorities_fused_patterns_outrank_their_parts(rng, bias_as_add):
    module = _mlp(rng, bias_as_add)
    part = _partition(module, "example_npu", merge=False)
    assert _composites(part) == ["example_npu.dense_bias_act", "example_npu.dense"]
    # exactly the products and their epilogues are offloaded: softmax stays
    top = Counter(op.name for op in _top_ops(part))
    assert top == {"byoc.region": 2, "graph.softmax": 1, "func.return": 1}
    x = _f4(rng, 5, 33)
    np.testing.assert_allclose(_interpret(part, x), _interpret(module, x), rtol=1e-6)


def test_an_escaping_intermediate_is_not_taken_into_a_composite(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 8))
    d = b.dense(x, _f4(rng, 6, 8))
    module = b.finish(b.relu(d), d)  # the dense result is also an output
    part = _partition(module, "example_npu", merge=False)
    assert _composites(part) == ["example_npu.dense"]
    assert "graph.relu" in [op.name for op in _top_ops(part)]


def test_check_functions_reject_what_a_backend_cannot_do(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 8), np.float64)
    y = b.input("y", (2, 3, 8))
    z = b.input("z", (2, 8, 5))
    module = b.finish(b.dense(x, rng.standard_normal((6, 8))), b.batch_matmul(y, z))
    part = _partition(module, "blas", merge=False)
    # float64 dense: no BLAS pattern accepts it; equal batches: sgemm per batch
    assert _composites(part) == ["blas.batch_matmul"]
    assert "graph.dense" in [op.name for op in _top_ops(part)]


def test_blas_rejects_batch_broadcasting_it_cannot_stride(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (2, 1, 3, 8))
    z = b.input("z", (1, 4, 8, 5))
    module = b.finish(b.batch_matmul(x, z))  # batch (2,1) x (1,4): neither equal nor all ones
    assert _composites(_partition(module, "blas")) == []
    assert _composites(_partition(module, "example_npu")) == ["example_npu.batch_matmul"]


def test_cublas_takes_the_gemm_patterns_and_batch_broadcasting_blas_cannot_stride(rng):
    """cuBLAS's table is the GEMM table without blas's batch check (cupy.matmul broadcasts);
    the fused pattern outranks its parts, float64 stays, softmax stays."""
    module = _mlp(rng)
    part = _partition(module, "cublas", merge=False)
    assert _composites(part) == ["cublas.dense_bias_act", "cublas.dense"]
    assert Counter(op.name for op in _top_ops(part)) == {"byoc.region": 2, "graph.softmax": 1, "func.return": 1}
    merged = _partition(module, "cublas")
    (region,) = [op for op in _top_ops(merged) if isinstance(op, RegionOp)]  # the chain joins
    assert region.symbol.data == "cublas_main_0" and region.codegen.data == "cublas" and len(region.composites()) == 2
    b = tk.GraphBuilder()
    x, z = b.input("x", (2, 1, 3, 8)), b.input("z", (1, 4, 8, 5))
    y = b.input("y", (3, 8), np.float64)
    broadcast = b.finish(b.sigmoid(b.batch_matmul(x, z)), b.dense(y, rng.standard_normal((6, 8))))
    assert _composites(_partition(broadcast, "cublas")) == ["cublas.batch_matmul_act"]
    assert _composites(_partition(broadcast, "blas")) == []
    xs = (_f4(rng, 2, 1, 3, 8), _f4(rng, 1, 4, 8, 5), rng.standard_normal((3, 8)))
    for got, want in zip(_interpret(_partition(broadcast, "cublas"), *xs), _interpret(broadcast, *xs)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_constants_bound_inside_or_lifted_to_parameters(rng):
    module = _mlp(rng)
    bound = _partition(module, "example_npu", merge=False)
    lifted = _partition(module, "example_npu", merge=False, bind_constants=False)
    for part, inside in ((bound, True), (lifted, False)):
        for region in [op for op in _top_ops(part) if isinstance(op, RegionOp)]:
            (composite,) = region.composites()
            constants = [op for op in composite.body.block.ops if isinstance(op, ConstantOp)]
            from_constants = [v for v in region.inputs if isinstance(v.owner, ConstantOp)]
            assert bool(constants) == inside and bool(from_constants) != inside
    # bound: the weights left the function (their only users were offloaded)
    assert not [op for op in _top_ops(bound) if isinstance(op, ConstantOp)]
    assert len([op for op in _top_ops(lifted) if isinstance(op, ConstantOp)]) == 3
    x = _f4(rng, 5, 33)
    np.testing.assert_allclose(_interpret(lifted, x), _interpret(module, x), rtol=1e-6)


def test_merging_joins_a_chain_into_one_region(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (4, 16))
    h = b.relu(b.dense(x, _f4(rng, 12, 16), _f4(rng, 12)))
    module = b.finish(b.tanh(b.dense(h, _f4(rng, 5, 12))))
    part = _partition(module, "example_npu")
    regions = [op for op in _top_ops(part) if isinstance(op, RegionOp)]
    assert len(regions) == 1 and [c.pattern.data for c in regions[0].composites()] == [
        "example_npu.dense_bias_act",
        "example_npu.dense_act",
    ]
    assert regions[0].symbol.data == "example_npu_main_0" and regions[0].codegen.data == "example_npu"


@pytest.mark.parametrize("single_output", [True, False])
def test_merging_never_makes_a_cycle(rng, single_output):
    # c = matmul(a, exp(a)) with a = dense(x): joining a's and c's composites would put
    # exp (not offloaded) both after and before the region
    b = tk.GraphBuilder()
    x = b.input("x", (16, 16))
    a = b.dense(x, _f4(rng, 16, 16))
    module = b.finish(b.matmul(a, b.exp(a)))
    part = _composites_only(module, "example_npu")
    assert _composites(part) == ["example_npu.dense", "example_npu.matmul"]
    block = _top_ops(part)[0].parent_block()
    assert merge_block(block, single_output=single_output) == []
    part.verify()
    # the control: without exp in between, the two join
    b = tk.GraphBuilder()
    x = b.input("x", (4, 16))
    a = b.dense(x, _f4(rng, 16, 16))
    control = _composites_only(b.finish(b.matmul(a, _f4(rng, 16, 5))), "example_npu")
    assert len(merge_block(_top_ops(control)[0].parent_block(), single_output=single_output)) == 1
    x = _f4(rng, 16, 16)
    np.testing.assert_allclose(_interpret(part, x), _interpret(module, x), rtol=1e-5)


def test_merging_keeps_dependency_order_when_a_region_has_several_results(rng):
    # d1 = dense(x); u = neg(d1) (outside); d2 = dense(d1); out = d2, u: the region of d1, d2
    # yields both, and neg must come after the region
    b = tk.GraphBuilder()
    x = b.input("x", (4, 16))
    d1 = b.dense(x, _f4(rng, 16, 16))
    u = b.neg(d1)
    module = b.finish(b.add(b.dense(d1, _f4(rng, 8, 16)), b.reshape(b.reduce_sum(u, [1]), (4, 1))))
    part = _composites_only(module, "example_npu")
    block = _top_ops(part)[0].parent_block()
    (region,) = merge_block(block, single_output=False)
    assert len(region.outputs) == 2
    part.verify()
    seen: set = set()
    for op in block.ops:
        assert all(v.owner is block or v.owner in seen for v in op.operands), op.name
        seen.add(op)
    x = _f4(rng, 4, 16)
    np.testing.assert_allclose(_interpret(part, x), _interpret(module, x), rtol=1e-5)


def test_a_region_yields_every_member_value_used_outside(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 9))
    h = b.dense(x, _f4(rng, 7, 9))
    y = b.dense(h, _f4(rng, 4, 7))
    module = b.finish(y, b.neg(h))
    # by default a value used outside keeps its composite out of the chain's region
    assert len([op for op in _top_ops(_partition(module, "example_npu")) if isinstance(op, RegionOp)]) == 2
    part = _composites_only(module, "example_npu")
    merge_block(_top_ops(part)[0].parent_block(), single_output=False)
    (region,) = [op for op in _top_ops(part) if isinstance(op, RegionOp)]
    assert len(region.outputs) == 2
    x = _f4(rng, 3, 9)
    for got, want in zip(_interpret(part, x), _interpret(module, x)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------------------
# the pattern language


def test_pattern_language_ops_alternatives_predicates_bindings(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 8))
    w = b.constant(_f4(rng, 6, 8))
    d = b.dense(x, w)
    s = b.sigmoid(d)
    module = b.finish(s)
    dense = is_op(DenseOp, wildcard("x"), is_constant("w")).named("product")
    act = (is_op("graph.relu", dense) | is_op("sigmoid", dense)).has_dtype("float32").has_shape((None, 6))
    match = act.match(s)
    assert match is not None and match.root is s.owner
    assert match.bindings == {"x": x, "w": w, "product": d} and match.inputs == [x, w]
    assert act.has_rank(3).match(s) is None
    assert act.has_dtype("float64").match(s) is None
    assert is_op("graph.relu", dense).match(s) is None
    assert is_op("graph.dense", wildcard(), wildcard(), wildcard()).match(d) is None  # no bias operand
    assert is_op("graph.dense").match(d).inputs == [x, w]  # no operand patterns: any operands
    assert is_op("graph.dense", is_constant(), wildcard()).match(d) is None
    module.verify()


def test_registry_rejects_malformed_entries():
    p = is_op("graph.relu", wildcard())
    with pytest.raises(ValueError, match="priority of 'r' must be an int"):
        register_patterns("tmp_backend", [("r", p, None, 1.5)])
    with pytest.raises(ValueError, match="not a Pattern"):
        register_patterns("tmp_backend", [("r", "relu", None, 1)])
    with pytest.raises(ValueError, match=r"must be \(name, pattern, check, priority\)"):
        register_patterns("tmp_backend", [("r", p)])
    register_patterns("tmp_backend", [("r", p, None, 1)])
    with pytest.raises(ValueError, match="already registered"):
        register_patterns("tmp_backend", [("r", p, None, 2)])
    unregister_backend("tmp_backend")


def test_conv2d_relu_outranks_conv2d_by_priority(rng):
    register_patterns(
        "conv_demo",
        [
            ("conv2d", is_op("graph.conv2d", wildcard(), wildcard()), None, 1),
            ("conv2d_relu", is_op("graph.relu", is_op("graph.conv2d", wildcard(), wildcard())), None, 2),
        ],
    )
    try:
        b = tk.GraphBuilder()
        x = b.input("x", (1, 3, 9, 9))
        c1 = b.relu(b.conv2d(x, _f4(rng, 4, 3, 3, 3)))
        module = b.finish(b.conv2d(c1, _f4(rng, 2, 4, 3, 3)))
        part = _partition(module, "conv_demo", merge=False)
        assert _composites(part) == ["conv_demo.conv2d_relu", "conv_demo.conv2d"]
    finally:
        unregister_backend("conv_demo")


def test_unknown_backend_and_missing_backend_option_are_named(rng):
    with pytest.raises(ValueError, match="unknown BYOC backend 'nope'.*blas"):
        tk.byoc.partition_for(_mlp(rng), "nope")
    with pytest.raises(PassFailedException, match="name the backend"):
        PartitionPass().apply(make_context(), _mlp(rng))

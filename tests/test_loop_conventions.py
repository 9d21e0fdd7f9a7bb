"""The conventions of a lowered module (dialects/loop.py) and the registries the loop
level is extended through: te-to-loop's kernel rules (lowering/kernel_registry.py),
what it records of each kernel and loop (kernel anchors, loop roles), and the
loop -> llvm converters by loop kind (lowering/llvm_converter.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.dialects import loop, te
from tensorkiln.dialects.graph import FusedOp
from tensorkiln.lowering import loop_to_llvm, te_to_loop  # noqa: F401  (load the loop converters and kernel rules)
from tensorkiln.lowering.kernel_anchor import anchor_of_tag
from tensorkiln.lowering.kernel_registry import KERNEL_RULES, kernel_rule
from tensorkiln.lowering.llvm_converter import LOOP_CONVERTERS, loop_converter
from tensorkiln.schedule import Schedule
from tensorkiln.schedule.strategies import kernel_info


def _softmax_loops(rows: int = 3, cols: int = 17):
    b = tk.GraphBuilder()
    return lower_to_loops(b.finish(b.softmax(b.input("x", (rows, cols)), axis=1)))


def _matmul_relu_loops():
    b = tk.GraphBuilder()
    x, w = b.input("x", (5, 9)), b.input("w", (9, 7))
    return lower_to_loops(b.finish(b.relu(b.matmul(x, w))))


# ---------------------------------------------------------------------------
# the host function and its weights


def test_entry_layout_and_weights(rng):
    b = tk.GraphBuilder()
    w = rng.standard_normal((6, 4)).astype(np.float32)
    module = b.finish(b.dense(b.input("x", (3, 4)), b.constant(w)))
    loops = lower_to_loops(module)
    (host,) = [f for f in loops.ops if loop.is_entry(f)]
    inputs, outputs, weights = loop.entry_layout(host)
    assert (inputs, outputs, len(weights)) == (1, 1, 1)
    assert loop.weight_arguments(host) == [host.body.block.args[-1]]
    assert "tk.weights" not in loop.without_weights(host) and loop.WEIGHTS_ATTR in host.attributes
    assert loop.hoisted_temporaries(host) == 0
    loop.set_hoisted_temporaries(host, 2)
    assert loop.hoisted_temporaries(host) == 2 and loop.entry_layout(host)[:2] == (1, 1)
    assert [k.sym_name.data for k in loop.kernels(loops)] == ["dense_0"]
    assert loop.kernel_tag(loop.kernels(loops)[0]) == "dense" and loop.kernel_tag(host) is None


# ---------------------------------------------------------------------------
# what te-to-loop records: kernel anchors and loop roles


@pytest.mark.parametrize(
    "tag, ops, anchor, epilogue",
    [
        ("dense_add_relu", ("dense", "add", "relu"), "dense", ("add", "relu")),
        ("matmul", ("matmul",), "matmul", ()),
        ("mul_reduce_mean", ("mul", "reduce_mean"), "reduce_mean", ()),
        ("batch_matmul_transpose_reshape", ("batch_matmul", "transpose", "reshape"), "batch_matmul", None),
    ],
)
def test_anchor_of_tag_and_back_from_the_ir(tag, ops, anchor, epilogue):
    found = anchor_of_tag(tag)
    assert (found.ops, found.op, found.epilogue) == (ops, anchor, epilogue)
    kernel = _matmul_relu_loops().body.block.ops.last  # any function holds the attributes
    for name in (loop.OPS_ATTR, loop.ANCHOR_ATTR, loop.EPILOGUE_ATTR):
        kernel.attributes.pop(name, None)
    loop.set_kernel_anchor(kernel, found)
    assert loop.kernel_anchor(kernel) == found


def test_tags_that_are_not_graph_ops_record_nothing():
    assert anchor_of_tag("sort") is None and anchor_of_tag("not_an_op") is None


def test_kernel_info_reads_roles_not_names():
    """A softmax row kernel: output loops i0, i1; its first reduction only (the max's
    k0, not the sum's k1_0), as the schedules always counted it; renaming every loop
    changes none of it."""
    (kernel,) = loop.kernels(_softmax_loops())
    info = kernel_info(kernel, 16)
    assert (info.output_loops, info.reduction_loops, info.family, info.anchor) == (["i0", "i1"], ["k0"], "rows", "softmax")
    for k, f in enumerate(f for f in kernel.walk() if isinstance(f, loop.ForOp)):
        f.loop_name = StringAttr(f"loop{k}")
    renamed = kernel_info(kernel, 16)
    assert (len(renamed.output_loops), len(renamed.reduction_loops), renamed.family) == (2, 1, "rows")


def test_schedule_primitives_keep_roles():
    kernel = loop.kernels(_matmul_relu_loops())[0]
    assert loop.kernel_tag(kernel) == "matmul"
    s = Schedule(kernel)
    outer, inner = s.split("i1", 4)
    s.reorder(outer, "i0")
    fused = s.fuse(outer, "i0")
    k_outer, k_inner = s.split("k0", 2)
    roles = {f.loop_name.data: f.loop_role for f in kernel.walk() if isinstance(f, loop.ForOp)}
    assert roles == {fused: "spatial", inner: "spatial", k_outer: "reduction", k_inner: "reduction"}


# ---------------------------------------------------------------------------
# the registries


def test_every_tensor_level_op_has_a_kernel_rule():
    assert {te.ComputeOp, FusedOp, te.ScanOp, te.ScatterOp, te.SortOp, te.DenseLinalgOp} <= set(KERNEL_RULES)
    with pytest.raises(ValueError, match="te.scan already has a kernel rule"):
        kernel_rule(te.ScanOp)(lambda host, op, target: None)


def test_te_to_loop_dispatches_through_the_registry(monkeypatch):
    seen = []
    rule = KERNEL_RULES[te.ComputeOp]

    def counting(host, op, target):
        seen.append(op.attributes["tag"].data)
        rule(host, op, target)

    monkeypatch.setitem(KERNEL_RULES, te.ComputeOp, counting)
    b = tk.GraphBuilder()
    lower_to_loops(b.finish(b.exp(b.input("x", (4,)))))
    assert seen == ["exp"]


def test_a_loop_kind_converter_is_one_registration(rng):
    """A converter registered for a kind lowers its loops; one that declines leaves the
    loop serial (the numbers stay right either way)."""
    assert {"parallel", "vectorized", "unrolled"} <= set(LOOP_CONVERTERS)
    with pytest.raises(ValueError, match="already have a converter"):
        loop_converter("parallel")(lambda conv, op: False)
    with pytest.raises(ValueError, match="unknown loop kind 'warp.x'"):
        loop_converter("warp.x")
    seen = []

    def declining(conv, op):
        seen.append(op.loop_name.data)
        return False

    loop_converter("serial")(declining)
    try:
        b = tk.GraphBuilder()
        module = b.finish(b.exp(b.input("x", (3, 5))))
        with tk.PassContext(disabled_passes=["default-schedule"]):
            lib = tk.build(module)
    finally:
        del LOOP_CONVERTERS["serial"]
    assert seen  # every serial loop went through it
    x = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(lib(x), np.exp(x), rtol=1e-6)

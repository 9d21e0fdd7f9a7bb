"""Malformed graph IR is rejected by the verifier with a VerifyException naming the op
and the mismatch (expected vs found); ops without a compute rule make ``tk.build``
raise one UnsupportedOperatorError listing all of them."""

from __future__ import annotations

import re
import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i32
from xdsl.ir import Block, Region
from xdsl.irdl import irdl_op_definition, operand_def, result_def
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.dialects.graph import GraphOp
from tensorkiln.dialects.graph.elementwise import AddOp, ExpOp


def function(args: str, body: str, result: str) -> str:
    """A ``func.func @main`` whose body computes ``%r`` of type ``result``."""
    return f"func.func @main({args}) -> {result} {{\n  {body}\n  func.return %r : {result}\n}}"


CASES = {
    # name: (args, op line, result type, expected message)
    "add-result-shape": (
        "%x: tensor<4x8xf32>, %b: tensor<8xf32>",
        "%r = graph.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x7xf32>",
        "tensor<4x7xf32>",
        "graph.add: result type tensor<4x7xf32> does not match the inferred type tensor<4x8xf32>",
    ),
    "add-result-element": (
        "%x: tensor<4xf32>",
        "%r = graph.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf64>",
        "tensor<4xf64>",
        "graph.add: result type tensor<4xf64> does not match the inferred type tensor<4xf32>",
    ),
    "unary-result-shape": (  # (the assembly format ties both types; generic syntax can split them)
        "%x: tensor<4x8xf32>",
        '%r = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>',
        "tensor<8x4xf32>",
        "attribute tensor<4x8xf32> expected from variable 'T', but got tensor<8x4xf32>",
    ),
    "matmul-contraction": (
        "%a: tensor<16x8xf32>, %b: tensor<7x32xf32>",
        "%r = graph.matmul %a, %b : tensor<16x8xf32>, tensor<7x32xf32> -> tensor<16x32xf32>",
        "tensor<16x32xf32>",
        "graph.matmul: contraction dims differ (8 vs 7)",
    ),
    "matmul-rank": (
        "%a: tensor<2x16x8xf32>, %b: tensor<8x32xf32>",
        "%r = graph.matmul %a, %b : tensor<2x16x8xf32>, tensor<8x32xf32> -> tensor<16x32xf32>",
        "tensor<16x32xf32>",
        "graph.matmul: lhs must have rank 2, got shape (2, 16, 8)",
    ),
    "matmul-bool": (
        "%a: tensor<2x3xi1>, %b: tensor<3x2xi1>",
        "%r = graph.matmul %a, %b : tensor<2x3xi1>, tensor<3x2xi1> -> tensor<2x2xi1>",
        "tensor<2x2xi1>",
        "graph.matmul: operands must be numeric, got i1",
    ),
    "batch-matmul-contraction": (
        "%a: tensor<2x4x8xf32>, %b: tensor<2x9x3xf32>",
        "%r = graph.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<2x9x3xf32> -> tensor<2x4x3xf32>",
        "tensor<2x4x3xf32>",
        "graph.batch_matmul: contraction dims differ (8 vs 9)",
    ),
    "batch-matmul-batch-dims": (
        "%a: tensor<2x4x8xf32>, %b: tensor<3x8x3xf32>",
        "%r = graph.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x3xf32> -> tensor<2x4x3xf32>",
        "tensor<2x4x3xf32>",
        "graph.batch_matmul: shapes (2,), (3,) do not broadcast",
    ),
    "batch-matmul-ranks": (
        "%a: tensor<2x4x8xf32>, %b: tensor<8x3xf32>",
        "%r = graph.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<2x4x3xf32>",
        "tensor<2x4x3xf32>",
        "graph.batch_matmul: operands must have the same rank >= 3, got shapes (2, 4, 8) and (8, 3)",
    ),
    "dense-bias-size": (
        "%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>",
        "%r = graph.dense %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32> -> tensor<4x16xf32>",
        "tensor<4x16xf32>",
        "graph.dense: bias must have shape (16,), got (8,)",
    ),
    "dense-contraction": (
        "%x: tensor<4x9xf32>, %w: tensor<16x8xf32>",
        "%r = graph.dense %x, %w : tensor<4x9xf32>, tensor<16x8xf32> -> tensor<4x16xf32>",
        "tensor<4x16xf32>",
        "graph.dense: contraction dims differ (9 vs 8)",
    ),
    "dense-weight-rank": (
        "%x: tensor<4x8xf32>, %w: tensor<8xf32>",
        "%r = graph.dense %x, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>",
        "tensor<4x8xf32>",
        "graph.dense: weight must have rank 2, got shape (8,)",
    ),
    "dense-bias-element": (
        "%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf64>",
        "%r = graph.dense %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf64> -> tensor<4x16xf32>",
        "tensor<4x16xf32>",
        "graph.dense: operands must have one element type, got f32, f64",
    ),
    "where-condition-not-i1": (
        "%c: tensor<4xf32>, %x: tensor<4xf32>",
        "%r = graph.where %c, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>",
        "tensor<4xf32>",
        "graph.where: condition must be an i1 tensor, got tensor<4xf32>",
    ),
    "where-branch-types": (
        "%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi32>",
        "%r = graph.where %c, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xi32> -> tensor<4xf32>",
        "tensor<4xf32>",
        "graph.where: on_true and on_false must have one element type, got f32, i32",
    ),
    "where-broadcast": (
        "%c: tensor<3xi1>, %x: tensor<4xf32>",
        "%r = graph.where %c, %x, %x : tensor<3xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>",
        "tensor<4xf32>",
        "graph.where: shapes (3,), (4,), (4,) do not broadcast",
    ),
    "compare-unknown-predicate": (
        "%x: tensor<4x8xf32>",
        '%r = graph.compare %x, %x {predicate = "less"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>',
        "tensor<4x8xi1>",
        "graph.compare: unknown predicate 'less' (expected one of eq, ne, lt, le, gt, ge)",
    ),
    "compare-result-not-i1": (
        "%x: tensor<4xf32>",
        '%r = graph.compare %x, %x {predicate = "lt"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>',
        "tensor<4xf32>",
        "graph.compare: result type tensor<4xf32> does not match the inferred type tensor<4xi1>",
    ),
    "compare-no-predicate": (
        "%x: tensor<4xf32>",
        "%r = graph.compare %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>",
        "tensor<4xi1>",
        "property 'predicate' expected in operation 'graph.compare'",
    ),
    "broadcast-static": (
        "%x: tensor<3x4xf32>, %y: tensor<5x4xf32>",
        "%r = graph.add %x, %y : tensor<3x4xf32>, tensor<5x4xf32> -> tensor<3x4xf32>",
        "tensor<3x4xf32>",
        "graph.add: shapes (3, 4), (5, 4) do not broadcast",
    ),
    "broadcast-symbol-vs-static": (
        "%x: tensor<?x4xf32, #graph.dims<n, _>>, %y: tensor<5x4xf32>",
        "%r = graph.mul %x, %y : tensor<?x4xf32, #graph.dims<n, _>>, tensor<5x4xf32> -> tensor<5x4xf32>",
        "tensor<5x4xf32>",
        "graph.mul: shapes (n, 4), (5, 4) do not broadcast",
    ),
    "broadcast-two-symbols": (
        "%x: tensor<?x8xf32, #graph.dims<n, _>>, %y: tensor<?x8xf32, #graph.dims<m, _>>",
        "%r = graph.max %x, %y : tensor<?x8xf32, #graph.dims<n, _>>, tensor<?x8xf32, #graph.dims<m, _>>"
        " -> tensor<?x8xf32, #graph.dims<n, _>>",
        "tensor<?x8xf32, #graph.dims<n, _>>",
        "graph.max: shapes (n, 8), (m, 8) do not broadcast",
    ),
    "symbol-name-in-result": (
        "%x: tensor<?x8xf32, #graph.dims<n, _>>",
        "%r = graph.add %x, %x : tensor<?x8xf32, #graph.dims<n, _>>, tensor<?x8xf32, #graph.dims<n, _>>"
        " -> tensor<?x8xf32, #graph.dims<m, _>>",
        "tensor<?x8xf32, #graph.dims<m, _>>",
        "graph.add: result type tensor<?x8xf32, #graph.dims<m, _>> does not match the inferred type "
        "tensor<?x8xf32, #graph.dims<n, _>>",
    ),
    "element-mix-f32-i32": (
        "%x: tensor<4x8xf32>, %i: tensor<4x8xi32>",
        "%r = graph.add %x, %i : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>",
        "tensor<4x8xf32>",
        "graph.add: operands must have one element type, got f32, i32",
    ),
    "element-mix-i32-i64": (
        "%x: tensor<4xi64>, %i: tensor<4xi32>",
        "%r = graph.div %x, %i : tensor<4xi64>, tensor<4xi32> -> tensor<4xi64>",
        "tensor<4xi64>",
        "graph.div: operands must have one element type, got i32, i64",
    ),
    "compare-element-mix": (
        "%x: tensor<4xf32>, %y: tensor<4xf64>",
        '%r = graph.compare %x, %y {predicate = "eq"} : tensor<4xf32>, tensor<4xf64> -> tensor<4xi1>',
        "tensor<4xi1>",
        "graph.compare: operands must have one element type, got f32, f64",
    ),
    "exp-of-int": (
        "%x: tensor<4x8xi32>",
        "%r = graph.exp %x : tensor<4x8xi32>",
        "tensor<4x8xi32>",
        "graph.exp: operand must be a float tensor, got tensor<4x8xi32>",
    ),
    "abs-of-bool": (
        "%x: tensor<4xi1>",
        "%r = graph.abs %x : tensor<4xi1>",
        "tensor<4xi1>",
        "graph.abs: operand must be numeric, got tensor<4xi1>",
    ),
    "pow-of-int": (
        "%x: tensor<4xi32>",
        "%r = graph.pow %x, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>",
        "tensor<4xi32>",
        "graph.pow: operands must be float tensors, got i32",
    ),
    "sub-of-bool": (
        "%x: tensor<4xi1>",
        "%r = graph.sub %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>",
        "tensor<4xi1>",
        "graph.sub: operands must be numeric, got i1",
    ),
    "div-of-bool": (
        "%x: tensor<4xi1>",
        "%r = graph.div %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>",
        "tensor<4xi1>",
        "graph.div: operands must be numeric, got i1",
    ),
    "bitwise-on-floats": (
        "%x: tensor<4xf32>",
        "%r = graph.bitwise_and %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>",
        "tensor<4xf32>",
        "graph.bitwise_and: operands must be integer or boolean tensors, got f32",
    ),
    "cast-to-unsupported": (
        "%x: tensor<4xf32>",
        "%r = graph.cast %x : tensor<4xf32> -> tensor<4xui16>",
        "tensor<4xui16>",
        "graph.cast: unsupported element type ui16",
    ),
    "cast-shape": (
        "%x: tensor<4xf32>",
        "%r = graph.cast %x : tensor<4xf32> -> tensor<5xi32>",
        "tensor<5xi32>",
        "graph.cast: result type tensor<5xi32> does not match the inferred type tensor<4xi32>",
    ),
    "unsupported-element-type": (
        "%x: tensor<4xui16>",
        "%r = graph.neg %x : tensor<4xui16>",
        "tensor<4xui16>",
        "graph.neg: unsupported element type ui16",
    ),
    "unnamed-dynamic-dim": (
        "%x: tensor<?x4xf32>",
        "%r = graph.exp %x : tensor<?x4xf32>",
        "tensor<?x4xf32>",
        "graph.exp: tensor<?x4xf32>: dynamic dims must be named with #graph.dims<...>",
    ),
    "dims-count": (
        "%x: tensor<?x4xf32, #graph.dims<n>>",
        "%r = graph.exp %x : tensor<?x4xf32, #graph.dims<n>>",
        "tensor<?x4xf32, #graph.dims<n>>",
        "graph.exp: tensor<?x4xf32, #graph.dims<n>>: #graph.dims names 1 dims, type has 2",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_ir_is_rejected(case):
    args, body, result, message = CASES[case]
    with pytest.raises(VerifyException) as info:
        tk.parse_module(function(args, body, result))
    assert message in str(info.value)  # (the message itself, not the notes xDSL attaches)


def test_unary_result_type_mismatch_marks_the_op():
    """The IRDL constraint message does not say which op; the printed module attached
    as a note marks it."""
    args, body, result, _ = CASES["unary-result-shape"]
    with pytest.raises(VerifyException) as info:
        tk.parse_module(function(args, body, result))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert '%r = "graph.exp"(%x)' in notes and "Operation does not verify" in notes


def test_each_case_is_otherwise_well_formed():
    """The cases differ from valid IR only in the mismatch: the same text with a valid
    op line parses (so the errors above come from the op, not from the harness)."""
    text = function("%x: tensor<4x8xf32>, %b: tensor<8xf32>",
                    "%r = graph.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>",
                    "tensor<4x8xf32>")  # fmt: skip
    module = tk.parse_module(text)
    x, b = np.ones((4, 8), np.float32), np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(tk.build(module)(x, b), x + b)


def test_function_result_type_mismatch():
    text = "func.func @main(%x: tensor<4xf32>) -> tensor<5xf32> {\n  %r = graph.exp %x : tensor<4xf32>\n  func.return %r : tensor<4xf32>\n}"  # noqa: E501
    with pytest.raises(VerifyException, match=re.escape("expected [tensor<5xf32>], got [tensor<4xf32>]")):
        tk.parse_module(text)


# ---------------------------------------------------------------------------
# the same checks when building with the Python API


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda b, x, y: b.add(x, y), "graph.add: shapes (3, 4), (5, 4) do not broadcast"),
        (lambda b, x, y: b.matmul(x, y), "graph.matmul: contraction dims differ (4 vs 5)"),
        (lambda b, x, y: b.where(x, x, y), "graph.where: condition must be an i1 tensor, got tensor<3x4xf32>"),
        (lambda b, x, y: b.compare(x, x, predicate="lesser"), "graph.compare: unknown predicate 'lesser'"),
        (lambda b, x, y: b.add(x, b.cast(x, to=i32)), "graph.add: operands must have one element type, got f32, i32"),
        (lambda b, x, y: b.dense(x, y, np.zeros(3, np.float32)), "graph.dense: bias must have shape (5,), got (3,)"),
    ],
    ids=["broadcast", "matmul", "where", "predicate", "element-mix", "dense-bias"],
)
def test_builder_reports_the_same_errors(make, message):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 4), np.float32)
    y = b.input("y", (5, 4), np.float32)
    with pytest.raises(VerifyException, match=re.escape(message)):
        make(b, x, y)


def test_builder_rejects_unsupported_dtype_by_name():
    b = tk.GraphBuilder()
    with pytest.raises(ValueError, match=r"unsupported dtype complex64 \(supported: .*float32"):
        b.input("x", (3,), np.complex64)


# ---------------------------------------------------------------------------
# ops without a compute rule


@irdl_op_definition
class MysteryOp(GraphOp):
    """A test-only graph op with reference semantics but no compute rule."""

    name = "graph.test_mystery"
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, x):
        self._build([x])

    def infer_result_type(self):
        return self.input.type

    def reference(self, x):
        return x * 2


@irdl_op_definition
class EnigmaOp(GraphOp):
    """Another test-only graph op without a compute rule."""

    name = "graph.test_enigma"
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, x):
        self._build([x])

    def infer_result_type(self):
        return self.input.type

    def reference(self, x):
        return x + 1


def _module_with_unsupported_ops() -> ModuleOp:
    """main(x) = exp(enigma(mystery(mystery(x)))) + mystery(x): three unsupported ops of two kinds."""
    t = TensorType(f32, [4])
    block = Block(arg_types=[t])
    m1 = MysteryOp(block.args[0])
    m2 = MysteryOp(m1.result)
    e = EnigmaOp(m2.result)
    ex = ExpOp(e.result)
    m3 = MysteryOp(block.args[0])
    add = AddOp(ex.result, m3.result)
    block.add_ops([m1, m2, e, ex, m3, add, func.ReturnOp(add.result)])
    module = ModuleOp([func.FuncOp("main", ([t], [t]), Region(block))])
    module.verify()
    return module


def test_unsupported_ops_are_listed_all_at_once():
    module = _module_with_unsupported_ops()
    message = "cannot compile 4 ops: graph.test_enigma (x1), graph.test_mystery (x3)"
    with pytest.raises(tk.UnsupportedOperatorError, match=re.escape(message)):
        tk.build(module)
    with pytest.raises(tk.UnsupportedOperatorError, match=re.escape(message)):
        tk.create_executor("aot", module).evaluate()
    with pytest.raises(tk.UnsupportedOperatorError, match=re.escape(message)):
        tk.emit_source(module)
    assert issubclass(tk.UnsupportedOperatorError, NotImplementedError)


def test_unsupported_ops_still_run_in_the_interpreter():
    module = _module_with_unsupported_ops()
    x = np.array([0.0, 0.5, -1.0, 2.0], np.float32)
    got = tk.create_executor("interpreter", module).evaluate()(x)
    np.testing.assert_allclose(got, np.exp(x * 4 + 1) + x * 2, rtol=1e-6)


def test_foreign_ops_in_a_graph_function_are_unsupported():
    """An op of another dialect in a graph function is reported by name, not crashed on."""
    module = tk.parse_module(
        """
        func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
          %y = arith.addf %x, %x : tensor<3xf32>
          func.return %y : tensor<3xf32>
        }
        """
    )
    with pytest.raises(tk.UnsupportedOperatorError, match=r"arith\.addf \(x1\)"):
        tk.build(module)

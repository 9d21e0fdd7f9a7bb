"""Control flow in the VM: graph.if on a tensor predicate, graph.while with a
data-dependent trip count, nesting, symbolic dims resolved at run time; the ops'
verifiers and their IR round trip."""

from __future__ import annotations

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.dialects.graph.control import IfOp, WhileOp
from tensorkiln.driver import build_vm
from tensorkiln.driver.vm import VMModule
from tensorkiln.frontends.control_flow import if_, while_
from xdsl.utils.exceptions import VerifyException


def _if_module():
    """relu(x) * 2 if sum(x) > 0 else -x, then + 1; x is (n, 5)."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 5))
    pred = b.compare(b.reduce_sum(x, [0, 1], False), 0.0, "gt")
    (y,) = if_(
        b,
        pred,
        [x],
        then_fn=lambda b, x: [b.mul(b.relu(x), 2.0)],
        else_fn=lambda b, x: [b.neg(x)],
    )
    return b.finish(b.add(y, 1.0))


def _while_module():
    """Double x until its largest |element| reaches 100; also count the iterations."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 3))
    zero = b.constant(np.zeros((), np.int64))
    y, count = while_(
        b,
        [x, zero],
        cond_fn=lambda b, y, k: b.compare(b.reduce_max(b.abs(y), [0, 1], False), 100.0, "lt"),
        body_fn=lambda b, y, k: [b.mul(y, 2.0), b.add(k, 1)],
    )
    return b.finish(y, count)


def _numpy_while(x):
    y, k = x.copy(), 0
    while np.abs(y).max() < 100.0:
        y, k = y * 2.0, k + 1
    return y, k


@pytest.mark.parametrize("n", [1, 3, 17])
def test_if_on_a_tensor_predicate_takes_both_branches(n, rng):
    module = _if_module()
    vm = tk.build(module)  # control flow: tk.build picks the VM
    assert isinstance(vm, VMModule)
    reference = tk.create_executor("interpreter", module).evaluate()
    for sign in (1.0, -1.0):
        x = (np.abs(rng.standard_normal((n, 5))) * sign).astype("f4")
        expected = np.maximum(x, 0) * 2 + 1 if x.sum() > 0 else -x + 1
        np.testing.assert_allclose(vm(x), expected, rtol=1e-6)
        np.testing.assert_allclose(reference(x), expected, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 3, 17])
def test_while_with_a_data_dependent_trip_count(n, rng):
    module = _while_module()
    vm = tk.create_executor("vm", module).evaluate()
    reference = tk.create_executor("interpreter", module).evaluate()
    trips = set()
    for scale in (0.01, 1.0, 50.0):
        x = (rng.standard_normal((n, 3)) * scale).astype("f4")
        y, k = vm(x)
        ey, ek = _numpy_while(x)
        np.testing.assert_allclose(y, ey, rtol=1e-6)
        assert k.dtype == np.int64 and int(k) == ek
        ry, rk = reference(x)
        np.testing.assert_allclose(ry, ey, rtol=1e-6)
        assert int(rk) == ek
        trips.add(ek)
    assert len(trips) == 3, "the trip count depends on the data"


def test_nested_if_inside_a_while_and_bytecode(rng):
    """Collatz-like: while k < 6: x = x / 2 if sum(x) > 10 else x + 3."""
    b = tk.GraphBuilder()
    x = b.input("x", (2, 2))
    k0 = b.constant(np.zeros((), np.int32))

    def body(b, x, k):
        (nx,) = if_(
            b,
            b.compare(b.reduce_sum(x, [0, 1], False), 10.0, "gt"),
            [x],
            then_fn=lambda b, x: [b.div(x, 2.0)],
            else_fn=lambda b, x: [b.add(x, 3.0)],
        )
        return [nx, b.add(k, 1)]

    y, _ = while_(b, [x, k0], cond_fn=lambda b, x, k: b.compare(k, 6, "lt"), body_fn=body)
    module = b.finish(y)
    vm = build_vm(module)
    text = vm.program.disassemble()
    for word in ("call", "jump_unless", "jump ->", "move", "const", "ret"):
        assert word in text
    xv = rng.standard_normal((2, 2)).astype("f4") * 5
    expected = xv.copy()
    for _ in range(6):
        expected = expected / 2 if expected.sum() > 10 else expected + 3
    np.testing.assert_allclose(vm(xv), expected, rtol=1e-5)
    np.testing.assert_allclose(tk.create_executor("interpreter", module).evaluate()(xv), expected, rtol=1e-5)


def test_vm_checks_arguments_and_symbolic_dims(rng):
    vm = build_vm(_if_module())
    with pytest.raises(ValueError, match=r"argument 'x'.*expected 5, got 4"):
        vm(np.zeros((3, 4), "f4"))
    with pytest.raises(ValueError, match="expected 1 arguments"):
        vm()


def test_aot_and_graph_refuse_control_flow_clearly():
    module = _if_module()
    for kind in ("aot", "graph"):
        with pytest.raises(ValueError, match="cannot run control flow.*use the 'vm' executor"):
            tk.create_executor(kind, module).evaluate()


def test_vm_outputs_never_alias_inputs(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3,))
    (y,) = if_(b, b.compare(b.reduce_sum(x, [0], False), 0.0, "gt"), [x], lambda b, x: [x], lambda b, x: [b.neg(x)])
    vm = build_vm(b.finish(y))
    xv = np.ones(3, "f4")
    out = vm(xv)
    assert out is not xv and not np.shares_memory(out, xv)
    np.testing.assert_array_equal(out, xv)


def test_control_flow_ops_verify_their_regions():
    module = _if_module()
    if_op = next(op for op in module.walk() if isinstance(op, IfOp))
    bad = if_op.clone()
    bad.then_region.block.last_op.operands = [bad.then_region.block.args[0]]  # fine: same type
    bad.verify()
    b = tk.GraphBuilder()
    x = b.input("x", (2, 5))
    with pytest.raises(VerifyException, match="predicate must have one element"):
        if_(b, b.compare(x, 0.0, "gt"), [x], lambda b, x: [x], lambda b, x: [x]).pop().owner.verify()
    b = tk.GraphBuilder()
    x = b.input("x", (2, 5))
    with pytest.raises(VerifyException, match="body region must yield the carried types"):
        while_(
            b,
            [x],
            cond_fn=lambda b, x: b.compare(b.reduce_sum(x, [0, 1], False), 0.0, "gt"),
            body_fn=lambda b, x: [b.reduce_sum(x, [0], False)],
        ).pop().owner.verify()


def test_control_flow_ir_prints_and_parses_back():
    module = _while_module()
    text = str(module)
    assert '"graph.while"' in text and '"graph.region_yield"' in text
    again = tk.parse_module(text)
    assert str(again) == text
    assert any(isinstance(op, WhileOp) for op in again.walk())


def test_vm_artifact_round_trip_and_corrupt_bytecode(tmp_path, rng):
    import json

    from tensorkiln.runtime import ArtifactError, load_module
    from tensorkiln.runtime.manifest import seal

    module = _while_module()
    vm = build_vm(module)
    vm.export_library(tmp_path / "vm.tk")
    deployed = load_module(tmp_path / "vm.tk")
    x = (rng.standard_normal((4, 3)) * 0.5).astype("f4")
    for got, expected in zip(deployed(x), vm(x)):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match="runs in the 'vm' executor"):
        load_module(tmp_path / "vm.tk", executor="graph")
    program = json.loads((tmp_path / "vm.tk" / "vm.json").read_text())
    program["code"][0] = ["jump", 999]
    (tmp_path / "vm.tk" / "vm.json").write_text(json.dumps(program))
    with pytest.raises(ArtifactError, match="vm.json"):  # the manifest no longer matches
        load_module(tmp_path / "vm.tk")
    seal(tmp_path / "vm.tk")  # resealed: the bytecode itself is checked
    with pytest.raises(ArtifactError, match="bad operands in instruction 0"):
        load_module(tmp_path / "vm.tk")


def test_vm_profile_counts_calls_per_function(rng):
    vm = build_vm(_while_module())
    x = (rng.standard_normal((2, 3)) * 0.1).astype("f4")
    _, trips = _numpy_while(x)
    report = vm.profile(x, runs=2)
    calls = {k.name: k.calls for k in report.kernels}
    cond = next(n for n in calls if "_cond" in n)
    body = next(n for n in calls if "_body" in n)
    assert calls[cond] == trips + 1 and calls[body] == trips
    assert report.executor == "vm" and report.first_run_seconds is not None and report.compile_seconds > 0

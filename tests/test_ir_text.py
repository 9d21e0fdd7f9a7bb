"""The LLVM IR printer (backends/llvm/ir_text.py) means what xDSL's translation means: the
same modules, optimised by LLVM, give the same code (names aside), and builds give the
same numbers; what it does not print goes to xDSL's translation."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.backends.llvm import codegen, ir_text, jit, object_code
from tensorkiln.backends.llvm.target import CPUTarget, target_machine
from tensorkiln.dialects.graph.types import element_type_of
from tensorkiln.driver import compile_cache
from tensorkiln.examples.models import elementwise_chain, mlp, small_cnn
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32


def _ops_model(rng):
    """Float and integer arithmetic, compares, selects, casts, reductions, exp/tanh/erf,
    a symbolic dim, a 1-element axis."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 13))
    i = b.input("i", ("n", 13), np.int32)
    h = b.add(b.mul(x, 1.5), b.cast(b.bitwise_and(i, 5), element_type_of(np.float32)))
    h = b.where(b.compare(h, 0.25, "gt"), b.exp(h), b.erf(b.neg(h)))
    h = b.max(b.softmax(b.tanh(h), -1), b.pow(b.abs(h), 1.5))
    s = b.reduce_max(b.abs(h), (1,), keepdims=True)
    return b.finish(b.sub(h, s), b.cast(b.div(i, 3), element_type_of(np.float64)))


def _normalized(text: str) -> list[str]:
    """Optimised LLVM IR without names, labels, comments and declarations."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("; ModuleID", "source_filename", "declare", "; Function Attrs", "attributes #")):
            continue
        line = re.sub(r";.*$", "", line)
        line = re.sub(r'^[\w."\-]+:', "L:", line)
        line = re.sub(r'%"?[\w.\-]+"?', "%N", line)
        out.append(re.sub(r"#\d+", "#A", line).rstrip())
    return out


def _lowered_modules(monkeypatch, build) -> list[tuple[ModuleOp, CPUTarget]]:
    seen = []

    def keep(module, target):
        seen.append((module.clone(), target))
        return jit.llvm_ir(module, target)

    monkeypatch.setattr(object_code, "llvm_ir", keep)
    build()
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("make", ["ops", "mlp", "cnn", "chain"])
def test_the_printed_ir_optimises_to_what_xdsls_does(no_disk_cache, monkeypatch, rng, make):
    module = {"ops": lambda: _ops_model(rng), "mlp": lambda: mlp()[0], "cnn": lambda: small_cnn()[0],
              "chain": lambda: elementwise_chain(40)[0]}[make]()  # fmt: skip
    lowered = _lowered_modules(monkeypatch, lambda: tk.build(module))
    assert lowered
    for llvm_module, target in lowered:
        machine = target_machine(target)
        ours = ir_text.module_text(llvm_module, machine.triple, str(machine.target_data))  # (no fallback)
        theirs = str(convert_module(llvm_module, fallback_target_triple=machine.triple, data_layout=str(machine.target_data)))
        assert _normalized(str(codegen.optimize(ours, target))) == _normalized(str(codegen.optimize(theirs, target)))


def test_builds_compute_the_same_with_either_printer(no_disk_cache, monkeypatch, rng):
    module = _ops_model(rng)
    x = rng.standard_normal((6, 13)).astype("f4")
    i = rng.integers(-20, 20, (6, 13)).astype("i4")
    ours = tk.build(module)(x, i)
    monkeypatch.setenv(jit.PRINTER_VARIABLE, "xdsl")
    theirs = tk.build(module)(x, i)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_what_it_does_not_print_goes_to_xdsls_translation():
    module = ModuleOp([llvm.GlobalOp(i32, "answer", "internal", value=IntegerAttr(42, i32))])
    target = CPUTarget.parse("llvm")
    machine = target_machine(target)
    with pytest.raises(ir_text.Unsupported, match="global with a value"):
        ir_text.module_text(module, machine.triple, str(machine.target_data))
    assert "@answer" in jit.llvm_ir(module, target).replace('"', "")

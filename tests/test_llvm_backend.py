"""The LLVM backend: target strings, and clear errors instead of crashes."""

from __future__ import annotations

import pytest

from tensorkiln.backends.llvm.jit import CPUTarget, JITModule, optimize


def test_host_target_and_options():
    host = CPUTarget.parse("llvm")
    assert host.cpu and host.opt_level == 3
    custom = CPUTarget.parse("llvm -mcpu=x86-64 -mattr=+avx2 -opt-level=2")
    assert custom.cpu == "x86-64" and "+avx2" in custom.features and custom.opt_level == 2


@pytest.mark.parametrize("bad", ["cuda", "", "llvm -mfoo=1"])
def test_bad_target_strings(bad):
    with pytest.raises(ValueError):
        CPUTarget.parse(bad)


def test_call_to_a_missing_native_function_is_an_error_not_a_crash():
    ir = """
    declare void @tk_no_such_function(i64)
    define void @f(i64 %n) {
      call void @tk_no_such_function(i64 %n)
      ret void
    }
    """
    target = CPUTarget.parse("llvm")
    with pytest.raises(RuntimeError, match="tk_no_such_function"):
        JITModule(optimize(ir, target), target)


def test_emit_source_is_the_code_build_compiles(rng) -> None:
    """emit_source(target="llvm") shows the optimized, scheduled module: fused kernels,
    the GEMM register tile in vectors, threads (not the naive loops of an unoptimized
    lowering)."""
    import numpy as np

    import tensorkiln as tk

    lanes = CPUTarget.parse("llvm").vector_bits // 32
    b = tk.GraphBuilder()
    w = rng.standard_normal((96, 200)).astype(np.float32)
    module = b.finish(b.relu(b.add(b.dense(b.input("x", (64, 200)), w), 1.0)))
    source = tk.emit_source(module, target="llvm")
    assert 'define void @"dense_relu_0"' in source  # (the bias folded into the epilogue)
    assert f"<{lanes} x float>" in source and "GOMP_parallel" in source
    assert "define void @\"dense_0" not in source and "define void @\"relu_0" not in source

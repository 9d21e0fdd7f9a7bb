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

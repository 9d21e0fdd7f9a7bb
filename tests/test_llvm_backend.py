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
    assert f"<{lanes} x float>" in source and "tk_parallel_for" in source
    assert "define void @\"dense_0" not in source and "define void @\"relu_0" not in source


def _relocation_types(elf: bytes) -> set[int]:
    """The x86-64 relocation types in the RELA sections of a 64-bit ELF object."""
    import struct

    section_offset, = struct.unpack_from("<Q", elf, 40)
    entry_size, count = struct.unpack_from("<HH", elf, 58)
    types = set()
    for k in range(count):
        _, kind, _, _, offset, size, _, _, _, rela_size = struct.unpack_from("<IIQQQQIIQQ", elf, section_offset + k * entry_size)
        if kind == 4:  # SHT_RELA
            for r in range(size // rela_size):
                info, = struct.unpack_from("<Q", elf, offset + r * rela_size + 8)
                types.add(info & 0xFFFFFFFF)
    return types


def test_objects_use_only_64_bit_references_and_run() -> None:
    """The JIT loads an object's code, constant pools and unwind tables into separate
    mappings that may lie more than 2 GiB apart: no reference may be 32-bit PC-relative
    (PC32, PLT32, GOTPCREL and its relaxable forms), or LLVM aborts the process at load."""
    import ctypes

    import numpy as np

    from tensorkiln.backends.llvm.object_code import ObjectCode, ObjectModule, pic_target_machine

    ir = """
    declare float @expf(float)
    define void @f(ptr %p, i64 %n) {
    entry:
      br label %loop
    loop:
      %i = phi i64 [0, %entry], [%next, %loop]
      %a = getelementptr <8 x float>, ptr %p, i64 %i
      %v = load <8 x float>, ptr %a, align 4
      %w = fmul <8 x float> %v, <float 1.5, float 2.5, float 3.5, float 4.5, float 5.5, float 6.5, float 7.5, float 8.5>
      %s = extractelement <8 x float> %w, i32 0
      %e = call float @expf(float %s)
      %x = insertelement <8 x float> %w, float %e, i32 0
      store <8 x float> %x, ptr %a, align 4
      %next = add i64 %i, 1
      %done = icmp eq i64 %next, %n
      br i1 %done, label %exit, label %loop
    exit:
      ret void
    }
    """
    target = CPUTarget.parse("llvm")
    obj = pic_target_machine(target).emit_object(optimize(ir, target))
    pc_relative_32 = {2, 4, 9, 41, 42}  # R_X86_64_PC32, PLT32, GOTPCREL, GOTPCRELX, REX_GOTPCRELX
    assert _relocation_types(obj), "the object should have relocations (constant pool, expf)"
    assert not _relocation_types(obj) & pc_relative_32
    module = ObjectModule(ObjectCode(obj, ["f"], ["expf"], reads_thread_count=False), target)
    data = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    expected = data * np.arange(1.5, 9.5, dtype=np.float32)
    expected[:, 0] = np.exp(expected[:, 0])
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(module.address("f"))(data.ctypes.data, 3)
    np.testing.assert_allclose(data, expected, rtol=1e-6)

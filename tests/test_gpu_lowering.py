"""loop-to-gpu and emulate-gpu on hand-written loop IR: shared memory and barriers give
the right numbers when the gpu kernels run with GPU semantics (emulate-gpu), kernels
that cannot be mapped fail with a message naming the kernel and the reason, and the
host program computes grids from the shapes. Also the CUDA target's errors without cupy."""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.utils.exceptions import PassFailedException

import tensorkiln as tk
from tensorkiln.backends.cuda.host import print_host
from tensorkiln.backends.llvm.jit import CPUTarget, jit_compile
from tensorkiln.passes.pipeline import PassContext, run_pipeline

ROWSUM = Path(__file__).parent / "filecheck" / "gpu" / "shared-memory.mlir"
QUIET = PassContext(opt_level=0, dump_ir=False)


def _lower(text: str, passes: tuple[str, ...]):
    module = tk.parse_module(text)
    run_pipeline(module, passes, QUIET)
    return module


@pytest.mark.parametrize("shape", [(5, 70), (3, 31), (4, 1), (2, 64)])
def test_shared_memory_and_barriers_emulated(shape):
    """Each chunk of 32 columns goes through shared memory; a partial last chunk too."""
    module = _lower(ROWSUM.read_text(), ("loop-to-gpu", "emulate-gpu", "loop-to-llvm"))
    jit = jit_compile(module, CPUTarget.parse("llvm"))
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    b = np.full(shape[0], np.nan, np.float32)
    main = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(
        jit.address("main")
    )
    main(a.ctypes.data, *shape, b.ctypes.data, shape[0])
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)


KERNEL = """
builtin.module {{
  func.func @k(%A: memref<?xf32>, %B: memref<?xf32>) attributes {{tk.kernel = "k"}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = loop.dim %A, 0 : memref<?xf32>
    {body}
    func.return
  }}
}}
"""


@pytest.mark.parametrize(
    "body, message",
    [
        (
            'loop.for %i = %c0 to %n step %c1 threadIdx.x { %x = loop.load %A[%i] : memref<?xf32>\n'
            "loop.store %x, %B[%i] : memref<?xf32> }",
            "no compile-time trip bound",
        ),
        (
            'loop.for %i = %c0 to %n step %c1 blockIdx.x { %x = loop.load %A[%i] : memref<?xf32>\n'
            "loop.store %x, %B[%i] : memref<?xf32>\n"
            'loop.for %t = %c0 to %c1 step %c1 threadIdx.x { loop.store %x, %B[%t] : memref<?xf32> } }',
            "would run in every thread",
        ),
        (
            'loop.for %i = %c0 to %n step %c1 blockIdx.x { %t = loop.alloc(%n) {scope = "global"} : memref<?xf32> }',
            "allocates a global buffer inside a kernel",
        ),
        (
            'loop.for %i = %c0 to %n step %c1 blockIdx.x { %x = loop.load %A[%i] : memref<?xf32>\n'
            "%j = arith.fptosi %x : f32 to i64\n%jj = arith.index_cast %j : i64 to index\n"
            'loop.for %t = %c0 to %jj step %c1 blockIdx.y { loop.store %x, %B[%t] : memref<?xf32> } }',
            "grid size must follow from the argument sizes",
        ),
    ],
)
def test_unmappable_kernels_fail_clearly(body, message):
    text = KERNEL.format(body=body).replace("func.func @k", "func.func @main(%A: memref<?xf32>, %B: memref<?xf32>) {\n"
        "    func.call @k(%A, %B) : (memref<?xf32>, memref<?xf32>) -> ()\n    func.return\n  }\n  func.func @k")  # fmt: skip
    with pytest.raises(PassFailedException, match=message) as info:
        _lower(text, ("loop-to-gpu",))
    assert "kernel 'k'" in str(info.value)


DIVERGENT = """
builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%A: memref<4xf32>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c1 = arith.constant 1 : index
      %c = arith.cmpi slt, %t, %c1 : index
      scf.if %c {
        "gpu.barrier"() : () -> ()
      }
      "gpu.return"() : () -> ()
    }) {sym_name = "divergent", gpu.known_block_size = array<i32: 4, 1, 1>} : () -> ()
  }) : () -> ()
}
"""


def test_emulator_refuses_a_barrier_not_all_threads_reach():
    with pytest.raises(PassFailedException, match="kernel 'divergent'.*not reached by every thread"):
        _lower(DIVERGENT, ("emulate-gpu",))


class _Recorder:
    """A stand-in for the CUDA runtime: records launches, allocates with numpy."""

    def __init__(self):
        self.launches = []

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)

    def launch(self, kernel, grid, block, buffers, dynamic):
        self.launches.append((kernel, grid, block, [b.shape for b in buffers], dynamic))


def test_host_program_computes_grids_from_shapes():
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 37))
    y = b.relu(b.dense(x, np.ones((13, 37), np.float32)))
    from tensorkiln.driver.cuda import lower_to_gpu

    gpu_level, _ = lower_to_gpu(b.finish(y), opt_level=0)
    host = next(f for f in gpu_level.ops if isinstance(f, func.FuncOp))
    namespace = {}
    exec(print_host(host), namespace)
    for n in (1, 70, 200):
        rt = _Recorder()
        namespace["main"](rt, np.zeros((n, 37), np.float32), np.zeros((n, 13), np.float32), np.zeros((13, 37), np.float32))
        (dense, grid, block, shapes, dynamic), (relu, grid2, block2, _, _) = rt.launches
        assert dense == "dense_0" and block == (16, 16, 1)
        assert grid == (-(-n // 64), 1, 1)  # 64 x 64 output tiles: rows x, columns y
        assert shapes == [(n, 37), (13, 37), (n, 13)] and dynamic == ((0,), (), (0,))
        assert relu == "relu_0" and block2 == (256, 1, 1) and grid2 == (-(-n * 13 // 256), 1, 1)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="cupy is installed here")
def test_cuda_build_without_cupy_says_what_is_missing():
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.input("x", (3, 5))))
    from tensorkiln.runtime.cuda import CudaUnavailableError

    with pytest.raises(CudaUnavailableError, match="needs cupy"):
        tk.build(module, target="cuda -arch=sm_90")
    assert "extern \"C\" __global__ void" in tk.emit_source(module, target="cuda")


def test_bad_cuda_target_strings():
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.input("x", (3, 5))))
    with pytest.raises(ValueError, match="unknown option '-mcpu=x'"):
        tk.emit_source(module, target="cuda -mcpu=x")


SHORT_PHASE_FIRST = """
builtin.module {
  func.func @k(%A: memref<?xf32>, %B: memref<?xf32>, %C: memref<?x32xf32>) attributes {tk.kernel = "k"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %n = loop.dim %A, 0 : memref<?xf32>
    loop.for %r = %c0 to %n step %c1 blockIdx.x {
      loop.for %t = %c0 to %c1 step %c1 threadIdx.x {
        %x = loop.load %A[%r] : memref<?xf32>
        loop.store %x, %B[%r] : memref<?xf32>
      }
      loop.for %u = %c0 to %c32 step %c1 threadIdx.x {
        %y = loop.load %A[%r] : memref<?xf32>
        loop.store %y, %C[%r, %u] : memref<?x32xf32>
      }
    }
    func.return
  }
}
"""


def test_a_phase_shorter_than_the_block_is_guarded_whatever_the_order():
    """The block has 32 threads; the first phase has one iteration: only thread 0 runs it."""
    text = str(_lower(SHORT_PHASE_FIRST, ("loop-to-gpu",)))
    assert "gpu.known_block_size = array<i32: 32, 1, 1>" in text
    assert text.count("scf.if") == 1 and text.index("scf.if") < text.index("%B[")


WARPSUM = Path(__file__).parent / "filecheck" / "gpu" / "warp-shuffle.mlir"


@pytest.mark.parametrize("rows", [1, 5, 13])
def test_warp_shuffles_emulated(rows):
    """Row sums of 96 columns through two levels of xor-shuffle butterflies (3 warps, then
    the first warp alone under a guard): emulate-gpu runs the shuffles with their meaning."""
    module = _lower(WARPSUM.read_text(), ("loop-to-gpu", "emulate-gpu", "loop-to-llvm"))
    jit = jit_compile(module, CPUTarget.parse("llvm"))
    a = np.random.default_rng(rows).standard_normal((rows, 96)).astype(np.float32)
    b = np.full(rows, np.nan, np.float32)
    main = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(jit.address("main"))
    main(a.ctypes.data, rows, b.ctypes.data, rows)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def _shuffle_kernel(threads: str, inner: str, before: str = "") -> str:
    """A kernel with a shuffle inside the thread loop ``threads`` (its bound) and ``inner``
    (``"{}"``: the shuffle, possibly wrapped); ``before``: a phase before that loop."""
    shuffle = "%s = loop.shuffle_xor %x, 1, 32 : f32\nloop.store %s, %B[%t] : memref<?xf32>"
    return (
        "%c32 = arith.constant 32 : index\n%c64 = arith.constant 64 : index\n%c48 = arith.constant 48 : index\n"
        "loop.for %i = %c0 to %n step %c1 blockIdx.x {\n"
        f"  {before}\n"
        f"  loop.for %t = %c0 to {threads} step %c1 threadIdx.x name(\"t\") {{\n"
        "    %x = loop.load %A[%t] : memref<?xf32>\n"
        f"    {inner.format(shuffle)}\n"
        "  }\n"
        "}"
    )


@pytest.mark.parametrize(
    "body, message",
    [
        (_shuffle_kernel("%c48", "{}"), "shuffles in a block of 48 threads"),
        (  # a block of 64 threads (the first phase), 48 of them shuffling
            _shuffle_kernel("%c48", "{}", "loop.for %u = %c0 to %c64 step %c1 threadIdx.x { }"),
            "a shuffle inside loop 't' \\(threadIdx.x\\), whose guard would split a warp",
        ),
        (
            _shuffle_kernel("%c32", "%e = arith.index_cast %t : index to i64\n%k = arith.index_cast %e : i64 to index\n"
                            "loop.for %j = %c0 to %k step %c1 name(\"j\") {{ {} }}"),  # fmt: skip
            "a shuffle inside loop 'j', whose bounds depend on the thread",
        ),
    ],
)
def test_divergent_shuffles_fail_clearly(body, message):
    """Every lane of a warp must run a shuffle together: loop-to-gpu refuses shuffles that
    a partial warp would reach."""
    body = "%zero = arith.constant 0.0 : f32\n" + body
    text = KERNEL.format(body=body).replace("func.func @k", "func.func @main(%A: memref<?xf32>, %B: memref<?xf32>) {\n"
        "    func.call @k(%A, %B) : (memref<?xf32>, memref<?xf32>) -> ()\n    func.return\n  }\n  func.func @k")  # fmt: skip
    with pytest.raises(PassFailedException, match=message) as info:
        _lower(text, ("loop-to-gpu",))
    assert "kernel 'k'" in str(info.value)


def test_emulator_refuses_shuffles_in_a_partial_warp():
    text = DIVERGENT.replace("scf.if %c {\n        \"gpu.barrier\"() : () -> ()\n      }", "").replace(
        "%c = arith.cmpi slt, %t, %c1 : index",
        "%x = memref.load %A[%c1] : memref<4xf32>\n      %s = loop.shuffle_xor %x, 1, 2 : f32",
    )
    assert "loop.shuffle_xor" in text and "gpu.barrier" not in text
    with pytest.raises(PassFailedException, match="kernel 'divergent': shuffles in a block of 4 threads"):
        _lower(text, ("emulate-gpu",))


def test_emulator_refuses_shuffles_under_a_guard_that_splits_a_warp():
    """Lanes 16-31 skip the branch: lane 0's partner (16) never writes its value."""
    text = DIVERGENT.replace("array<i32: 4, 1, 1>", "array<i32: 32, 1, 1>").replace(
        '"gpu.barrier"() : () -> ()',
        "%x = memref.load %A[%c1] : memref<4xf32>\n        %s = loop.shuffle_xor %x, 16, 32 : f32",
    ).replace("%c1 = arith.constant 1 : index", "%c1 = arith.constant 1 : index\n      %c16 = arith.constant 16 : index").replace(
        "%c = arith.cmpi slt, %t, %c1 : index", "%c = arith.cmpi slt, %t, %c16 : index"
    )
    with pytest.raises(PassFailedException, match="kernel 'divergent': a shuffle inside scf.if whose condition may split a warp"):
        _lower(text, ("emulate-gpu",))

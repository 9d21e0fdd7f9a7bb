"""Loop kinds compiled for real: ``parallel`` (the thread pool), ``vectorized`` (explicit
SIMD code with a scalar remainder), ``unrolled``.

Hand-written loop-dialect kernels are JIT-compiled once per loop kind and called through
ctypes (a memref argument is a pointer followed by one int64 per dynamic dim). Each is
checked against numpy and against the same kernel with serial loops, on sizes that are
not multiples of the vector width, at 1, 2 and 3 threads.
"""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, StringAttr

from tensorkiln.api import parse_module
from tensorkiln.backends.llvm.jit import CPUTarget, JITModule, jit_compile
from tensorkiln.build import lower_to_llvm_dialect
from tensorkiln.lowering import parallel_to_llvm
from tensorkiln.runtime import threads

#: (LANES is the host's; 4 * LANES +- 1 and beyond cross the interleaved reduction
#: loop's bounds: 4 vectors per trip, then single vectors, then scalars)
SIZES = [1, 7, 15, 16, 17, 33, 63, 64, 65, 1000]
SHAPES_2D = [(1, 1), (3, 7), (5, 17), (2, 33), (3, 63), (2, 64), (4, 83), (3, 143), (17, 1000)]
THREADS = [1, 2, 3]

HOST = CPUTarget.parse("llvm")
HAS_AVX512 = "+avx512f" in HOST.features.split(",")
#: lanes of a vectorized loop whose widest element is 32 bits: 16 on AVX-512, 8 on AVX2
LANES = HOST.vector_bits // 32

_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "i1": np.bool_, "f16": np.float16}


class Kernel:
    """A compiled loop-dialect function, callable with numpy arrays (outputs written in place)."""

    def __init__(self, text: str, name: str = "k"):
        module = parse_module(text)
        function = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)
        self.arg_types = [a.type for a in function.body.block.args]
        lower_to_llvm_dialect(module)
        self.llvm_dialect = str(module)
        self.jit: JITModule = jit_compile(module, HOST)
        ctypes_args: list[type] = []
        for t in self.arg_types:
            assert isinstance(t, MemRefType)
            ctypes_args += [ctypes.c_void_p] + [ctypes.c_int64] * sum(d < 0 for d in t.get_shape())
        self._fn = ctypes.CFUNCTYPE(None, *ctypes_args)(self.jit.address(name))

    def __call__(self, *arrays: np.ndarray) -> None:
        args: list[int] = []
        for array, t in zip(arrays, self.arg_types, strict=True):
            assert array.flags.c_contiguous and array.ndim == len(t.get_shape())
            assert array.dtype == _DTYPES[str(t.element_type)], (array.dtype, t)
            args.append(array.ctypes.data)
            args += [array.shape[k] for k, d in enumerate(t.get_shape()) if d < 0]
        self._fn(*args)

    def assembly(self) -> str:
        return self.jit.assembly()


_KERNELS: dict[tuple[str, tuple[tuple[str, str], ...]], Kernel] = {}


def kernel(template: str, **kinds: str) -> Kernel:
    """``template`` with ``{outer}``/``{inner}``... replaced by loop kinds ("" = serial), compiled once."""
    key = (template, tuple(sorted(kinds.items())))
    if key not in _KERNELS:
        _KERNELS[key] = Kernel(template.format(**kinds))
    return _KERNELS[key]


# ---------------------------------------------------------------------------
# kernels

ELEMENTWISE = """
func.func @k(%A: memref<?xf32>, %B: memref<?xf32>, %C: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?xf32>
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %n step %c1 {kind} name("i") {{
    %a = loop.load %A[%i] : memref<?xf32>
    %b = loop.load %B[%i] : memref<?xf32>
    %p = arith.mulf %a, %b : f32
    %q = arith.subf %p, %half : f32
    %pos = arith.cmpf ogt, %q, %zero : f32
    %r = arith.select %pos, %q, %a : f32
    %m = arith.maximumf %r, %b : f32
    %ab = math.absf %m : f32
    %s = math.sqrt %ab : f32
    loop.store %s, %C[%i] : memref<?xf32>
  }}
  func.return
}}
"""


def elementwise_reference(a, b):
    q = a * b - np.float32(0.5)
    return np.sqrt(np.abs(np.maximum(np.where(q > 0, q, a), b)))


# C[i, j] = A[i, j] * s[i] + b[j]  (b broadcast along rows, s along columns; a scalar
# loaded before the loops is captured by the parallel loop)
BROADCAST = """
func.func @k(%A: memref<?x?xf32>, %b: memref<?xf32>, %s: memref<?xf32>, %t: memref<f32>, %C: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?x?xf32>
  %m = loop.dim %A, 1 : memref<?x?xf32>
  %shift = loop.load %t[] : memref<f32>
  loop.for %i = %c0 to %n step %c1 {outer} name("i") {{
    %si = loop.load %s[%i] : memref<?xf32>
    loop.for %j = %c0 to %m step %c1 {inner} name("j") {{
      %a = loop.load %A[%i, %j] : memref<?x?xf32>
      %bj = loop.load %b[%j] : memref<?xf32>
      %p = arith.mulf %a, %si : f32
      %q = arith.addf %p, %bj : f32
      %r = arith.addf %q, %shift : f32
      loop.store %r, %C[%i, %j] : memref<?x?xf32>
    }}
  }}
  func.return
}}
"""

# out[i] = sum_k A[i, k] (a local accumulator per row, te-to-loop's pattern);
# mx[i] = max_k A[i, k]; {flags} is the add's fast-math flags
ROW_REDUCE = """
func.func @k(%A: memref<?x?xf32>, %out: memref<?xf32>, %mx: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?x?xf32>
  %m = loop.dim %A, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %n step %c1 {outer} name("i") {{
    %acc = loop.alloc() {{scope = "local"}} : memref<f32>
    %big = loop.alloc() {{scope = "local"}} : memref<f32>
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    loop.store %zero, %acc[] : memref<f32>
    loop.store %ninf, %big[] : memref<f32>
    loop.for %k = %c0 to %m step %c1 {inner} name("k") {{
      %a = loop.load %A[%i, %k] : memref<?x?xf32>
      %old = loop.load %acc[] : memref<f32>
      %new = arith.addf %old, %a {flags} : f32
      loop.store %new, %acc[] : memref<f32>
      %oldm = loop.load %big[] : memref<f32>
      %newm = arith.maximumf %a, %oldm : f32
      loop.store %newm, %big[] : memref<f32>
    }}
    %r = loop.load %acc[] : memref<f32>
    loop.store %r, %out[%i] : memref<?xf32>
    %rm = loop.load %big[] : memref<f32>
    loop.store %rm, %mx[%i] : memref<?xf32>
  }}
  func.return
}}
"""

# B[j, i] = A[i, j] * 2: the inner loop reads with a stride (per-lane loads)
TRANSPOSE = """
func.func @k(%A: memref<?x?xf32>, %B: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %B, 0 : memref<?x?xf32>
  %m = loop.dim %B, 1 : memref<?x?xf32>
  %two = arith.constant 2.0 : f32
  loop.for %j = %c0 to %n step %c1 {outer} name("j") {{
    loop.for %i = %c0 to %m step %c1 {inner} name("i") {{
      %a = loop.load %A[%i, %j] : memref<?x?xf32>
      %d = arith.mulf %a, %two : f32
      loop.store %d, %B[%j, %i] : memref<?x?xf32>
    }}
  }}
  func.return
}}
"""

# split by 4 (i = 4*io + ii, ii unrolled) and a strided store: B[2*i] = A[i] + 1; an
# in-place update C[i] = C[i] * A[i]; integers: D[i] = i*3 + (A[i] as i32)
INDEXING = """
func.func @k(%A: memref<?xf32>, %B: memref<?xf32>, %C: memref<?xf32>, %D: memref<?xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = loop.dim %A, 0 : memref<?xf32>
  %one = arith.constant 1.0 : f32
  loop.for %i = %c0 to %n step %c1 {kind} name("i") {{
    %a = loop.load %A[%i] : memref<?xf32>
    %b = arith.addf %a, %one : f32
    %i2 = arith.muli %i, %c2 : index
    loop.store %b, %B[%i2] : memref<?xf32>
    %c = loop.load %C[%i] : memref<?xf32>
    %ca = arith.mulf %c, %a : f32
    loop.store %ca, %C[%i] : memref<?xf32>
    %i3 = arith.muli %i, %c3 : index
    %w = arith.index_cast %i3 : index to i32
    %t = arith.fptosi %a : f32 to i32
    %d = arith.addi %w, %t : i32
    loop.store %d, %D[%i] : memref<?xi32>
  }}
  func.return
}}
"""

# block divisions of the vectorized variable: j / 8 and j % 8 (a grouped convolution's
# input channel, nearest-neighbour upsampling), the loop starting at {start}
BLOCKS = """
func.func @k(%X: memref<?x?xf32>, %W: memref<8xf32>, %Y: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %start = arith.constant {start} : index
  %ten = arith.constant 10.0 : f32
  %n = loop.dim %Y, 0 : memref<?x?xf32>
  %m = loop.dim %Y, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %n step %c1 name("i") {{
    loop.for %j = %start to %m step %c1 {kind} name("j") {{
      %q = arith.floordivsi %j, %c8 : index
      %r = arith.remui %j, %c8 : index
      %x = loop.load %X[%i, %q] : memref<?x?xf32>
      %w = loop.load %W[%r] : memref<8xf32>
      %x10 = arith.mulf %x, %ten : f32
      %y = arith.addf %x10, %w : f32
      loop.store %y, %Y[%i, %j] : memref<?x?xf32>
    }}
  }}
  func.return
}}
"""


# an integer sum without reassoc issues, and a float sum in the serial order (no reassoc)
INT_AND_ORDERED = """
func.func @k(%A: memref<?xi32>, %F: memref<?xf32>, %s: memref<i32>, %f: memref<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?xi32>
  loop.for %i = %c0 to %n step %c1 {kind} name("i") {{
    %a = loop.load %A[%i] : memref<?xi32>
    %o = loop.load %s[] : memref<i32>
    %t = arith.addi %a, %o : i32
    loop.store %t, %s[] : memref<i32>
    %x = loop.load %F[%i] : memref<?xf32>
    %of = loop.load %f[] : memref<f32>
    %tf = arith.addf %of, %x : f32
    loop.store %tf, %f[] : memref<f32>
  }}
  func.return
}}
"""

# booleans (one byte each in memory) and f16: M[i] = A[i] > 0; H[i] = M[i] ? A[i] : -A[i] (as f16)
BOOLEANS = """
func.func @k(%A: memref<?xf32>, %M: memref<?xi1>, %H: memref<?xf16>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?xf32>
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %n step %c1 {kind} name("i") {{
    %a = loop.load %A[%i] : memref<?xf32>
    %pos = arith.cmpf ogt, %a, %zero : f32
    loop.store %pos, %M[%i] : memref<?xi1>
  }}
  loop.for %i = %c0 to %n step %c1 {kind} name("i2") {{
    %m = loop.load %M[%i] : memref<?xi1>
    %a = loop.load %A[%i] : memref<?xf32>
    %na = arith.negf %a : f32
    %r = arith.select %m, %a, %na : f32
    %h = arith.truncf %r : f32 to f16
    loop.store %h, %H[%i] : memref<?xf16>
  }}
  func.return
}}
"""

# 4 x 3 block with constant bounds, both loops {kind}; C = A + 10*k
SMALL = """
func.func @k(%A: memref<4x3xf32>, %C: memref<4x3xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {kind} name("i") {{
    loop.for %j = %c0 to %c3 step %c1 {kind} name("j") {{
      %a = loop.load %A[%i, %j] : memref<4x3xf32>
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %ten = arith.constant 10.0 : f32
      %t = arith.mulf %f, %ten : f32
      %r = arith.addf %a, %t : f32
      loop.store %r, %C[%i, %j] : memref<4x3xf32>
    }}
  }}
  func.return
}}
"""


# ---------------------------------------------------------------------------
# vectorized


@pytest.mark.parametrize("n", SIZES)
def test_vectorized_elementwise_exact(n, rng):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = {}
    for kind in ("", "vectorized"):
        c = np.full(n, np.nan, np.float32)
        kernel(ELEMENTWISE, kind=kind)(a, b, c)
        out[kind] = c
    np.testing.assert_array_equal(out["vectorized"], out[""])
    np.testing.assert_array_equal(out["vectorized"], elementwise_reference(a, b))


def test_vectorized_code_is_vector_code():
    k = kernel(ELEMENTWISE, kind="vectorized")
    assert f"vector<{LANES}xf32>" in k.llvm_dialect
    assert 'llvm.fcmp "ogt"' in k.llvm_dialect and f"vector<{LANES}xi1>" in k.llvm_dialect
    if HAS_AVX512:
        assert "zmm" in k.assembly()


@pytest.mark.parametrize("shape", SHAPES_2D)
@pytest.mark.parametrize("outer,inner", [("parallel", "vectorized"), ("", "vectorized"), ("parallel", "")])
def test_broadcast(shape, outer, inner, rng):
    A = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    s = rng.standard_normal(shape[0]).astype(np.float32)
    t = np.array(0.25, np.float32)
    expected = np.empty_like(A)
    kernel(BROADCAST, outer="", inner="")(A, b, s, t, expected)
    np.testing.assert_allclose(expected, A * s[:, None] + b + t, rtol=1e-6, atol=1e-6)
    k = kernel(BROADCAST, outer=outer, inner=inner)
    for n in THREADS:
        C = np.full_like(A, np.nan)
        with threads.num_threads(n):
            k(A, b, s, t, C)
        np.testing.assert_array_equal(C, expected)


@pytest.mark.parametrize("shape", SHAPES_2D)
def test_row_reduction_reassoc(shape, rng):
    A = rng.standard_normal(shape).astype(np.float32)
    k = kernel(ROW_REDUCE, outer="parallel", inner="vectorized", flags="fastmath<reassoc>")
    assert f"vector<{LANES}xf32>" in k.llvm_dialect and "llvm.intr.vector.reduce.fadd" in k.llvm_dialect
    results = []
    for n in THREADS:
        out, mx = np.empty(shape[0], np.float32), np.empty(shape[0], np.float32)
        with threads.num_threads(n):
            k(A, out, mx)
        np.testing.assert_allclose(out, A.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(mx, A.max(axis=1))
        results.append(out)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


@pytest.mark.parametrize("shape", SHAPES_2D)
def test_row_reduction_without_reassoc_keeps_the_serial_order(shape, rng):
    A = rng.standard_normal(shape).astype(np.float32)
    serial = kernel(ROW_REDUCE, outer="", inner="", flags="")
    vector = kernel(ROW_REDUCE, outer="parallel", inner="vectorized", flags="")
    expected, expected_max = np.empty(shape[0], np.float32), np.empty(shape[0], np.float32)
    serial(A, expected, expected_max)
    for n in THREADS:
        out, mx = np.empty_like(expected), np.empty_like(expected)
        with threads.num_threads(n):
            vector(A, out, mx)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(mx, expected_max)


@pytest.mark.parametrize("shape", SHAPES_2D)
def test_transpose_gathers_strided_loads(shape, rng):
    n, m = shape
    A = rng.standard_normal((m, n)).astype(np.float32)
    k = kernel(TRANSPOSE, outer="parallel", inner="vectorized")
    assert "llvm.insertelement" in k.llvm_dialect
    for t in THREADS:
        B = np.full((n, m), np.nan, np.float32)
        with threads.num_threads(t):
            k(A, B)
        np.testing.assert_array_equal(B, A.T * 2)


@pytest.mark.parametrize("start", [0, 3])
@pytest.mark.parametrize("shape", [(1, 1), (2, 7), (3, 8), (2, 17), (3, 64), (2, 83)])
def test_block_divisions(start, shape, rng):
    """With 8 lanes from a multiple of 8, ``j / 8`` is one broadcast load and ``j % 8``
    a contiguous one; from 3 the vectors cross blocks and gather. Same numbers."""
    from tensorkiln.lowering.vectorize import analyze

    n, m = shape
    X = rng.standard_normal((n, -(-m // 8))).astype(np.float32)
    W = rng.standard_normal(8).astype(np.float32)
    want = np.full((n, m), np.nan, np.float32)
    columns = np.arange(start, m)
    want[:, start:] = X[:, columns // 8] * np.float32(10) + W[columns % 8]
    Y = np.full((n, m), np.nan, np.float32)
    kernel(BLOCKS, start=start, kind="vectorized")(X, W, Y)
    np.testing.assert_array_equal(Y[:, start:], want[:, start:])

    module = parse_module(BLOCKS.format(start=start, kind="vectorized"))
    (j_loop,) = [op for op in module.walk() if getattr(op, "name", "") == "loop.for" and op.loop_name.data == "j"]
    for bits in (256, 512):
        plan = analyze(j_loop, bits)
        loads = [op for op in j_loop.body.block.ops if op.name == "loop.load"]
        accesses = [plan.access(load.indices) for load in loads]
        aligned = start % 8 == 0 and plan.lanes <= 8
        assert accesses == (["uniform", "contiguous"] if aligned else ["gather", "gather"]), (bits, accesses)


@pytest.mark.parametrize("n", SIZES)
def test_strided_store_in_place_update_and_integers(n, rng):
    A = (rng.standard_normal(n) * 100).astype(np.float32)
    C0 = rng.standard_normal(n).astype(np.float32)
    for kind in ("vectorized", "parallel"):
        B = np.full(2 * n, np.nan, np.float32)
        C = C0.copy()
        D = np.zeros(n, np.int32)
        kernel(INDEXING, kind=kind)(A, B, C, D)
        np.testing.assert_array_equal(B[::2], A + 1)
        assert np.isnan(B[1::2]).all()
        np.testing.assert_array_equal(C, C0 * A)
        np.testing.assert_array_equal(D, np.arange(n, dtype=np.int32) * 3 + A.astype(np.int32))


@pytest.mark.parametrize("n", SIZES)
def test_integer_and_ordered_float_reductions(n, rng):
    A = rng.integers(-1000, 1000, n).astype(np.int32)
    F = rng.standard_normal(n).astype(np.float32)
    results = {}
    for kind in ("", "vectorized"):
        s = np.array(7, np.int32)
        f = np.array(0.5, np.float32)
        kernel(INT_AND_ORDERED, kind=kind)(A, F, s, f)
        results[kind] = (int(s), f.copy())
    assert results["vectorized"][0] == results[""][0] == 7 + int(A.sum())
    np.testing.assert_array_equal(results["vectorized"][1], results[""][1])
    assert f"vector<{LANES}xi32>" in kernel(INT_AND_ORDERED, kind="vectorized").llvm_dialect


@pytest.mark.parametrize("n", SIZES)
def test_booleans_and_halves(n, rng):
    A = rng.standard_normal(n).astype(np.float32)
    k = kernel(BOOLEANS, kind="vectorized")
    assert f"vector<{LANES}xi8>" in k.llvm_dialect and f"vector<{LANES}xf16>" in k.llvm_dialect  # booleans are bytes
    M = np.zeros(n, np.bool_)
    H = np.zeros(n, np.float16)
    k(A, M, H)
    np.testing.assert_array_equal(M, A > 0)
    np.testing.assert_array_equal(H, np.abs(A).astype(np.float16))


# a butterfly in place on rows %ra and %rb of A (read from R: equal rows are allowed),
# each access at column i (or, with col = j, the second store one column on: not vectorizable)
ROWS = """
func.func @k(%A: memref<?x?xf32>, %R: memref<2xi64>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 1 : memref<?x?xf32>
  %m = arith.subi %n, %c1 : index
  %ra64 = loop.load %R[%c0] : memref<2xi64>
  %rb64 = loop.load %R[%c1] : memref<2xi64>
  %ra = arith.index_cast %ra64 : i64 to index
  %rb = arith.index_cast %rb64 : i64 to index
  loop.for %i = %c0 to %m step %c1 {kind} name("i") {{
    %a = loop.load %A[%ra, %i] : memref<?x?xf32>
    %b = loop.load %A[%rb, %i] : memref<?x?xf32>
    %s = arith.addf %a, %b : f32
    %d = arith.subf %a, %b : f32
    %j = arith.addi %i, %c1 : index
    loop.store %s, %A[%ra, %i] : memref<?x?xf32>
    loop.store %d, %A[%rb, %{col}] : memref<?x?xf32>
  }}
  func.return
}}
"""


@pytest.mark.parametrize("n", SIZES)
def test_stores_to_rows_apart_are_vectorized(n, rng):
    """Loads and stores of one buffer at different uniform rows, all at the lane's
    column: vector code, the serial loop's results also where both rows are one."""
    assert f"vector<{LANES}xf32>" in kernel(ROWS, kind="vectorized", col="i").llvm_dialect
    A0 = rng.standard_normal((3, n + 1)).astype(np.float32)
    for rows in ([0, 2], [2, 1], [1, 1]):
        got, serial = A0.copy(), A0.copy()
        kernel(ROWS, kind="vectorized", col="i")(got, np.array(rows, np.int64))
        kernel(ROWS, kind="", col="i")(serial, np.array(rows, np.int64))
        np.testing.assert_array_equal(got, serial)
        if rows[0] != rows[1]:
            a, b = A0[rows[0], :n], A0[rows[1], :n]
            np.testing.assert_array_equal(got[rows[0], :n], a + b)
            np.testing.assert_array_equal(got[rows[1], :n], a - b)


def test_stores_to_rows_at_other_columns_stay_serial(rng, caplog):
    """The second store one column on: lanes of one row could meet, so the loop is serial
    (and gives the serial loop's results)."""
    with caplog.at_level(logging.DEBUG, logger="tensorkiln.lowering"):
        k = kernel(ROWS, kind="vectorized", col="j")
    assert any("accesses it at other indices" in r.getMessage() for r in caplog.records)
    A0 = rng.standard_normal((2, 20)).astype(np.float32)
    got, serial = A0.copy(), A0.copy()
    k(got, np.array([1, 1], np.int64))
    kernel(ROWS, kind="", col="j")(serial, np.array([1, 1], np.int64))
    np.testing.assert_array_equal(got, serial)


def test_a_loop_that_cannot_be_vectorized_runs_serially(rng, caplog):
    # the vectorized loop holds a nested loop: lowered serially (and said so at debug level)
    with caplog.at_level(logging.DEBUG, logger="tensorkiln.lowering"):
        k = kernel(BROADCAST, outer="vectorized", inner="")
    assert any("nested" in r.getMessage() or "loop.for" in r.getMessage() for r in caplog.records)
    A = rng.standard_normal((5, 7)).astype(np.float32)
    b, s = rng.standard_normal(7).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    t = np.array(1.0, np.float32)
    C, expected = np.empty_like(A), np.empty_like(A)
    k(A, b, s, t, C)
    kernel(BROADCAST, outer="", inner="")(A, b, s, t, expected)
    np.testing.assert_array_equal(C, expected)


# ---------------------------------------------------------------------------
# unrolled


def test_unrolled_small_loops_are_straight_line_code(rng):
    A = rng.standard_normal((4, 3)).astype(np.float32)
    k = kernel(SMALL, kind="unrolled")
    assert "llvm.cond_br" not in k.llvm_dialect  # 12 copies of the body, no loop left
    C = np.empty_like(A)
    k(A, C)
    np.testing.assert_array_equal(C, A + 10 * np.arange(4, dtype=np.float32)[:, None])


@pytest.mark.parametrize("kind", ["vectorized", "parallel"])
def test_small_constant_loops(kind, rng):
    A = rng.standard_normal((4, 3)).astype(np.float32)
    k = kernel(SMALL, kind=kind)
    if kind == "vectorized":  # the inner loop: 3 iterations, 2 lanes + a remainder of 1
        assert "vector<2xf32>" in k.llvm_dialect
    C = np.empty_like(A)
    k(A, C)
    np.testing.assert_array_equal(C, A + 10 * np.arange(4, dtype=np.float32)[:, None])


def test_unrolled_with_dynamic_bounds_is_a_serial_loop(rng):
    a, b = rng.standard_normal(33).astype(np.float32), rng.standard_normal(33).astype(np.float32)
    k = kernel(ELEMENTWISE, kind="unrolled")
    assert "llvm.cond_br" in k.llvm_dialect
    c = np.empty_like(a)
    k(a, b, c)
    np.testing.assert_array_equal(c, elementwise_reference(a, b))


# ---------------------------------------------------------------------------
# parallel


def test_parallel_outlines_the_body_and_calls_the_thread_pool():
    k = kernel(BROADCAST, outer="parallel", inner="vectorized")
    text = k.llvm_dialect
    assert "llvm.call @tk_parallel_for" in text and "GOMP" not in text
    assert "llvm.func @k_parallel0(%data: !llvm.ptr, %begin: i64, %end: i64)" in text
    assert "llvm.func @k_parallel0_body(" in text
    assert f"@{parallel_to_llvm.NUM_THREADS_SYMBOL}" in text


def test_thread_count_is_read_at_each_launch(rng):
    # more threads than rows, fewer, one: every row once
    k = kernel(BROADCAST, outer="parallel", inner="")
    A = rng.standard_normal((3, 5)).astype(np.float32)
    b, s = rng.standard_normal(5).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    t = np.array(0.0, np.float32)
    expected = np.empty_like(A)
    kernel(BROADCAST, outer="", inner="")(A, b, s, t, expected)
    for n in (1, 2, 3, 4, 7, 0):
        C = np.full_like(A, np.nan)
        with threads.num_threads(n):
            k(A, b, s, t, C)
        np.testing.assert_array_equal(C, expected)


def test_thread_count_api():
    assert threads.NUM_THREADS_SYMBOL == parallel_to_llvm.NUM_THREADS_SYMBOL
    before = threads.get_num_threads()
    with threads.num_threads(3):
        assert threads.get_num_threads() == 3
    assert threads.get_num_threads() == before
    assert threads.default_num_threads() >= 1
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match="thread count"):
            threads.set_num_threads(bad)


def test_thread_count_from_the_environment():
    code = "from tensorkiln.runtime import threads; print(threads.get_num_threads())"
    env = dict(os.environ, TK_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"
    env["TK_NUM_THREADS"] = "many"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert "TK_NUM_THREADS" in out.stderr and int(out.stdout) >= 1


def test_target_vector_width():
    assert CPUTarget.parse("llvm -mcpu=x86-64 -mattr=+avx2").vector_bits == 256
    assert CPUTarget.parse("llvm -mcpu=x86-64").vector_bits == 128
    if HAS_AVX512:
        assert HOST.vector_bits == 512


# ---------------------------------------------------------------------------
# te-to-loop's kernels with their loops re-annotated


def _annotate(function: func.FuncOp) -> None:
    """Outermost loops parallel, innermost loops vectorized (a lone loop: vectorized)."""
    from tensorkiln.dialects import loop

    for op in function.walk():
        if not isinstance(op, loop.ForOp):
            continue
        innermost = not any(isinstance(o, loop.ForOp) for o in op.body.walk())
        outermost = not isinstance(op.parent_op(), loop.ForOp)
        if innermost:
            op.kind = StringAttr("vectorized")
        elif outermost:
            op.kind = StringAttr("parallel")


def _build_annotated(module):
    from tensorkiln.build import jit_loops, lower_to_loops
    from tensorkiln.dialects.functions import find_function
    from tensorkiln.dialects.functions import signature_of

    loops = lower_to_loops(module)
    kinds = set()
    for f in loops.ops:
        if isinstance(f, func.FuncOp) and "tk.kernel" in f.attributes:
            _annotate(f)
            kinds |= {o.kind.data for o in f.walk() if hasattr(o, "kind") and isinstance(o.kind, StringAttr)}
    assert {"parallel", "vectorized"} <= kinds
    signature = signature_of(find_function(module, "main"))
    return jit_loops(loops, signature)


@pytest.mark.parametrize("model", ["mlp", "small_cnn"])
def test_te_to_loop_kernels_parallel_and_vectorized(model):
    import tensorkiln as tk
    from tensorkiln.examples import models

    module, inputs = getattr(models, model)(seed=3)
    expected = tk.build(module, opt_level=0)(*inputs)
    lib = _build_annotated(module)
    results = []
    for n in THREADS:
        with threads.num_threads(n):
            results.append(lib(*inputs))
        np.testing.assert_allclose(results[-1], expected, rtol=1e-5, atol=1e-5)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


# the shape schedule primitives give: x split by {f} (the inner trip count min(f, n - xo)),
# the inner loop {inner}; B[x] = A[x] * 3 - x
SPLIT = """
func.func @k(%A: memref<?xf32>, %B: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cf = arith.constant {f} : index
  %three = arith.constant 3.0 : f32
  %n = loop.dim %A, 0 : memref<?xf32>
  loop.for %xo = %c0 to %n step %cf {outer} name("x.outer") {{
    %rest = arith.subi %n, %xo : index
    %m = arith.minsi %cf, %rest : index
    loop.for %xi = %c0 to %m step %c1 {inner} name("x.inner") {{
      %x = arith.addi %xo, %xi : index
      %a = loop.load %A[%x] : memref<?xf32>
      %p = arith.mulf %a, %three : f32
      %xv = arith.index_cast %x : index to i64
      %xf = arith.sitofp %xv : i64 to f32
      %r = arith.subf %p, %xf : f32
      loop.store %r, %B[%x] : memref<?xf32>
    }}
  }}
  func.return
}}
"""


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(
    "f,outer,inner",
    [(4, "", "unrolled"), (4, "parallel", "unrolled"), (32, "parallel", "vectorized"), (5, "", "vectorized")],
)
def test_split_loops(n, f, outer, inner, rng):
    A = rng.standard_normal(n).astype(np.float32)
    k = kernel(SPLIT, f=f, outer=outer, inner=inner)
    if inner == "unrolled":
        assert k.llvm_dialect.count("llvm.fmul") == f  # guarded copies, no inner loop
    if (f, inner) == (5, "vectorized"):
        assert "vector<4xf32>" in k.llvm_dialect  # at most 5 iterations: 4 lanes
    for t in THREADS:
        B = np.full(n, np.nan, np.float32)
        with threads.num_threads(t):
            k(A, B)
        np.testing.assert_array_equal(B, A * 3 - np.arange(n, dtype=np.float32))

"""The ``blas`` backend runs its BLAS on tensorkiln's thread count (#40): the glue sets
the library's count before its calls whenever tensorkiln's changed, so ``set_num_threads``
(or the default's back-off on a busy machine) reaches ``sgemm`` too."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.byoc import external_modules
from tensorkiln.byoc.backends import blas
from tensorkiln.byoc.backends.blas_glue import SET_THREADS_SYMBOL, glue_ir
from tensorkiln.byoc.gemm_program import GemmProgram
from tensorkiln.runtime.threads import num_threads

pytestmark = pytest.mark.skipif(blas.unavailable() is not None, reason=str(blas.unavailable()))


def _offloaded(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (64, 96))
    w = rng.standard_normal((80, 96)).astype(np.float32)
    module = b.finish(b.relu(b.dense(x, w)))
    return module, tk.byoc.partition_for(module, "blas")


def test_the_blas_follows_tensorkilns_thread_count(rng):
    from tensorkiln.byoc.backends.blas_threads import blas_num_threads, blas_thread_functions

    if blas_thread_functions() is None:
        pytest.skip("this BLAS has no thread-count setter found here")
    module, part = _offloaded(rng)
    lib = tk.build(part)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    want = tk.build(module)(x)
    for n in (1, 2, 3, 1):
        with num_threads(n):
            np.testing.assert_allclose(lib(x), want, rtol=2e-5, atol=1e-5)
            assert blas_num_threads() == n
    (ext,) = external_modules(part)
    assert "tensorkiln's count" in ext.describe()["threads"]


def test_glue_sizes_threads_only_when_asked():
    program = GemmProgram()
    assert SET_THREADS_SYMBOL not in glue_ir(program, {})
    sized = glue_ir(program, {}, size_threads=True)
    assert f"call void @{SET_THREADS_SYMBOL}(i32 %threads.want)" in sized and "@tk_num_threads" in sized

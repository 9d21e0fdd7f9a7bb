"""Float ops lowered as LLVM vector intrinsics in vectorized loops (lowering/vectorize.py):
the vector code gives the serial code's results bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk


@pytest.mark.parametrize("shape", [(7,), (3, 37), (2, 5, 129)])
def test_round_half_to_even_is_a_vector_intrinsic(shape, rng, tmp_path):
    """graph.round (math.roundeven) in a vectorized loop: one ``llvm.roundeven`` on a
    vector (not one call per lane), halves rounded to even as numpy does."""
    b = tk.GraphBuilder()
    module = b.finish(b.round(b.input("x", shape)))
    with tk.PassContext(dump_ir=tmp_path):
        lib = tk.build(module)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.flat[: min(x.size, 6)] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5][: min(x.size, 6)]
    np.testing.assert_array_equal(lib(x), np.round(x))
    (llvm_dialect,) = tmp_path.glob("*loop-to-llvm*.mlir")
    text = llvm_dialect.read_text()
    if "vectorized" in next(tmp_path.glob("*default-schedule*.mlir")).read_text():
        assert '"llvm.roundeven.v' in text

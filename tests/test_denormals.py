"""GEMM and convolution kernels run with denormals flushed to zero (lowering/denormals.py,
the ``flush_denormals`` schedule primitive): their results on denormal operands stay
right to within the denormal range, the caller's floating-point mode is restored after
every call (in the calling thread and for the numpy code after it), and the other
kernels keep denormals exact."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.runtime.threads import set_num_threads

x86_only = pytest.mark.skipif(
    not llvm.get_process_triple().startswith("x86_64"), reason="the flush mode is the x86 MXCSR's"
)

TINY = np.float32(3.7e-44)  # a softmax weight of a -100 mask (exp(-100) in float32)


def _attention_like(rng, batch=5, rows=23, inner=31, columns=19):
    """attn @ v with about half of attn denormal."""
    attn = rng.random((batch, rows, inner)).astype(np.float32)
    attn[rng.random(attn.shape) < 0.5] = TINY
    return attn, rng.standard_normal((batch, inner, columns)).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_matmul_on_denormals_is_right_and_restores_the_mode(rng, threads):
    attn, v = _attention_like(rng)
    b = tk.GraphBuilder()
    module = b.finish(b.batch_matmul(b.input("a", attn.shape), b.input("v", v.shape)))
    lib = tk.build(module)
    set_num_threads(threads)
    try:
        got = lib(attn, v)
    finally:
        set_num_threads(None)
    want = attn.astype(np.float64) @ v.astype(np.float64)
    # a flushed operand changes a product by less than 1e-43 * |v|: float32 rounding is all
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # the Python thread's mode is back: numpy still makes denormals
    assert np.float32(1e-40) * np.float32(1.0) == np.float32(1e-40)


def test_dense_and_conv_on_denormal_weights(rng):
    """Weights that decayed into the denormal range (trained models have them)."""
    w = rng.standard_normal((24, 40)).astype(np.float32)
    w[:, ::3] = TINY
    k = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    k[::2] = TINY
    b = tk.GraphBuilder()
    x = b.input("x", (9, 40))
    image = b.input("image", (2, 3, 11, 13))
    module = b.finish(b.dense(x, w), b.conv2d(image, k, padding=1))
    xs = rng.standard_normal((9, 40)).astype(np.float32)
    images = rng.standard_normal((2, 3, 11, 13)).astype(np.float32)
    got_dense, got_conv = tk.build(module)(xs, images)
    want_dense, want_conv = tk.create_executor("interpreter", module).evaluate()(xs, images)
    np.testing.assert_allclose(got_dense, want_dense, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got_conv, want_conv, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_other_kernels_keep_denormals_exact(rng, threads):
    """A GEMM with an exp epilogue (one fused kernel), and an exp kernel of its own run
    after a flushing GEMM: their denormal results are numpy's."""
    w = (rng.standard_normal((64, 48)) * 0.01).astype(np.float32)
    b = tk.GraphBuilder()
    h = b.dense(b.input("x", (40, 48)), w)
    module = b.finish(b.exp(b.sub(h, 100.0)), b.exp(b.sub(b.input("y", (40, 64)), 100.0)))  # exp(-100 + small)
    x = rng.standard_normal((40, 48)).astype(np.float32)
    y = (rng.standard_normal((40, 64)) * 0.1).astype(np.float32)
    lib = tk.build(module)
    set_num_threads(threads)
    try:
        fused, alone = lib(x, y)
    finally:
        set_num_threads(None)
    tiny = np.finfo(np.float32)
    for got, want in ((fused, np.exp((x @ w.T).astype(np.float32) - np.float32(100.0))), (alone, np.exp(y - np.float32(100.0)))):
        assert (got > 0).all() and (got < tiny.tiny).all()
        np.testing.assert_allclose(got, want, rtol=0, atol=2 * tiny.smallest_subnormal)


@x86_only
def test_only_gemm_kernels_set_the_mode():
    b = tk.GraphBuilder()
    w = np.ones((128, 96), np.float32)
    x = b.input("x", (64, 96))
    module = b.finish(b.relu(b.dense(x, w)), b.sigmoid(b.dense(x, w * 2)), b.exp(b.input("y", (64, 96))))
    functions = tk.emit_source(module, target="llvm").split("\ndefine ")

    def function(name):
        (found,) = [f for f in functions if f.startswith(f'void @"{name}"')]
        return found

    assert "llvm.x86.sse.ldmxcsr" in function("dense_relu_0") and "llvm.x86.sse.stmxcsr" in function("dense_relu_0")
    assert "mxcsr" not in function("dense_sigmoid_0")  # sigmoid(-100) is a denormal to keep
    assert "mxcsr" not in function("exp_0")
    # the piece function the pool's threads run sets and restores it too
    threads = [f for f in functions if f.startswith('void @"dense_relu_0_parallel') and not f.split("(")[0].endswith('_body"')]
    assert threads and all(f.count("call void @\"llvm.x86.sse.ldmxcsr\"") == 2 for f in threads)


def test_threads_made_during_a_flushing_kernel_keep_the_callers_mode(rng):
    """The thread pool makes new worker threads at a launch with more threads than before,
    and a new thread inherits the launching thread's mode: a flushing kernel launches in the
    caller's mode, so the new workers do not flush the kernels that run on them later."""
    w = rng.standard_normal((256, 256)).astype(np.float32)
    b = tk.GraphBuilder()
    dense = tk.build(b.finish(b.dense(b.input("x", (64, 256)), w)))
    b = tk.GraphBuilder()
    exp = tk.build(b.finish(b.exp(b.input("y", (300, 512)))))
    y = (rng.standard_normal((300, 512)) * 0.1 - 100).astype(np.float32)
    set_num_threads(7)  # more threads than this process has made so far
    try:
        dense(rng.standard_normal((64, 256)).astype(np.float32))
        got = exp(y)
    finally:
        set_num_threads(None)
    np.testing.assert_allclose(got, np.exp(y), rtol=0, atol=2 * np.finfo(np.float32).smallest_subnormal)
    assert (got > 0).all()

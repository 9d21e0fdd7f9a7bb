"""Row fusion: softmax, log_softmax, layer norm and RMS-norm-like graphs are ONE kernel
per row (their row statistics computed once per row inside it), on odd shapes, rows of
one element and of 4097, a symbolic batch; a softmax along another axis keeps separate
kernels. On the CPU a row kernel computes softmax's exp once per element, stored in the
output row (te-to-loop's stash). Numbers against numpy (and torch for the imported layer norm)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.driver.pipelines import TO_LOOPS
from tensorkiln.driver.pipelines import optimize_graph
from tensorkiln.passes.pipeline import PassContext, run_pipeline
from tensorkiln.schedule.schedule import kernels

SHAPES = [(3, 1000), (7, 77, 129), (1, 4097), (5, 1), (2, 3)]


def scheduled_kernels(module) -> dict[str, str | None]:
    """Kernel name -> CPU strategy, after the O2 graph pipeline and the default schedules."""
    work = module.clone()
    ctx = PassContext(opt_level=2, dump_ir=False)
    optimize_graph(work, ctx)
    run_pipeline(work, TO_LOOPS + ("default-schedule{vector_bits=512}",), ctx)
    return {
        k.sym_name.data: (k.attributes["tk.strategy"].data if "tk.strategy" in k.attributes else None)
        for k in kernels(work)
    }


def softmax_ref(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_one_kernel_per_row(rng, op, shape):
    b = tk.GraphBuilder()
    module = b.finish(getattr(b, op)(b.input("x", shape), -1))
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    want = softmax_ref(x.astype(np.float64), -1)
    want = np.log(want) if op == "log_softmax" else want
    np.testing.assert_allclose(tk.build(module)(x), want, rtol=2e-5, atol=2e-6)
    chosen = scheduled_kernels(module)
    if shape[-1] > 1:
        assert chosen == {f"{op}_0": "row_stages"}
    else:  # a row of one element: nothing to fuse along (max, exp for softmax, sum, normalization)
        assert len(chosen) == (4 if op == "softmax" else 3)


def _exp_count(module, to_loops) -> int:
    from xdsl.dialects import math

    work = module.clone()
    ctx = PassContext(opt_level=2, dump_ir=False)
    optimize_graph(work, ctx)
    run_pipeline(work, to_loops, ctx)
    return sum(isinstance(op, math.ExpOp) for k in kernels(work) for op in k.walk())


def test_the_cpu_row_kernel_computes_each_exp_once():
    b = tk.GraphBuilder()
    x = b.input("x", (9, 301))
    module = b.finish(b.softmax(b.add(b.mul(x, b.constant(np.float32(0.125))), b.input("mask", (1, 301))), -1))
    assert _exp_count(module, TO_LOOPS) == 1  # stored in the output row, read by the sum and the output
    gpu_to_loops = tuple(p.split("{")[0] for p in TO_LOOPS)  # the GPU's te-to-loop: no stash
    assert _exp_count(module, gpu_to_loops) == 2


@pytest.mark.parametrize("shape", [(3, 1, 12), (2, 1, 1, 7), (4, 5, 1, 9)], ids=str)
def test_stashed_row_with_unit_dims_between(rng, shape):
    """Rows whose stages sit above a dim of size 1 (the element loop then recomputes the
    row sum): the sum must read exp values the output has not yet overwritten."""
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    module = b.finish(b.softmax(b.mul(x, x), -1))
    data = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(tk.build(module)(data), softmax_ref(data * data, -1), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("shape, axis", [((7, 77, 129), 1), ((9, 13), 0)], ids=str)
def test_softmax_along_a_leading_axis_keeps_separate_kernels(rng, shape, axis):
    """Max, exp (once per element, stored), sum and normalization: four kernels."""
    b = tk.GraphBuilder()
    module = b.finish(b.softmax(b.input("x", shape), axis))
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(tk.build(module)(x), softmax_ref(x, axis), rtol=2e-5, atol=2e-6)
    assert sorted(scheduled_kernels(module)) == ["softmax_0", "softmax_exp_0", "softmax_max_0", "softmax_sum_0"]


def layer_norm_module(shape, axes: int, gamma, beta, eps=1e-5):
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    reduced = list(range(len(shape) - axes, len(shape)))
    centred = b.sub(x, b.reduce_mean(x, reduced, keepdims=True))
    var = b.reduce_mean(b.mul(centred, centred), reduced, keepdims=True)
    y = b.mul(centred, b.rsqrt(b.add(var, np.array(eps, np.float32))))
    return b.finish(b.add(b.mul(y, gamma), beta))


@pytest.mark.parametrize("shape, axes", [((3, 1000), 1), ((7, 77, 129), 1), ((7, 77, 129), 2), ((1, 4097), 1)], ids=str)
def test_layer_norm_one_kernel(rng, shape, axes):
    normalized = shape[len(shape) - axes :]
    gamma = rng.standard_normal(normalized).astype(np.float32)
    beta = rng.standard_normal(normalized).astype(np.float32)
    module = layer_norm_module(shape, axes, gamma, beta)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    reduced = tuple(range(len(shape) - axes, len(shape)))
    xd = x.astype(np.float64)
    c = xd - xd.mean(reduced, keepdims=True)
    want = c / np.sqrt((c * c).mean(reduced, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(tk.build(module)(x), want, rtol=1e-4, atol=1e-4)
    assert list(scheduled_kernels(module).values()) == ["row_stages"]


def test_rms_norm_like_graph(rng):
    """x * rsqrt(mean(x * x) + eps) * w, as LLaMA-style models write it."""
    shape = (7, 77, 129)
    w = rng.standard_normal(129).astype(np.float32)
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    ms = b.reduce_mean(b.mul(x, x), [2], keepdims=True)
    module = b.finish(b.mul(b.mul(x, b.rsqrt(b.add(ms, np.array(1e-6, np.float32)))), w))
    data = rng.standard_normal(shape).astype(np.float32)
    want = data / np.sqrt((data.astype(np.float64) ** 2).mean(2, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(tk.build(module)(data), want, rtol=1e-4, atol=1e-5)
    assert list(scheduled_kernels(module).values()) == ["row_stages"]


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_symbolic_batch(rng, op):
    cols = 129
    gamma = rng.standard_normal(cols).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    if op == "softmax":
        b = tk.GraphBuilder()
        module = b.finish(b.softmax(b.input("x", ("n", cols)), -1))
    else:
        module = layer_norm_module(("n", cols), 1, gamma, beta)
    assert len(scheduled_kernels(module)) == 1
    lib = tk.build(module)
    for n in (1, 5, 67):
        x = rng.standard_normal((n, cols)).astype(np.float32)
        if op == "softmax":
            want = softmax_ref(x, -1)
        else:
            c = x - x.mean(1, keepdims=True)
            want = c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5) * gamma + beta
        np.testing.assert_allclose(lib(x), want, rtol=1e-4, atol=1e-5)


def test_torch_layer_norm_and_softmax_are_one_kernel_each(rng):
    torch = pytest.importorskip("torch")
    from tensorkiln.frontends.torch import from_exported_program

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(129)

        def forward(self, x):
            return torch.softmax(self.ln(x) * 2.0, dim=-1)

    torch.manual_seed(0)
    model = Model().eval()
    with torch.no_grad():
        model.ln.weight.normal_()
        model.ln.bias.normal_()
    x = torch.randn(7, 77, 129)
    module = from_exported_program(torch.export.export(model, (x,)))
    chosen = scheduled_kernels(module)
    assert list(chosen.values()) == ["row_stages", "row_stages"], chosen
    with torch.no_grad():
        np.testing.assert_allclose(tk.build(module)(x.numpy()), model(x).numpy(), rtol=1e-4, atol=1e-6)

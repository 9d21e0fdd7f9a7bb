"""Fractional max pooling (frontends/torch/ops/fractional_pool.py) against torch eager:
values and indices to the bit for given samples (2-d and 3-d, odd sizes, an output of
one along an axis, an unbatched input, a NaN, ties, float64), and a valid pooling when
the samples are drawn inside the model, with a symbolic batch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402


def _compile(model, args, **kwargs):
    return tk.build(from_exported_program(torch.export.export(model, args, **kwargs)))


class Given(torch.nn.Module):
    def forward(self, x, s2, x3, s3, xu):
        a = F.fractional_max_pool2d(x, (2, 3), output_size=(5, 4), return_indices=True, _random_samples=s2)
        b = F.fractional_max_pool3d(x3, (2, 3, 2), output_ratio=(0.5, 0.4, 0.7), return_indices=True, _random_samples=s3)
        c = F.fractional_max_pool2d(xu, 3, output_size=(1, 4), return_indices=True, _random_samples=s2[:1])
        return (*a, *b, *c)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool_with_given_samples_is_torchs(rng, dtype):
    def draw(*shape):
        return torch.from_numpy(rng.standard_normal(shape)).to(dtype)

    def inputs():
        x = draw(2, 3, 11, 9)
        x[0, 1, 4, 2:5] = float("nan")  # a window's index: its last NaN
        x[1, 2, :, :] = x[1, 2, 0, 0]  # ties: the first maximum
        samples = [torch.from_numpy(rng.random(s)).to(dtype) for s in ((2, 3, 2), (2, 3, 3))]
        return x, samples[0], draw(2, 3, 7, 10, 8), samples[1], draw(3, 6, 10)

    lib = _compile(Given(), inputs())
    for _ in range(2):
        args = inputs()
        got, want = lib(*(a.numpy() for a in args)), Given()(*args)
        assert len(got) == len(want) == 6
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape) and g.dtype == w.numpy().dtype
            np.testing.assert_array_equal(g, w.numpy())


def test_fractional_max_pool_drawing_its_samples_pools_windows_of_the_input(rng):
    """Samples drawn in the model (our generator, not torch's): each output is its plane's
    value at the index returned, and the corner windows are where every draw puts them."""
    pool = torch.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.6), return_indices=True)
    x = torch.from_numpy(rng.standard_normal((2, 4, 16, 15)).astype(np.float32))
    lib = _compile(pool, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    x = rng.standard_normal((3, 4, 16, 15)).astype(np.float32)
    values, indices = lib(x)
    assert values.shape == indices.shape == (3, 4, 8, 9) and indices.dtype == np.int64
    planes = x.reshape(3, 4, -1)
    np.testing.assert_array_equal(np.take_along_axis(planes, indices.reshape(3, 4, -1), 2).reshape(values.shape), values)
    assert (indices >= 0).all() and (indices < 16 * 15).all()
    # whatever the samples, the first window starts at 0 and the last ends at the edge
    np.testing.assert_array_equal(values[:, :, 0, 0], x[:, :, :3, :3].max(axis=(2, 3)))
    np.testing.assert_array_equal(values[:, :, -1, -1], x[:, :, -3:, -3:].max(axis=(2, 3)))


def test_the_taps_share_their_window_starts():
    """The pooling is one fused kernel reading the samples once per axis and the input
    once per tap: te-to-loop numbers the index arithmetic it emits, so the nine taps'
    reads of the window starts (at equal, separately computed indices) are one element.
    Without that, each tap recomputed the starts' chain and a 3 x 3 pooling took minutes
    to build (a kernel of 12k ops)."""
    from collections import Counter

    from tensorkiln.driver.compilable import compilable_copy
    from tensorkiln.driver.pipelines import TO_LOOPS
    from tensorkiln.dialects import loop
    from tensorkiln.driver.pipelines import optimize_graph
    from tensorkiln.passes.pipeline import PassContext, run_pipeline
    from tensorkiln.schedule import kernels

    class Pool(torch.nn.Module):
        def forward(self, x, s):
            return F.fractional_max_pool2d(x, 3, output_size=(4, 4), _random_samples=s)

    module = from_exported_program(torch.export.export(Pool(), (torch.randn(1, 3, 9, 9), torch.rand(1, 3, 2))))
    work = compilable_copy(module)
    optimize_graph(work, PassContext(), layout="NHWC")
    run_pipeline(work, TO_LOOPS, PassContext())
    (kernel,) = kernels(work)
    arguments = list(kernel.body.block.args)
    loads = Counter(arguments.index(op.buffer) for op in kernel.walk() if isinstance(op, loop.LoadOp) and op.buffer in arguments)
    shapes = {k: tuple(a.type.get_shape()) for k, a in enumerate(arguments)}
    assert {shapes[k]: n for k, n in loads.items() if shapes[k] in ((1, 3, 2), (1, 3, 9, 9))} == {(1, 3, 2): 2, (1, 3, 9, 9): 9}
    assert sum(1 for _ in kernel.walk()) < 400

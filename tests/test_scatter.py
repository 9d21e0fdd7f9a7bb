"""graph.scatter (the inverse of gather) and the torch ops that become it: index_put
(``x[idx] = v``, ``x[idx] += v``, masked assignment), scatter, scatter_add,
scatter_reduce, index_add/index_copy/index_fill. Compiled results are compared with a
plain loop written here (not the op's own numpy reference), with the interpreter, and
with torch eager, on fresh random inputs with duplicate and negative indices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")

from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402


def scatter_loop(x, indices, updates, axis, mode, include_self=True):
    """The definition, one update at a time in row-major order."""
    out = x.copy()
    touched = set()
    for j in itertools.product(*(range(n) for n in indices.shape)):
        k = int(indices[j])
        k = k + x.shape[axis] if k < 0 else k
        target = tuple(k if d == axis else c for d, c in enumerate(j))
        value = updates[j]
        if mode == "update" or (not include_self and target not in touched):
            out[target] = value
        elif mode == "add":
            out[target] += value
        elif mode == "mul":
            out[target] *= value
        else:
            out[target] = (max if mode == "max" else min)(out[target], value)
        touched.add(target)
    return out


def _scatter_module(x_shape, index_shape, update_shape, axis, mode, include_self, dtype="float32"):
    b = tk.GraphBuilder()
    x, i, u = b.input("x", x_shape, dtype), b.input("i", index_shape, "int64"), b.input("u", update_shape, dtype)
    return b.finish(b.scatter(x, i, u, axis=axis, mode=mode, include_self=include_self))


@pytest.mark.parametrize("mode", ["update", "add", "mul", "max", "min"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scatter_modes_and_axes(rng, mode, include_self, axis):
    """Indices cover part of the input on the other axes (elements beyond keep their
    value), repeat (several updates land on one element), and are negative."""
    x_shape, index_shape, update_shape = (5, 6, 7), [4, 5, 6], (5, 6, 7)
    index_shape[axis] = 9
    update_shape = tuple(max(a, b) for a, b in zip(update_shape, index_shape))
    module = _scatter_module(x_shape, tuple(index_shape), update_shape, axis, mode, include_self)
    lib = tk.build(module)
    reference = tk.create_executor("interpreter", module).evaluate()
    for _ in range(2):
        x = rng.standard_normal(x_shape).astype(np.float32)
        n = x_shape[axis]
        i = rng.integers(-n, n, index_shape)
        u = rng.standard_normal(update_shape).astype(np.float32)
        expected = scatter_loop(x, i, u, axis, mode, include_self)
        got = lib(x, i, u)
        assert got.shape == x.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(reference(x, i, u), expected, rtol=1e-6, atol=1e-6)


def test_integer_scatter_add_is_exact(rng):
    module = _scatter_module((4, 9), (4, 13), (4, 13), 1, "add", True, "int32")
    x, u = rng.integers(-1000, 1000, (4, 9)).astype(np.int32), rng.integers(-1000, 1000, (4, 13)).astype(np.int32)
    i = rng.integers(0, 9, (4, 13))
    got = tk.build(module)(x, i, u)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, scatter_loop(x, i, u, 1, "add"))


def test_scatter_with_a_symbolic_batch(rng):
    module = _scatter_module(("n", 7), ("n", 3), ("n", 3), 1, "add", True)
    lib = tk.build(module)
    for n in (1, 6):
        x, u = rng.standard_normal((n, 7)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)
        i = rng.integers(0, 7, (n, 3))
        np.testing.assert_allclose(lib(x, i, u), scatter_loop(x, i, u, 1, "add"), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["graph", "vm", "aot"])
def test_every_executor_runs_the_in_place_update_kernel(rng, kind):
    """The scatter kernel updates the copy of the input in place (the host calls a copy
    kernel, then it): every executor's memory plan keeps that buffer live across both."""
    b = tk.GraphBuilder()
    x, i, u = b.input("x", (6, 5)), b.input("i", (9, 5), "int64"), b.input("u", (9, 5))
    scattered = b.scatter(b.exp(x), i, u, axis=0, mode="add")
    module = b.finish(b.mul(scattered, b.constant(np.float32(2.0))), b.exp(x))
    run = tk.create_executor(kind, module).evaluate()
    xs, us = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((9, 5)).astype(np.float32)
    i_ = rng.integers(-6, 6, (9, 5))
    twice, e = run(xs, i_, us)
    np.testing.assert_allclose(twice, 2 * scatter_loop(np.exp(xs), i_, us, 0, "add"), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e, np.exp(xs), rtol=1e-6)


def test_scatter_lines_run_in_parallel_but_never_the_updates(rng):
    """The CPU schedule runs the lines in parallel (their stores follow the line index);
    the update loop, whose store position is loaded data, is refused by the parallel
    primitive (it used to count a loaded index as following the loop). Along a leading
    axis, blocks of 16 neighbouring lines (contiguous in memory) apply each update
    together: the block loop parallel, the update loop inside it, the block's lines
    inside that (333 lines: a partial last block)."""
    from tensorkiln.build import lower_to_loops
    from tensorkiln.dialects import loop
    from tensorkiln.passes.pipeline import PassContext, run_pipeline
    from tensorkiln.schedule import Schedule, ScheduleError, kernels

    module = _scatter_module((40, 333), (300, 333), (300, 333), 0, "add", True)
    (kernel,) = [k for k in kernels(lower_to_loops(module)) if k.attributes["tk.kernel"].data == "scatter"]
    with pytest.raises(ScheduleError, match="loop-carried"):
        Schedule(kernel.clone()).parallel("update0")

    loops = lower_to_loops(module)
    run_pipeline(loops, ("default-schedule",), PassContext())
    (chosen,) = [k for k in kernels(loops) if k.attributes["tk.kernel"].data == "scatter"]
    assert chosen.attributes["tk.strategy"].data == "scatter_line_blocks"
    nest = [f for f in chosen.walk() if isinstance(f, loop.ForOp)]
    assert [(f.loop_name.data, f.kind.data) for f in nest] == [
        ("i0.outer", "parallel"), ("update0", "serial"), ("i0.inner", "serial")
    ]
    lowered = tk.build(module)
    x, u = rng.standard_normal((40, 333)).astype(np.float32), rng.standard_normal((300, 333)).astype(np.float32)
    i = rng.integers(-40, 40, (300, 333))
    np.testing.assert_allclose(lowered(x, i, u), scatter_loop(x, i, u, 0, "add"), rtol=1e-5, atol=1e-5)


def test_scatter_along_a_middle_axis_in_line_blocks(rng):
    """A 3-d scatter along axis 1 with indices covering part of the other axes: the last
    axis' lines in blocks (20 of them: one full block, one partial), the first axis'
    lines beyond the indices' extent untouched; ``update`` keeps the last write."""
    module = _scatter_module((5, 11, 20), (4, 17, 20), (4, 17, 20), 1, "update", True)
    lib = tk.build(module)
    x, u = rng.standard_normal((5, 11, 20)).astype(np.float32), rng.standard_normal((4, 17, 20)).astype(np.float32)
    i = rng.integers(-11, 11, (4, 17, 20))
    np.testing.assert_array_equal(lib(x, i, u), scatter_loop(x, i, u, 1, "update"))


@pytest.mark.parametrize(
    "x_shape, index_shape, update_shape, index_dtype, axis, mode, dtype, message",
    [
        ((4, 5), (4,), (4, 5), "int64", 0, "add", "float32", "same rank"),
        ((4, 5), (4, 6), (4, 6), "int64", 0, "add", "float32", "expected at most input dim 1"),
        ((4, 5), (4, 3), (4, 2), "int64", 0, "update", "float32", "expected at most updates dim 1"),
        ((4, 5), (4, 3), (4, 3), "float32", 1, "add", "float32", "must be an integer tensor"),
        ((4, 5), (4, 3), (4, 3), "int64", 1, "mean", "float32", "unknown mode 'mean'"),
        ((4, 5), (4, 3), (4, 3), "int64", 1, "add", "bool", "needs a numeric input"),
    ],
)
def test_scatter_verifier_errors(x_shape, index_shape, update_shape, index_dtype, axis, mode, dtype, message):
    b = tk.GraphBuilder()
    x, i, u = b.input("x", x_shape, dtype), b.input("i", index_shape, index_dtype), b.input("u", update_shape, dtype)
    with pytest.raises(VerifyException, match=message):
        b.scatter(x, i, u, axis=axis, mode=mode)


# ---------------------------------------------------------------------------
# torch


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def check_torch(fn, make_inputs, rng, runs: int = 2):
    """Export on one set of inputs, compare with torch eager on ``runs`` fresh sets."""
    module = from_exported_program(torch.export.export(Fn(fn), make_inputs(rng)))
    lib = tk.build(module)
    for _ in range(runs):
        inputs = make_inputs(rng)
        expected = fn(*inputs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = lib(*[t.numpy() for t in inputs])
        got = got if isinstance(got, tuple) else (got,)
        for g, e in zip(got, expected, strict=True):
            assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5)


def randn(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def distinct(rng, n, count, negative=True):
    """``count`` distinct indices into ``n`` (assignment with repeats is undefined in torch)."""
    picked = rng.permutation(n)[:count]
    if negative:
        picked = np.where(rng.random(count) < 0.5, picked - n, picked)
    return torch.from_numpy(picked.astype(np.int64))


def test_index_put_one_index(rng):
    def fn(x, i, v):
        y = x.clone()
        y[i] = v  # rows
        z = x.clone()
        z[:, :, i[:2]] = 0.5  # a scalar into the last axis, via None slices before it
        return y, z

    check_torch(fn, lambda r: (randn(r, 7, 3, 5), distinct(r, 5, 4), randn(r, 4, 3, 5)), rng)


def test_index_put_accumulates_repeated_indices(rng):
    def fn(x, i, v):
        return x.index_put((i,), v, accumulate=True), x.index_put((i, i.flip(0)), v[:, 0], accumulate=True)

    check_torch(fn, lambda r: (randn(r, 6, 6), torch.from_numpy(r.integers(-6, 6, 9)), randn(r, 9, 6)), rng)


def test_index_put_several_indices(rng):
    """Adjacent indexed axes are merged in place; non-adjacent ones put the index shape
    first (torch's advanced-indexing rule), and the values broadcast to it."""

    def fn(x, i, j, v):
        a = x.clone()
        a[:, i, j] = v[:, 0]  # adjacent: values (7, 3) broadcast from (3,)
        b = x.clone()
        b[i, :, j] = v  # not adjacent: the index shape (3,) comes first: (3, 5)
        c = x.clone()
        c[i[:, None], :, j[None, :]] += v[:1, :1]  # index shapes broadcast to (3, 3)
        return a, b, c

    check_torch(
        fn, lambda r: (randn(r, 7, 5, 6), distinct(r, 5, 3), distinct(r, 6, 3), randn(r, 3, 5)), rng
    )


def test_masked_assignment(rng):
    def fn(x):
        y = x.clone()
        y[x > 0.5] = -1.0
        z = x.clone()
        z[x[:, 0] < 0] = 2.0  # a mask over the leading axis only
        return y, z

    check_torch(fn, lambda r: (randn(r, 5, 7),), rng)


def test_scatter_family(rng):
    def fn(x, i, k, u):
        wide = u.repeat(1, 2)
        return (
            x.scatter(1, i[:, :3], u),
            x.scatter(0, k, -3.0),
            x.scatter_add(1, i, wide),
            x.scatter_reduce(1, i, wide, "amax", include_self=False),
            x.scatter_reduce(1, i, wide, "amin"),
            x.scatter_reduce(1, i, wide, "sum", include_self=False),
            x.scatter_reduce(1, i, wide, "mean"),
            x.scatter_reduce(1, i, wide, "mean", include_self=False),
            x.scatter_reduce(1, i, wide, "prod"),
            x.scatter_reduce(1, i, wide, "prod", include_self=False),
        )

    def inputs(r):
        # scatter without reduction: distinct columns per row (repeats are undefined in torch)
        rows = np.stack([r.permutation(7)[:6] for _ in range(5)])
        k = np.stack([r.permutation(5)[:2] for _ in range(7)], axis=1)
        return randn(r, 5, 7), torch.from_numpy(rows), torch.from_numpy(k), randn(r, 5, 3)

    check_torch(fn, inputs, rng)


def test_index_add_copy_fill(rng):
    def fn(x, i, v):
        return x.index_add(1, i, v, alpha=2.0), x.index_copy(1, i, v), x.index_fill(0, i[:2], -1.5)

    check_torch(fn, lambda r: (randn(r, 5, 7), distinct(r, 5, 4, negative=False), randn(r, 5, 4)), rng)


@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(rng, include_self):
    """Repeated indices: several source slices reduce into one slice of x."""

    def fn(x, i, v, w):
        return tuple(
            x.index_reduce(dim, i, source, reduce, include_self=include_self)
            for dim, source in ((1, v), (0, w))
            for reduce in ("prod", "mean", "amax", "amin")
        )

    def inputs(r):
        index = torch.from_numpy(r.integers(0, 5, 6))
        return randn(r, 5, 7), index, randn(r, 5, 6), randn(r, 6, 7)

    check_torch(fn, inputs, rng)


def test_unsupported_scatter_reduction_is_named():
    ep = torch.export.export(
        Fn(lambda x, i, u: x.scatter_reduce(1, i, u, "mean")),
        (torch.randint(0, 9, (3, 4)), torch.zeros(3, 2, dtype=torch.int64), torch.randint(0, 9, (3, 2))),
    )
    with pytest.raises(TorchImportError, match="reduce='mean' on int64"):
        from_exported_program(ep)

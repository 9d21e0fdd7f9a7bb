"""Data-movement ops, reductions and softmax compiled with tk.build, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from compare import compile_and_compare
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
@pytest.mark.parametrize(
    "shape, new",
    [((7, 30), (5, 6, 7)), ((2, 3, 4), (-1,)), ((12,), (3, 1, 4)), ((1,), ()), ((5, 1, 3), (3, 5))],
)
def test_reshape(rng, dtype, shape, new):
    compile_and_compare(
        rng, lambda b, x: b.reshape(x, new), [shape], dtype,
        expected=lambda x: x.reshape(new),
    )


@pytest.mark.parametrize("shape, perm", [((3, 4, 5), (2, 0, 1)), ((6, 7), (1, 0)), ((2, 3, 1, 5), (3, 1, 0, 2)), ((4,), (0,))])
def test_transpose(rng, shape, perm):
    compile_and_compare(rng, lambda b, x: b.transpose(x, perm), [shape], expected=lambda x: x.transpose(perm))


@pytest.mark.parametrize("shape, target", [((3, 1), (4, 3, 5)), ((), (2, 3)), ((1, 7), (1, 7)), ((5,), (3, 2, 5))])
def test_broadcast_to(rng, shape, target):
    compile_and_compare(
        rng, lambda b, x: b.broadcast_to(x, target), [shape], expected=lambda x: np.broadcast_to(x, target)
    )


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(rng, axis):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    sizes = [1, 5, 2]
    shapes = [tuple(s if a != axis % 3 else n for a, s in enumerate(shape)) for shape, n in zip(shapes, sizes)]
    compile_and_compare(
        rng, lambda b, *xs: b.concat(list(xs), axis=axis), shapes,
        expected=lambda *xs: np.concatenate(xs, axis=axis),
    )


@pytest.mark.parametrize(
    "starts, ends, axes, steps, index",
    [
        ([1, None], [5, None], [0, 2], [1, 3], np.s_[1:5, :, ::3]),
        ([-3], [None], [1], [2], np.s_[:, -3::2]),
        ([0, 1, 2], [100, -1, 7], None, [2, 1, 4], np.s_[0:100:2, 1:-1, 2:7:4]),
    ],
)
def test_slice(rng, starts, ends, axes, steps, index):
    compile_and_compare(
        rng, lambda b, x: b.slice(x, starts, ends, axes, steps), [(5, 4, 7)], expected=lambda x: x[index]
    )


REDUCTIONS = {
    "reduce_sum": np.sum,
    "reduce_mean": np.mean,
    "reduce_max": np.max,
    "reduce_min": np.min,
}


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axes", [(), (0,), (-1,), (0, 2), (1,)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(rng, op, axes, keepdims):
    fn = REDUCTIONS[op]
    np_axes = axes if axes else None
    compile_and_compare(
        rng, lambda b, x: getattr(b, op)(x, axes, keepdims=keepdims), [(5, 4, 7)],
        expected=lambda x: fn(x, axis=np_axes, keepdims=keepdims),
    )


@pytest.mark.parametrize("axes", [(), (1,), (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_prod(rng, axes, keepdims):
    """Products of values near 1 (a product of 140 standard normals underflows float32)."""
    compile_and_compare(
        rng, lambda b, x: b.reduce_prod(b.add(b.mul(x, 0.1), 1.0), axes, keepdims=keepdims), [(5, 4, 7)],
        expected=lambda x: np.prod(x * np.float32(0.1) + np.float32(1.0), axis=axes or None, keepdims=keepdims),
    )


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_reductions_exact(rng, op, dtype):
    got = compile_and_compare(rng, lambda b, x: getattr(b, op)(x, (1,)), [(3, 17)], dtype, rtol=0, atol=0)
    assert got.dtype == np.dtype(dtype)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax(rng, axis):
    got = compile_and_compare(
        rng, lambda b, x: b.softmax(x, axis), [(5, 4, 7)], expected=lambda x: _softmax(x, axis)
    )
    np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=1e-5)


def test_softmax_large_values_stable(rng):
    compile_and_compare(
        rng, lambda b, x: b.softmax(b.mul(x, 1000.0), -1), [(3, 9)],
        expected=lambda x: _softmax(x * 1000.0, -1),
    )


@pytest.mark.parametrize("axis", [0, -1])
def test_log_softmax(rng, axis):
    compile_and_compare(
        rng, lambda b, x: b.log_softmax(x, axis), [(6, 11)], expected=lambda x: np.log(_softmax(x, axis)), atol=1e-5
    )


@settings(max_examples=12, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
)
def test_reduce_property(shape, data):
    """Random shapes and axes: the compiled sum equals numpy's."""
    rank = len(shape)
    axes = tuple(data.draw(st.sets(st.integers(0, rank - 1), max_size=rank)))
    keepdims = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    # float32 sums in another order than numpy's differ by rounding, which grows with the
    # count summed into one output (seen: 2.4e-6 on a sum of 288 that came out 0.039)
    summed = int(np.prod([shape[a] for a in axes] if axes else shape))
    compile_and_compare(
        rng, lambda b, x: b.reduce_sum(x, axes, keepdims=keepdims), [tuple(shape)],
        expected=lambda x: np.sum(x, axis=tuple(sorted(axes)) or None, keepdims=keepdims),
        atol=1e-6 * summed,
    )


def test_symbolic_reduce_prod(rng):
    """Over the symbolic axis and along it: int64 products wrap as the interpreter's."""
    import tensorkiln as tk

    b = tk.GraphBuilder()
    x = b.input("x", ("n", 37), "int64")
    module = b.finish(b.reduce_prod(x, 0), b.reduce_prod(x, -1, keepdims=True))
    lib, reference = tk.build(module), tk.create_executor("interpreter", module).evaluate()
    for n in (1, 5):
        data = rng.integers(-9, 9, (n, 37))
        for got, want, expected in zip(lib(data), reference(data), (data.prod(0), data.prod(-1, keepdims=True))):
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, expected)


def test_symbolic_reduce_and_softmax(rng):
    import tensorkiln as tk

    b = tk.GraphBuilder()
    x = b.input("x", ("n", 6))
    module = b.finish(b.softmax(x, -1), b.reduce_mean(x, 0), b.reshape(x, ("n", 2, 3)))
    lib = tk.build(module)
    for n in (1, 2, 7):
        data = rng.standard_normal((n, 6)).astype("f4")
        soft, mean, reshaped = lib(data)
        np.testing.assert_allclose(soft, _softmax(data, -1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(mean, data.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(reshaped, data.reshape(n, 2, 3))

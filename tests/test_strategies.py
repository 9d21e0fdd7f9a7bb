"""Default strategies (schedule/strategies/): which strategy each kind of kernel gets,
and the compiled numbers match numpy on tiny, prime and non-multiple-of-16 shapes."""

from __future__ import annotations

import numpy as np
import pytest
from strategy_helpers import chosen_strategies

import tensorkiln as tk
from tensorkiln.schedule.strategies.gemm import MATVEC_ROWS


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def close(got, want, tol=1e-4):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# -- matrix products -------------------------------------------------------------------

GEMM_SHAPES = [(1, 1, 1), (1, 784, 512), (2, 3, 5), (7, 13, 17), (31, 37, 129), (64, 96, 128), (255, 257, 129)]


@pytest.mark.parametrize("m, k, n", GEMM_SHAPES)
def test_dense_packed(rng, m, k, n):
    w, bias = f32(rng, n, k), f32(rng, n)
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.add(b.dense(b.input("x", (m, k)), w), bias)))
    # (a dim of size 1 is indexed by a constant, not its loop: plain dot products then;
    # a few rows are matrix-vector products streaming the weight)
    want = "reduce_rows" if n == 1 or k == 1 else "dense_matvec" if m <= MATVEC_ROWS else "dense_packed"
    assert chosen_strategies(module) == {"dense_relu": want}
    x = f32(rng, m, k)
    close(tk.build(module)(x), np.maximum(x @ w.T + bias, 0))


@pytest.mark.parametrize("m, k, n", GEMM_SHAPES)
def test_matmul_register_tile(rng, m, k, n):
    b = tk.GraphBuilder()
    module = b.finish(b.matmul(b.input("x", (m, k)), b.input("y", (k, n))))
    assert chosen_strategies(module)["matmul"] in ({"gemm_register_tile"} if n > 1 else {"gemm_register_tile", "reduce_rows"})
    x, y = f32(rng, m, k), f32(rng, k, n)
    close(tk.build(module)(x, y), x @ y)


@pytest.mark.parametrize("rows", [1, 5, 17])
def test_dense_symbolic_batch(rng, rows):
    w = f32(rng, 19, 23)
    b = tk.GraphBuilder()
    module = b.finish(b.dense(b.input("x", ("n", 23)), w))
    assert chosen_strategies(module) == {"dense": "dense_packed"}
    x = f32(rng, rows, 23)
    close(tk.build(module)(x), x @ w.T)


def test_dense_weight_used_twice_is_packed_for_both(rng):
    w = f32(rng, 11, 11)
    b = tk.GraphBuilder()
    x = b.input("x", (7, 11))
    module = b.finish(b.dense(b.relu(b.dense(x, w)), w))
    assert set(chosen_strategies(module).values()) == {"dense_packed"}
    xv = f32(rng, 7, 11)
    close(tk.build(module)(xv), np.maximum(xv @ w.T, 0) @ w.T)


@pytest.mark.parametrize("shape, features", [((1, 519), 37), ((3, 200), 130), ((2, 1, 77), 9), ((4, 64), 300)])
def test_dense_matvec_on_few_rows(rng, shape, features):
    """Up to MATVEC_ROWS rows: dot products with the weight's rows, features in
    parallel; the same numbers at any thread count."""
    from tensorkiln.runtime.threads import num_threads

    w, bias = f32(rng, features, shape[-1]), f32(rng, features)
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.add(b.dense(b.input("x", shape), w), bias)))
    assert list(chosen_strategies(module).values()) == ["dense_matvec"]
    x = f32(rng, *shape)
    lib = tk.build(module)
    results = []
    for n in (1, 2):
        with num_threads(n):
            results.append(lib(x))
    close(results[0], np.maximum(x @ w.T + bias, 0))
    np.testing.assert_array_equal(results[0], results[1])


def test_dense_with_weight_as_input_uses_dot_products(rng):
    """Not a constant: no compile-time packing, the vectorized row reduction instead."""
    b = tk.GraphBuilder()
    module = b.finish(b.dense(b.input("x", (5, 33)), b.input("w", (7, 33))))
    assert chosen_strategies(module) == {"dense": "reduce_rows"}
    x, w = f32(rng, 5, 33), f32(rng, 7, 33)
    close(tk.build(module)(x, w), x @ w.T)


@pytest.mark.parametrize("batch, m, k, n", [(1, 1, 1, 1), (3, 7, 13, 17), (2, 33, 20, 65)])
def test_batch_matmul(rng, batch, m, k, n):
    b = tk.GraphBuilder()
    module = b.finish(b.batch_matmul(b.input("x", (batch, m, k)), b.input("y", (batch, k, n))))
    want = {"gemm_register_tile"} if n > 1 else {"gemm_register_tile", "reduce_rows"}
    assert chosen_strategies(module)["batch_matmul"] in want
    x, y = f32(rng, batch, m, k), f32(rng, batch, k, n)
    close(tk.build(module)(x, y), x @ y)


# -- row-wise kernels -----------------------------------------------------------------

ROWS = [(1, 1), (3, 7), (13, 17), (64, 1000), (5, 257)]


@pytest.mark.parametrize("rows, cols", ROWS)
def test_softmax_and_log_softmax(rng, rows, cols):
    x = f32(rng, rows, cols)
    e = np.exp(x - x.max(-1, keepdims=True))
    for op, want in (("softmax", e / e.sum(-1, keepdims=True)), ("log_softmax", np.log(e / e.sum(-1, keepdims=True)))):
        b = tk.GraphBuilder()
        module = b.finish(getattr(b, op)(b.input("x", (rows, cols)), -1))
        strategies = chosen_strategies(module)
        if cols > 1:  # one kernel: the row max and sum computed once per row
            assert strategies == {op: "row_stages"}
        else:  # (rows of one element: nothing to reduce along, three kernels)
            assert "reduce_rows" in strategies.values() and None not in strategies.values()
        close(tk.build(module)(x), want)


@pytest.mark.parametrize("rows, cols", ROWS)
def test_layer_norm_like_group(rng, rows, cols):
    """mean, variance (reductions along the row), then the normalization (elementwise)."""
    gamma, beta = f32(rng, cols), f32(rng, cols)
    b = tk.GraphBuilder()
    x = b.input("x", (rows, cols))
    centred = b.sub(x, b.reduce_mean(x, [1], keepdims=True))
    var = b.reduce_mean(b.mul(centred, centred), [1], keepdims=True)
    y = b.add(b.mul(b.mul(centred, b.rsqrt(b.add(var, np.array(1e-5, np.float32)))), gamma), beta)
    module = b.finish(y)
    if cols > 1:  # one kernel: mean and variance once per row (a row of one element: no row)
        assert list(chosen_strategies(module).values()) == ["row_stages"]
    xv = f32(rng, rows, cols)
    c = xv - xv.mean(1, keepdims=True)
    want = c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5) * gamma + beta
    close(tk.build(module)(xv), want, 2e-4)


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("axis, strategy", [(1, "reduce_rows"), (0, "reduce_columns")])
@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 3), (301, 37), (17, 130)])
def test_reductions(rng, op, axis, strategy, rows, cols):
    b = tk.GraphBuilder()
    module = b.finish(getattr(b, op)(b.input("x", (rows, cols)), [axis]))
    assert chosen_strategies(module) == {op: strategy}
    x = f32(rng, rows, cols)
    want = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min}[op](x, axis)
    close(tk.build(module)(x), want)


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("c, size, window, stride, padding", [(3, 7, 3, 1, 1), (17, 9, 2, 2, 0), (32, 13, 3, 2, 1)])
def test_pooling(rng, op, c, size, window, stride, padding):
    import torch

    b = tk.GraphBuilder()
    module = b.finish(getattr(b, op)(b.input("x", (2, c, size, size)), (window, window), (stride, stride), (padding, padding)))
    assert "reduce_columns" in chosen_strategies(module).values()
    x = f32(rng, 2, c, size, size)
    fn = torch.nn.functional.max_pool2d if op == "max_pool2d" else torch.nn.functional.avg_pool2d
    want = fn(torch.from_numpy(x), window, stride, padding).numpy()
    close(tk.build(module)(x), want)


@pytest.mark.parametrize("shape", [(1,), (5,), (4099,), (3, 7), (129, 257), (2, 3, 17, 19)])
def test_elementwise_group(rng, shape):
    b = tk.GraphBuilder()
    x, y = b.input("x", shape), b.input("y", shape)
    module = b.finish(b.tanh(b.relu(b.add(x, b.mul(y, np.array(2.0, np.float32))))))
    assert chosen_strategies(module) == {"mul_add_relu_tanh": "injective_vectorized"}
    xv, yv = f32(rng, *shape), f32(rng, *shape)
    close(tk.build(module)(xv, yv), np.tanh(np.maximum(xv + 2 * yv, 0)), 1e-5)


def test_transpose_is_vectorized_along_its_output(rng):
    b = tk.GraphBuilder()
    module = b.finish(b.transpose(b.input("x", (37, 45)), [1, 0]))
    assert chosen_strategies(module) == {"transpose": "injective_vectorized"}
    x = f32(rng, 37, 45)
    np.testing.assert_array_equal(tk.build(module)(x), x.T)


@pytest.mark.parametrize("rows, heads, dim", [(1, 1, 1), (7, 3, 5), (128, 4, 64)])
def test_reshape_transpose_group_loads_contiguously(rng, rows, heads, dim):
    """(rows, heads*dim) -> (heads, rows, dim): simplify_indices folds the reshape's
    div/rem, the strategy vectorizes; results exact."""
    b = tk.GraphBuilder()
    x = b.input("x", (rows, heads * dim))
    module = b.finish(b.transpose(b.reshape(x, (rows, heads, dim)), [1, 0, 2]))
    xv = f32(rng, rows, heads * dim)
    np.testing.assert_array_equal(tk.build(module)(xv), xv.reshape(rows, heads, dim).transpose(1, 0, 2))


@pytest.mark.parametrize(
    "shape, perm",
    [((37, 45), (1, 0)), ((1, 19, 23, 35), (0, 3, 1, 2)), ((3, 17, 40), (0, 2, 1)), ((16, 300), (1, 0)), ((5, 9), (1, 0))],
)
def test_transposes_are_tiled_and_exact(rng, shape, perm):
    """Transposed reads run in 16 x 16 blocks (shifted last blocks on odd sizes): the
    same elements, at any thread count; a fused elementwise op rides along."""
    from tensorkiln.runtime.threads import num_threads

    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.transpose(b.input("x", shape), list(perm))))
    assert list(chosen_strategies(module).values()) == ["injective_vectorized"]
    x = f32(rng, *shape)
    lib = tk.build(module)
    for n in (1, 2):
        with num_threads(n):
            np.testing.assert_array_equal(lib(x), np.maximum(x.transpose(perm), 0))

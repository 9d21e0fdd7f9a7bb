"""Dims computed from symbols (``4*s0``): parsed and evaluated (runtime/dim_expr.py), in
types and reshapes, lowered to index arithmetic, and torch models whose views multiply
the dynamic batch (multi-head attention) compiled once and run at several batch sizes."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.runtime.dim_expr import DimExprError, evaluate, free_symbols, is_symbol, lower


@pytest.mark.parametrize(
    "dim, values, expected",
    [
        ("4*s0", {"s0": 3}, 12),
        ("s0 + 1", {"s0": 6}, 7),
        ("(s0//2)*s1 - 1", {"s0": 7, "s1": 5}, 14),
        ("Max(1, s0 - 4)", {"s0": 2}, 1),
        ("Min(s0, 8, s1)", {"s0": 9, "s1": 10}, 8),
        ("Mod(s0, 4) + -s1", {"s0": 11, "s1": 2}, 1),
    ],
)
def test_evaluate(dim, values, expected):
    assert evaluate(dim, values) == expected
    assert free_symbols(dim) == set(values)
    ops = {"+": int.__add__, "-": int.__sub__, "*": int.__mul__, "//": int.__floordiv__, "%": int.__mod__,
           "max": max, "min": min, "neg": int.__neg__}  # fmt: skip
    assert lower(dim, values.__getitem__, ops, int) == expected  # the code-generator walk agrees


def test_constant_powers_are_products():
    assert evaluate("(s0**2)//s0 + s1**3", {"s0": 7, "s1": 2}) == 15
    assert free_symbols("s0**2") == {"s0"}


@pytest.mark.parametrize("dim", ["s0/2", "2**s0", "s0**s1", "s0**20", "__import__('os')", "s0.real", "f(s0)", "s0 if s1 else 2", "1.5*s0"])
def test_unsupported_expressions_are_named(dim):
    with pytest.raises(DimExprError, match=r"only integers, symbols"):
        evaluate(dim, {"s0": 1, "s1": 1})


def test_missing_symbol_is_named():
    with pytest.raises(DimExprError, match="symbol 'n' has no value"):
        evaluate("4*n", {"m": 2})
    assert is_symbol("batch") and not is_symbol("4*batch")


def test_expression_dims_print_quoted_and_round_trip():
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 32))
    module = b.finish(b.reshape(x, ("4*n", 8)))
    text = str(module)
    assert 'tensor<?x8xf32, #graph.dims<"4*n", _>>' in text
    assert str(tk.parse_module(text)) == text


@pytest.mark.parametrize(
    "source, target",
    [(("n", 32), ("4*n", 8)), ((2, "n", 6), ("2*n", 6)), (("n", "m", 3), ("n*m", 3))],
)
def test_reshape_with_dim_expressions_compiles(rng, source, target):
    b = tk.GraphBuilder()
    x = b.input("x", source)
    module = b.finish(b.relu(b.reshape(x, target)))
    lib = tk.build(module)
    symbols = {"n": 3, "m": 5}
    shape = [evaluate(d, symbols) if isinstance(d, str) else d for d in source]
    data = rng.standard_normal(shape).astype("f4")
    want_shape = [evaluate(d, symbols) if isinstance(d, str) else d for d in target]
    got = lib(data)
    np.testing.assert_array_equal(got, np.maximum(data.reshape(want_shape), 0))
    np.testing.assert_array_equal(tk.create_executor("interpreter", module).evaluate()(data), got)


@pytest.mark.parametrize("target", [("4*n", 7), ("4*m", 8)])
def test_reshape_count_mismatch_is_rejected(target):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 32))
    with pytest.raises(VerifyException, match="cannot reshape"):
        b.reshape(x, target)


def test_a_symbol_seen_only_in_an_input_expression_is_solved(rng):
    """An input dim ``4*n`` binds ``n`` (``n = rows / 4``) for a result with the bare
    symbol; rows that no ``n`` gives are refused at call time, by argument and dim."""
    b = tk.GraphBuilder()
    module = b.finish(b.reshape(b.input("x", ("4*n", 8)), ("n", 32)))
    lib = tk.build(module)
    x = rng.standard_normal((12, 8)).astype("f4")
    out = lib(x)
    assert out.shape == (3, 32)
    np.testing.assert_array_equal(out, x.reshape(3, 32))
    with pytest.raises(ValueError, match=r"argument 'x': dim 0 is '4\*n', which no value of its symbol makes 10"):
        lib(rng.standard_normal((10, 8)).astype("f4"))


def test_an_output_symbol_no_input_gives_is_an_error():
    b = tk.GraphBuilder()
    module = b.finish(b.reshape(b.input("x", ("n*m", 8)), ("n", "8*m")))
    with pytest.raises(ValueError, match=r"output0: symbolic dims \['n', '8\*m'\] do not appear in any input"):
        tk.build(module)


def test_input_with_an_expression_dim_is_checked(rng):
    b = tk.GraphBuilder()
    x, y = b.input("x", ("n", 8)), b.input("y", ("2*n", 4))
    module = b.finish(b.add(x, b.reshape(y, ("n", 8))))
    lib = tk.build(module)
    xs, ys = rng.standard_normal((3, 8)).astype("f4"), rng.standard_normal((6, 4)).astype("f4")
    np.testing.assert_allclose(lib(xs, ys), xs + ys.reshape(3, 8))
    with pytest.raises(ValueError, match=r"argument 'y': dim 0 is '2\*n' = 6, got 5"):
        lib(xs, rng.standard_normal((5, 4)).astype("f4"))


torch = pytest.importorskip("torch", reason="the dynamic-batch models come from torch")


@pytest.mark.parametrize("name", ["transformer_encoder", "multihead_attention"])
def test_attention_with_dynamic_batch_runs_at_any_batch(name):
    """nn.MultiheadAttention views its input as (seq, batch*heads, head_dim): the batch
    dim times the head count."""
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.frontends.torch import from_exported_program

    entry = ZOO[name]
    model = entry.make().eval()
    inputs = random_inputs(entry, seed=3)
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(model, inputs, dynamic_shapes=tuple({0: batch} for _ in inputs))
    module = from_exported_program(ep)
    assert any('"' in line and "#graph.dims" in line for line in str(module).splitlines())  # an expression dim
    lib = tk.build(module)
    for size in (1, 3, 17):
        xs = random_inputs(entry, seed=size, batch=size)
        with torch.no_grad():
            expected = model(*xs)
        got = lib(*[x.numpy() for x in xs])
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        for g, e in zip(got, [e for e in expected if e is not None]):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-5)

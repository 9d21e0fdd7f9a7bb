"""Test helper: build a graph with the builder, compile it, compare with the interpreter."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import tensorkiln as tk


def random_input(rng: np.random.Generator, shape: Sequence[int], dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def compile_and_compare(
    rng: np.random.Generator,
    body: Callable[..., object],
    shapes: Sequence[Sequence[int]],
    dtype="float32",
    rtol: float = 1e-5,
    atol: float = 1e-6,
    expected: Callable[..., np.ndarray] | None = None,
) -> np.ndarray:
    """``body(builder, *inputs)`` returns the output value; check the compiled result against
    the interpreter (and ``expected(*arrays)`` when given) on fresh random inputs."""
    b = tk.GraphBuilder()
    inputs = [b.input(f"x{k}", shape, dtype) for k, shape in enumerate(shapes)]
    module = b.finish(body(b, *inputs))
    arrays = [random_input(rng, shape, dtype) for shape in shapes]
    got = tk.build(module)(*arrays)
    reference = tk.create_executor("interpreter", module).evaluate()(*arrays)
    assert got.shape == reference.shape and got.dtype == reference.dtype
    np.testing.assert_allclose(got, reference, rtol=rtol, atol=atol)
    if expected is not None:
        np.testing.assert_allclose(got, expected(*arrays), rtol=rtol, atol=atol)
    return got

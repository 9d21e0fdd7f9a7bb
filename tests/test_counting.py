"""``bincount`` and ``repeat_interleave`` with a tensor of repeats (``ops/counting.py``):
lengths read from the data (the VM) or given (``output_size``: one function), against
torch on fresh inputs, empty bins and zero repeats, symbolic input lengths, and the
errors torch raises (negative values, a wrong ``output_size``)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.runtime.host_checks import RuntimeCheckError  # noqa: E402
from tensorkiln.runtime.module import CompiledModule  # noqa: E402
from torch_compile import compile_torch_fn  # noqa: E402


def _same(lib, fn, *inputs):
    ours = lib(*inputs)
    ref = fn(*(torch.from_numpy(np.asarray(a)) for a in inputs)).numpy()
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    np.testing.assert_allclose(ours, ref, rtol=1e-6)


def test_bincount_lengths_from_the_data_and_minlength(rng):
    fn = lambda x: torch.bincount(x, minlength=6)  # noqa: E731
    lib = compile_torch_fn(fn, rng.integers(0, 9, 37))
    for x in (rng.integers(0, 9, 37), rng.integers(0, 3, 37), np.full(37, 40), rng.integers(0, 200, 37)):
        _same(lib, fn, x)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([1, -1]))
    with pytest.raises(RuntimeCheckError, match="bincount only supports 1-d non-negative integral inputs"):
        lib(np.concatenate([rng.integers(0, 9, 36), [-1]]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bincount_with_weights_and_a_symbolic_length(rng, dtype):
    n = torch.export.Dim("n", min=2)
    fn = lambda x, w: torch.bincount(x, w)  # noqa: E731
    lib = compile_torch_fn(fn, rng.integers(0, 5, 9), rng.random(9).astype(dtype), dynamic_shapes=(({0: n}, {0: n}),))
    for size in (2, 13, 300):
        _same(lib, fn, rng.integers(0, 7, size), rng.random(size).astype(dtype))


def test_repeat_interleave_of_rows_and_of_indices(rng):
    fn = lambda x, r: (x.repeat_interleave(r, dim=0), torch.repeat_interleave(r))  # noqa: E731
    x = rng.standard_normal((5, 3)).astype(np.float32)
    lib = compile_torch_fn(fn, x, np.array([1, 0, 2, 3, 1]))
    for repeats in (np.array([1, 0, 2, 3, 1]), np.array([0, 0, 0, 0, 7]), np.array([4, 0, 0, 1, 0]), np.zeros(5, np.int64),
                    rng.integers(0, 6, 5)):  # fmt: skip
        rows, indices = lib(x, repeats)
        want_rows, want_indices = fn(torch.from_numpy(x), torch.from_numpy(repeats))
        np.testing.assert_array_equal(rows, want_rows.numpy())
        np.testing.assert_array_equal(indices, want_indices.numpy())
    with pytest.raises(RuntimeCheckError, match="repeats can not be negative"):
        lib(x, np.array([1, 0, -2, 3, 1]))


def test_repeat_interleave_with_output_size_is_one_function(rng):
    fn = lambda x, r: x.repeat_interleave(r, dim=1, output_size=7)  # noqa: E731
    x = rng.standard_normal((2, 4)).astype(np.float32)
    lib = compile_torch_fn(fn, x, np.array([1, 2, 3, 1]))
    assert isinstance(lib, CompiledModule)
    for repeats in (np.array([1, 2, 3, 1]), np.array([0, 7, 0, 0]), np.array([2, 2, 2, 1])):
        _same(lib, fn, x, repeats)
    with pytest.raises(RuntimeCheckError, match="allocated size does not match required size"):
        lib(x, np.array([1, 2, 3, 2]))


def test_symbolic_number_of_repeats(rng):
    n = torch.export.Dim("n", min=2)
    fn = lambda r: torch.repeat_interleave(r)  # noqa: E731
    lib = compile_torch_fn(fn, np.array([1, 2, 0]), dynamic_shapes=(({0: n},),))
    for size in (2, 9, 40):
        _same(lib, fn, rng.integers(0, 4, size))


def test_interpreter_agrees(rng):
    from tensorkiln.frontends.torch import from_exported_program

    class Model(torch.nn.Module):
        def forward(self, x, r):
            return torch.bincount(x, minlength=3) * 1, torch.repeat_interleave(r)

    inputs = (torch.tensor([0, 4, 4, 1]), torch.tensor([2, 0, 1]))
    run = tk.create_executor("interpreter", from_exported_program(torch.export.export(Model(), inputs))).evaluate()
    counts, indices = run(*(t.numpy() for t in inputs))
    np.testing.assert_array_equal(counts, [1, 1, 0, 0, 2])
    np.testing.assert_array_equal(indices, [0, 0, 2])

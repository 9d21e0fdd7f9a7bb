"""graph.bitcast: each element's bits as another type of the same width, compiled and folded
(its numpy reference), on fresh random bits (NaN payloads, infinities and denormals
included); other widths are a verify error naming both types."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.dialects.graph.bitcast import BitcastOp
from tensorkiln.dialects.graph.types import element_type_of
from tensorkiln.frontends.builder import GraphBuilder

PAIRS = [(np.float32, np.int32), (np.int32, np.float32), (np.float64, np.int64), (np.int64, np.float64)]


def _random_bits(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    bits = np.random.default_rng(seed).integers(0, 256, (*shape, width), dtype=np.uint8)
    return np.ascontiguousarray(bits).view(dtype).reshape(shape)


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_bitcast_compiled_keeps_every_bit(source, target):
    b = GraphBuilder()
    x = b.input("x", ("n", 7), source)
    module = b.finish(b.bitcast(x, element_type_of(target)))
    lib = tk.build(module)
    for n in (1, 5):
        a = _random_bits(np.dtype(source), (n, 7), seed=n)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45 if np.dtype(source).itemsize == 4 else 5e-324], np.float64)
        if np.dtype(source).kind == "f":
            a[0, :6] = special.astype(source)
        got = lib(a)
        assert got.dtype == np.dtype(target) and got.shape == a.shape
        np.testing.assert_array_equal(got.view(np.uint8), a.view(np.uint8))


def test_bitcast_folds_constants_with_its_reference():
    a = _random_bits(np.dtype(np.float32), (3, 4), seed=3)
    b = GraphBuilder()
    op = BitcastOp(b.constant(a), element_type_of(np.int32))
    np.testing.assert_array_equal(op.reference(a), a.view(np.int32))


@pytest.mark.parametrize(("source", "target"), [(np.float32, np.int64), (np.float16, np.int16), (np.int8, np.uint8)])
def test_bitcast_of_other_widths_is_a_verify_error(source, target):
    b = GraphBuilder()
    x = b.input("x", (3,), source)
    with pytest.raises(VerifyException, match=rf"graph.bitcast: {np.dtype(source)} -> {np.dtype(target)}"):
        b.bitcast(x, element_type_of(target))

"""Random numbers: ``graph.random`` draws uniform or normal floats from a counter-based
generator, so every element is a pure function of (state, stream, index).

The state is a ``tensor<2xi64>`` function input, ``[seed, call]``, that the runtime
fills at every call (``runtime/signature.py``: the hidden ``rng_state`` argument), so
each call draws new numbers and no op needs side effects: the graph stays pure, a
random op can be fused, inlined twice or recomputed and still give the same values,
and two random ops differ by their ``stream`` (which also keeps CSE from merging them).

The generator is SplitMix64's output function ``mix64`` (Steele, Lea and Flood, 2014)
applied to a per-element counter, as in counter-based generators (Salmon et al., 2011):

- key = mix64(mix64(seed ^ mix64(call)) + GOLDEN * (stream + 1))
- counter(i_0, ..., i_last) = GOLDEN * (i_last + 1) + sum over the other axes of
  i_a * AXIS_MULTIPLIER[distance of a from the last axis]  (no sizes needed: symbolic
  shapes draw the same numbers as static ones)
- bits = mix64(key + counter); a second draw (normal) uses mix64(key ^ SECOND_DRAW)
- uniform in [0, 1): the top 24 (f32) or 53 (f64) bits times 2**-24 or 2**-53
- normal: Box-Muller, sqrt(-2 log(1 - u1)) * cos(2 pi u2) (compiled code: cos by a
  polynomial in (2 u2 - 1)^2, within 1e-11; the reference computes in float64)

The numbers are not torch's (torch's CPU generator is a Mersenne Twister behind a
global state); torch.compile's are not torch eager's either.

Example::

    %u = graph.random %state {distribution = "uniform", stream = 0 : i64, dtype = f32, shape = array<i64: 3, 5>} : (tensor<2xi64>) -> tensor<3x5xf32>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, f32, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, operand_element, operand_shape, shape_props
from .indexing import _ShapedSourceOp
from .types import numpy_dtype

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX_MULTIPLIERS = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
MIX_SHIFTS = (30, 27, 31)
SECOND_DRAW = 0xD1B54A32D192ED03
DISTRIBUTIONS = ("uniform", "normal")
#: the random state's shape and dtype: ``[seed, call]``
STATE_SHAPE = (2,)


def mix64(z: int) -> int:
    """SplitMix64's finaliser on a Python int (mod 2**64)."""
    with np.errstate(over="ignore"):
        return int(_mix64_array(np.uint64(z & MASK64)))


def axis_multiplier(distance: int) -> int:
    """The counter's weight of an axis ``distance`` axes before the last (odd, mixed bits)."""
    return GOLDEN if distance == 0 else mix64(distance) | 1


def stream_key(seed: int, call: int, stream: int) -> int:
    """The key of one random op (``stream``) in one call."""
    return mix64(mix64((seed ^ mix64(call)) & MASK64) + GOLDEN * (stream + 1))


def _mix64_array(z: np.ndarray) -> np.ndarray:
    (a, b), (s0, s1, s2) = (np.uint64(m) for m in MIX_MULTIPLIERS), (np.uint64(s) for s in MIX_SHIFTS)
    z = (z ^ (z >> s0)) * a
    z = (z ^ (z >> s1)) * b
    return z ^ (z >> s2)


def random_bits(key: int, shape: Sequence[int]) -> np.ndarray:
    """The 64 random bits of every element of ``shape`` under ``key`` (uint64)."""
    with np.errstate(over="ignore"):
        counter = np.zeros(tuple(shape), np.uint64) + np.uint64(GOLDEN)
        for axis, size in enumerate(shape):
            distance = len(shape) - 1 - axis
            index = np.arange(size, dtype=np.uint64).reshape([size if a == axis else 1 for a in range(len(shape))])
            counter = counter + index * np.uint64(axis_multiplier(distance))
        return _mix64_array(counter + np.uint64(key))


def to_unit_interval(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Uniform floats in [0, 1) from the top mantissa-many bits."""
    mantissa = 24 if dtype == np.float32 else 53
    return ((bits >> np.uint64(64 - mantissa)).astype(np.float64) * 2.0**-mantissa).astype(dtype)


def draw(distribution: str, state: np.ndarray, stream: int, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """Numpy reference of ``graph.random``."""
    seed, call = (int(v) & MASK64 for v in np.asarray(state).reshape(-1)[:2])
    key = stream_key(seed, call, stream)
    u1 = to_unit_interval(random_bits(key, shape), dtype)
    if distribution == "uniform":
        return u1
    u2 = to_unit_interval(random_bits(mix64(key ^ SECOND_DRAW), shape), dtype)
    radius = np.sqrt(-2.0 * np.log1p(-u1.astype(np.float64)))
    return (radius * np.cos(2 * np.pi * u2.astype(np.float64))).astype(dtype)


@irdl_op_definition
class RandomOp(_ShapedSourceOp):
    """Uniform ``[0, 1)`` or standard normal floats (f32 or f64) of a (possibly symbolic)
    shape, drawn from the ``[seed, call]`` state for random op number ``stream``.

    Example::

        %n = graph.random %state, %x {distribution = "normal", stream = 1 : i64, dtype = f32, shape = array<i64: -1, 4>, dims = #graph.dims<n, _>} : (tensor<2xi64>, tensor<?x3xf32, #graph.dims<n, _>>) -> tensor<?x4xf32, #graph.dims<n, _>>
    """

    name = "graph.random"
    state = operand_def(TensorType)
    sources = var_operand_def(TensorType)
    result = result_def(TensorType)
    distribution = prop_def(StringAttr)
    stream = prop_def(IntegerAttr)
    dtype = prop_def(Attribute)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$state (`,` $sources^)? attr-dict `:` `(` type($state) (`,` type($sources)^)? `)` `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    def __init__(
        self,
        state: SSAValue | Operation,
        distribution: str,
        stream: int,
        shape: Sequence[int | str],
        element: Attribute,
        sources: Sequence[SSAValue | Operation] = (),
    ):
        props = {"distribution": StringAttr(distribution), "stream": IntegerAttr(stream, i64), "dtype": element}
        self._build([state, list(sources)], {**props, **shape_props(shape)})

    def element(self) -> Attribute:
        return self.dtype

    def infer_result_type(self) -> TensorType:
        if self.distribution.data not in DISTRIBUTIONS:
            raise VerifyException(f"unknown distribution '{self.distribution.data}' (expected one of {', '.join(DISTRIBUTIONS)})")
        if self.dtype not in (f32, f64):
            raise VerifyException(f"random numbers are f32 or f64, got {self.dtype}")
        if operand_shape(self.state) != STATE_SHAPE or operand_element(self.state) != i64:
            raise VerifyException(f"the state must be a tensor<2xi64> ([seed, call]), got {self.state.type}")
        return super().infer_result_type()

    def reference(self, state: np.ndarray, *sources: np.ndarray) -> np.ndarray:
        sizes = self._sizes(sources)
        return draw(self.distribution.data, state, self.stream.value.data, sizes, numpy_dtype(self.dtype))


RANDOM_OPS: tuple[type[GraphOp], ...] = (RandomOp,)

__all__ = ["RANDOM_OPS", "RandomOp", "draw"]

"""Calibration: the ranges a float32 model's tensors take on sample inputs.

The model is compiled once with the observed tensors as extra outputs (every tensor
is computed by native code, as in a normal build), run on each calibration input,
and each tensor's range is summarized:

* ``"minmax"``: the smallest and largest value seen over all inputs;
* ``"percentile"``: per input, the ``percentile``-th and ``(100 - percentile)``-th
  percentiles, averaged over the inputs (outliers of a single input do not stretch the
  range for all; TensorRT's and ONNX Runtime's percentile calibrators clip the same way).

Every range includes 0, so that zero is exactly representable (padding, relu).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, SSAValue

from ..build import build
from ..dialects.functions import find_function

METHODS = ("minmax", "percentile")


@dataclass(frozen=True)
class Range:
    """The calibrated range of one tensor (``low <= 0 <= high``)."""

    low: float
    high: float


def _observing_copy(module: ModuleOp, function: str, values: Sequence[SSAValue]) -> tuple[ModuleOp, int]:
    """A copy of ``module`` whose ``function`` also returns ``values`` (after its own
    results); returns it and the number of original results."""
    copy = module.clone()
    original, cloned = find_function(module, function), find_function(copy, function)
    mapping = dict(zip(original.walk(), cloned.walk()))
    observed = []
    for v in values:
        if isinstance(v.owner, Block):  # a function argument
            observed.append(cloned.body.block.args[v.index])
        else:
            observed.append(mapping[v.owner].results[v.index])
    ret = cloned.body.block.last_op
    outputs = list(ret.operands)
    ret.operands = [*outputs, *observed]
    cloned.function_type = FunctionType.from_lists(
        list(cloned.function_type.inputs.data), [v.type for v in ret.operands]
    )
    return copy, len(outputs)


def calibrate(
    module: ModuleOp,
    values: Sequence[SSAValue],
    inputs: Sequence[Sequence[np.ndarray]],
    method: str = "minmax",
    percentile: float = 99.99,
    function: str = "main",
    target: str = "llvm",
) -> list[Range]:
    """The range of each of ``values`` (float32 tensors of ``function``) over the
    calibration ``inputs`` (each a sequence of the function's arguments).

    Example::

        ranges = calibrate(module, [x, h], [[x0], [x1]], method="percentile")
    """
    if method not in METHODS:
        raise ValueError(f"calibration method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 50 < percentile <= 100:
        raise ValueError(f"percentile must be in (50, 100], got {percentile}")
    if not inputs:
        raise ValueError("calibration needs at least one input sample")
    observing, skip = _observing_copy(module, function, values)
    lib = build(observing, target, function=function)
    lows = [[] for _ in values]
    highs = [[] for _ in values]
    for sample in inputs:
        results = lib(*sample)
        results = results if isinstance(results, tuple | list) else (results,)
        for k, tensor in enumerate(results[skip:]):
            tensor = np.asarray(tensor, np.float32)
            finite = tensor[np.isfinite(tensor)]
            if finite.size == 0:
                continue
            if method == "minmax":
                lows[k].append(float(finite.min()))
                highs[k].append(float(finite.max()))
            else:
                low, high = np.percentile(finite, [100 - percentile, percentile])
                lows[k].append(float(low))
                highs[k].append(float(high))
    ranges = []
    for low, high in zip(lows, highs):
        if not low:
            ranges.append(Range(0.0, 0.0))
        elif method == "minmax":
            ranges.append(Range(min(0.0, min(low)), max(0.0, max(high))))
        else:
            ranges.append(Range(min(0.0, float(np.mean(low))), max(0.0, float(np.mean(high)))))
    return ranges


__all__ = ["METHODS", "Range", "calibrate"]

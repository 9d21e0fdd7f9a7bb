"""A GEMM program: what the GEMM-style backends compile a region to -- plain data
(json steps + numpy weights), numpy only, so a deployed artifact loads it without the
compiler. Made by :func:`tensorkiln.byoc.gemm.gemm_program`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..runtime.signature import TensorSpec
from .external import spec_from_json, spec_to_json


@dataclass
class GemmProgram:
    """Steps over named values: region inputs ``in<k>``, weights ``w<k>``, step results ``t<k>``."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    specs: dict[str, TensorSpec] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    weights: dict[str, np.ndarray] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "outputs": self.outputs,
            "specs": {k: spec_to_json(s) for k, s in self.specs.items()},
            "steps": self.steps,
        }

    @staticmethod
    def from_json(data: dict[str, Any], weights: dict[str, np.ndarray]) -> GemmProgram:
        specs = {k: spec_from_json(s) for k, s in data["specs"].items()}
        return GemmProgram(list(data["inputs"]), list(data["outputs"]), specs, list(data["steps"]), dict(weights))


def _activate(y: np.ndarray, act: str | None) -> np.ndarray:
    if act == "relu":
        return np.maximum(y, np.float32(0))
    if act == "sigmoid":
        return (1 / (1 + np.exp(-y))).astype(y.dtype)
    if act == "tanh":
        return np.tanh(y)
    return y


def run_step_numpy(step: dict[str, Any], a: np.ndarray, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """One step with numpy (the meaning every backend must reproduce)."""
    y = np.matmul(a, b.T) if step["op"] == "dense" else np.matmul(a, b)
    if bias is not None:
        y = y + bias
    return _activate(y, step["act"]).astype(np.float32, copy=False)


def step_flops(step: dict[str, Any], specs: dict[str, TensorSpec], symbols: dict[str, int]) -> int:
    """2*M*N*K of a step's product (for the profiler and the NPU's cost log)."""
    a, out = specs[step["a"]].concrete(symbols), specs[step["out"]].concrete(symbols)
    return 2 * int(np.prod(out, dtype=np.int64)) * int(a[-1])


__all__ = ["GemmProgram", "run_step_numpy", "step_flops"]

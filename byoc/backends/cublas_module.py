"""The ``cublas`` backend's external module (cupy); numpy-only to import (deployable).
The codegen is in :mod:`.cublas`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..external import PythonExternalModule, register_kind
from ..gemm_program import GemmProgram
from .gemm_module import describe_program


def unavailable() -> str | None:
    """Why cuBLAS cannot run here (no cupy, no CUDA device), or None."""
    try:
        import cupy
    except ImportError:
        return "cupy is not installed (pip install 'tensorkiln[cuda]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - cupy raises its own CUDA errors
        return f"no CUDA device ({type(e).__name__}: {e})"
    return None if count > 0 else "no CUDA device"


def _run_step(cp, step: dict[str, Any], a, b, bias):
    y = cp.matmul(a, b.T) if step["op"] == "dense" else cp.matmul(a, b)
    if bias is not None:
        y += bias
    if step["act"] == "relu":
        cp.maximum(y, 0, out=y)
    elif step["act"] == "sigmoid":
        y = 1 / (1 + cp.exp(-y))
    elif step["act"] == "tanh":
        y = cp.tanh(y)
    return y


@register_kind
class CuBLASModule(PythonExternalModule):
    """A region run by cuBLAS (cupy); inputs and outputs are host arrays."""

    kind = "cublas.gemm"

    def __init__(self, symbol, backend, inputs, outputs, program: GemmProgram | None = None):
        super().__init__(symbol, backend, inputs, outputs)
        self.program = program or GemmProgram()
        self._device_weights: dict[str, Any] | None = None

    def init(self, weights) -> None:
        super().init(weights)
        self.program.weights = dict(self.weights)
        self._device_weights = None

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        import cupy as cp

        self.bind(inputs)
        if self._device_weights is None:
            self._device_weights = {k: cp.asarray(v) for k, v in self.program.weights.items()}
        values = {name: cp.asarray(x) for name, x in zip(self.program.inputs, inputs)}
        values.update(self._device_weights)
        for step in self.program.steps:
            bias = values[step["bias"]] if step["bias"] is not None else None
            values[step["out"]] = _run_step(cp, step, values[step["a"]], values[step["b"]], bias)
        return [cp.asnumpy(values[name]).astype(np.float32, copy=False) for name in self.program.outputs]

    def describe(self) -> dict[str, Any]:
        return {**describe_program(self, self.program), "library": "cuBLAS (cupy.matmul)"}

    def payload(self) -> dict[str, Any]:
        return {"program": self.program.to_json()}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload) -> CuBLASModule:
        return cls(symbol, backend, inputs, outputs, GemmProgram.from_json(payload["program"], {}))


__all__ = ["CuBLASModule", "unavailable"]

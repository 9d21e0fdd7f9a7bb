"""The ``cublas`` backend's external module (cupy); numpy-only to import (deployable).
The codegen is in :mod:`.cublas`.

Each step is ``cupy.matmul`` (cuBLAS ``sgemm`` / ``sgemmStridedBatched``) written into
its destination (``out=``), then the bias and the activation in place. In a CUDA build
(``device = "cuda"``) the host program hands :meth:`CuBLASModule.run_device` the device
buffers it allocated: nothing crosses to the host. Called from CPU code (``run``, the
native callback) the inputs are copied to the GPU and the outputs back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...runtime.cuda import CudaUnavailableError, require_cupy
from ..external import PythonExternalModule, register_kind
from ..gemm_program import GemmProgram
from .gemm_module import describe_program


def unavailable() -> str | None:
    """Why cuBLAS cannot run here (no cupy, no CUDA device), or None: the CUDA
    target's own check."""
    try:
        require_cupy()
    except CudaUnavailableError as error:
        return str(error)
    return None


def _run_step(cp: Any, step: dict[str, Any], a: Any, b: Any, bias: Any, out: Any) -> Any:
    """One step on the device: the product into ``out`` (None: a new array), then the
    bias and the activation in place; returns the result."""
    y = cp.matmul(a, b.T if step["op"] == "dense" else b, out=out)
    if bias is not None:
        y += bias
    if step["act"] == "relu":
        cp.maximum(y, 0, out=y)
    elif step["act"] == "sigmoid":  # 1 / (1 + exp(-y)), in place
        cp.negative(y, out=y)
        cp.exp(y, out=y)
        y += 1
        cp.reciprocal(y, out=y)
    elif step["act"] == "tanh":
        cp.tanh(y, out=y)
    return y


@register_kind
class CuBLASModule(PythonExternalModule):
    """A region run by cuBLAS (cupy): on device buffers in a CUDA build, on host arrays
    (copied to the GPU and back) from CPU code."""

    kind = "cublas.gemm"
    device = "cuda"

    def __init__(self, symbol, backend, inputs, outputs, program: GemmProgram | None = None):
        super().__init__(symbol, backend, inputs, outputs)
        self.program = program or GemmProgram()
        self._device_weights: dict[str, Any] | None = None

    def init(self, weights) -> None:
        super().init(weights)
        self.program.weights = dict(self.weights)
        self._device_weights = None

    def run_device(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """The region on cupy arrays: reads ``inputs``, writes ``outputs`` (allocated by the
        caller with the output specs' shapes); weights are uploaded on the first call."""
        import cupy as cp

        self.bind(inputs)
        if len(outputs) != len(self.outputs):
            raise ValueError(f"external module '{self.symbol}' writes {len(self.outputs)} outputs, got {len(outputs)}")
        if all(o.size == 0 for o in outputs):
            return  # an empty batch: no cuBLAS call with empty operands
        if self._device_weights is None:
            self._device_weights = {k: cp.asarray(v) for k, v in self.program.weights.items()}
        values: dict[str, Any] = dict(zip(self.program.inputs, inputs))
        values.update(self._device_weights)
        destinations = dict(zip(self.program.outputs, outputs))
        for step in self.program.steps:
            bias = values[step["bias"]] if step["bias"] is not None else None
            out = destinations.get(step["out"])
            values[step["out"]] = _run_step(cp, step, values[step["a"]], values[step["b"]], bias, out)
        for name, out in zip(self.program.outputs, outputs):
            if values[name] is not out:  # an output yielded twice, or not made by a step
                out[...] = values[name]

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        import cupy as cp

        symbols = self.bind(inputs)
        outputs = [cp.empty(s.concrete(symbols), np.dtype(s.dtype)) for s in self.outputs]
        self.run_device([cp.asarray(x) for x in inputs], outputs)
        return [cp.asnumpy(o) for o in outputs]

    def describe(self) -> dict[str, Any]:
        return {**describe_program(self, self.program), "library": "cuBLAS (cupy.matmul)"}

    def payload(self) -> dict[str, Any]:
        return {"program": self.program.to_json()}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload) -> CuBLASModule:
        return cls(symbol, backend, inputs, outputs, GemmProgram.from_json(payload["program"], {}))


__all__ = ["CuBLASModule", "unavailable"]

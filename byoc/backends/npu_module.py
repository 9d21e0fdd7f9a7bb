"""The example NPU's external module: its planner (the decision log) and its numpy
execution. numpy only (loadable by a deployed artifact); the codegen is in
:mod:`.example_npu`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..external import PythonExternalModule, register_kind
from ..gemm_program import GemmProgram, run_step_numpy
from .gemm_module import describe_program, run_program

SRAM_BYTES = 256 * 1024
#: the matrix engine's native tile (rows x cols of the output) and its K step
TILE_M, TILE_N, TILE_K = 16, 64, 128
#: activations the matrix engine's output stage applies for free
FUSABLE = ("relu",)


def _dim(d: int | str) -> str:
    return str(d)


def _size(d: int | str, assumed: int) -> int:
    return d if isinstance(d, int) else assumed


def plan(program: GemmProgram) -> list[str]:
    """The NPU's decisions for each step of ``program``, one line each."""
    log = [f"region: {len(program.steps)} step(s), inputs {', '.join(program.inputs)}, outputs {', '.join(program.outputs)}"]
    for k, step in enumerate(program.steps):
        a, b, out = (program.specs[step[n]] for n in ("a", "b", "out"))
        m_dims, n = out.shape[:-1], out.shape[-1]
        kk = a.shape[-1]
        m = "*".join(_dim(d) for d in m_dims) or "1"
        # memory tier: weights (constants) and one output tile row block must fit in SRAM
        rows = int(np.prod([_size(d, TILE_M) for d in m_dims], dtype=np.int64)) if m_dims else 1
        need = 4 * (_size(kk, TILE_K) * _size(n, TILE_N) + rows * (_size(kk, TILE_K) + _size(n, TILE_N)))
        tier = "sram" if need <= SRAM_BYTES else "dram (streamed by tiles)"
        tm = min(TILE_M, rows) if isinstance(rows, int) else TILE_M
        tn = min(TILE_N, _size(n, TILE_N))
        tk = min(TILE_K, _size(kk, TILE_K))
        weight = "weight " + step["b"] + (" (bound constant)" if step["b"] in program.weights else " (input)")
        log.append(
            f"step {k} [{step['composite']}]: {step['op']} M={m} N={_dim(n)} K={_dim(kk)} -> matrix engine; "
            f"{weight}; tier {tier} ({need} bytes); tile {tm}x{tn}x{tk}"
        )
        fused = []
        if step["bias"] is not None:
            fused.append(f"bias {step['bias']}")
        if step["act"] in FUSABLE:
            fused.append(step["act"])
        if fused:
            log.append(f"step {k}: fused into the matrix engine output stage: {', '.join(fused)}")
        if step["act"] is not None and step["act"] not in FUSABLE:
            log.append(f"step {k}: {step['act']} -> vector engine (not fusable), one pass over {m}x{_dim(n)}")
    return log


@register_kind
class NPUModule(PythonExternalModule):
    """A region planned for the example NPU; computes with numpy."""

    kind = "example_npu.gemm"

    def __init__(self, symbol, backend, inputs, outputs, program: GemmProgram | None = None):
        super().__init__(symbol, backend, inputs, outputs)
        self.program = program or GemmProgram()
        self.log = plan(self.program)

    def init(self, weights) -> None:
        super().init(weights)
        self.program.weights = dict(self.weights)

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        self.bind(inputs)
        return run_program(self.program, inputs, run_step_numpy)

    def describe(self) -> dict[str, Any]:
        return {**describe_program(self, self.program), "log": list(self.log)}

    def payload(self) -> dict[str, Any]:
        return {"program": self.program.to_json()}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload) -> NPUModule:
        return cls(symbol, backend, inputs, outputs, GemmProgram.from_json(payload["program"], {}))


__all__ = ["NPUModule", "plan"]

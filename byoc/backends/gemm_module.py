"""What the GEMM-style backends share: a region compiled to a :class:`GemmProgram`, run
step by step (each backend says how a step runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..external import ExternalModule, TensorSpec
from ..gemm_program import GemmProgram, step_flops


def run_program(program: GemmProgram, inputs: Sequence[np.ndarray], run_step) -> list[np.ndarray]:
    """Evaluate ``program`` on ``inputs``; ``run_step(step, a, b, bias)`` computes one step."""
    values: dict[str, np.ndarray] = dict(zip(program.inputs, inputs))
    values.update(program.weights)
    for step in program.steps:
        bias = values[step["bias"]] if step["bias"] is not None else None
        values[step["out"]] = run_step(step, values[step["a"]], values[step["b"]], bias)
    return [values[name] for name in program.outputs]


def describe_program(module: ExternalModule, program: GemmProgram) -> dict[str, Any]:
    """The profiler's view of a GEMM module: one entry per step, flops where shapes are static."""
    steps = []
    for step in program.steps:
        static = all(isinstance(d, int) for s in program.specs.values() for d in s.shape)
        steps.append(
            {
                "composite": step["composite"],
                "op": step["op"],
                "bias": step["bias"] is not None,
                "act": step["act"],
                "flops": step_flops(step, program.specs, {}) if static else None,
            }
        )
    return {**ExternalModule.describe(module), "steps": steps}


def program_specs(program: GemmProgram) -> tuple[list[TensorSpec], list[TensorSpec]]:
    return [program.specs[n] for n in program.inputs], [program.specs[n] for n in program.outputs]

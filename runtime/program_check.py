"""A loaded graph program checked against what the model says it is, before it runs.

``graph.json`` is read back from disk; the native code was compiled for the program the
compiler made. Beyond the format (``GraphProgram.from_json``), a program must agree with
its signature and weights, and its memory plan with its node order:

- every input, output and weight tensor has the shape and dtype of the signature's
  input/output and the weight spec it names; each tensor's ``dynamic_axes`` are its
  symbolic dims; every symbol a tensor uses is bound by the inputs;
- every node writes a temporary or an output (its last argument: the calling
  convention); the memory plan is the one the planner makes for these nodes in this
  order (so two tensors that are live at once never share a storage, and every
  temporary is used by some node).

What it cannot see is an edit that keeps the program consistent (two independent nodes
swapped, a static dim changed in every place): the manifest's hash catches those.

A program that fails is a ProgramFormatError naming what disagrees. Pure stdlib + numpy.

Example: ``check_program(program, weight_specs)``
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .dim_expr import free_symbols
from .graph_program import GraphProgram, ProgramFormatError
from .memory_plan import plan_memory


def _spec_mismatch(k: int, tensor: Any, shape: tuple, dtype: np.dtype, what: str) -> None:
    if tuple(tensor.shape) != tuple(shape) or tensor.dtype != dtype:
        raise ProgramFormatError(
            f"tensor {k} ('{tensor.name}') is {tensor.dtype}{list(tensor.shape)}, but {what} is {dtype}{list(shape)}"
        )


def check_program(program: GraphProgram, weight_specs: Sequence[dict[str, Any]]) -> None:
    """Raise ProgramFormatError unless ``program`` agrees with its signature, the
    ``weight_specs`` (``{"name", "shape", "dtype"}`` each) and its memory plan."""
    signature = program.signature
    bound: set[str] = set()
    for spec in signature.inputs:
        for d in spec.shape:
            if isinstance(d, str):
                bound |= free_symbols(d)
    for k, tensor in enumerate(program.tensors):
        if tensor.kind == "input":
            spec = signature.inputs[tensor.index]
            _spec_mismatch(k, tensor, spec.shape, spec.dtype, f"input '{spec.name}'")
        elif tensor.kind == "output":
            spec = signature.entry_outputs[tensor.index]
            _spec_mismatch(k, tensor, spec.shape, spec.dtype, f"output '{spec.name}'")
        elif tensor.kind == "weight":
            if not 0 <= tensor.index < len(weight_specs):
                raise ProgramFormatError(f"tensor {k} ('{tensor.name}'): weight {tensor.index} of {len(weight_specs)}")
            spec = weight_specs[tensor.index]
            _spec_mismatch(k, tensor, tuple(spec["shape"]), np.dtype(spec["dtype"]), f"weight '{spec['name']}'")
        symbolic = tuple(a for a, d in enumerate(tensor.shape) if isinstance(d, str))
        if tuple(tensor.dynamic_axes) != symbolic:
            raise ProgramFormatError(
                f"tensor {k} ('{tensor.name}'): dynamic axes {list(tensor.dynamic_axes)}, its symbolic dims are {list(symbolic)}"
            )
        unbound = set().union(*(free_symbols(d) for d in tensor.shape if isinstance(d, str))) - bound
        if unbound:
            raise ProgramFormatError(f"tensor {k} ('{tensor.name}'): dims use {sorted(unbound)}, which no input binds")
    for k, node in enumerate(program.nodes):
        if not node.args or program.tensors[node.args[-1]].kind not in ("temp", "output"):
            raise ProgramFormatError(f"node {k} ('{node.kernel}') writes no temporary or output (its last argument)")
    _check_memory_plan(program)


def _check_memory_plan(program: GraphProgram) -> None:
    """The recorded storages must be the plan of these nodes in this order."""
    fresh = GraphProgram(program.signature, [replace(t, storage=-1) for t in program.tensors], program.nodes)
    try:
        expected = plan_memory(fresh)
    except ValueError as e:
        raise ProgramFormatError(f"memory plan: {e}") from e
    if [list(m) for m in program.storages] != expected:
        raise ProgramFormatError(
            "the memory plan does not match the nodes (their order, or the temporaries they use, was changed)"
        )


__all__ = ["check_program"]

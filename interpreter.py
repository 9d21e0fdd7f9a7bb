"""The reference executor: evaluates a graph-dialect module op by op with numpy.

Slow and simple on purpose: it is the oracle that compiled code is checked against,
and the "debug" executor (``tk.create_executor("interpreter", module)``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, bf16, f16

from .dialects.graph import FusedOp, GraphOp
from .driver.pipelines import LEGALIZE_16BIT_FLOATS
from .passes.pipeline import PassContext, run_pipeline
from .dialects.functions import find_function, signature_of


def _uses_16bit_floats(function: func.FuncOp) -> bool:
    """Whether a float16 or bfloat16 tensor appears in ``function`` (its arguments or an op's result)."""
    values = [*function.body.block.args, *(r for op in function.walk() for r in op.results)]
    return any(isinstance(v.type, TensorType) and v.type.element_type in (bf16, f16) for v in values)


def evaluate_function(function: func.FuncOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``function`` on numpy arrays (already checked against its signature)."""
    values = dict(zip(function.body.block.args, inputs))
    for op in function.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [values[v] for v in op.arguments]
        # graph ops, fused groups, and other ops with numpy semantics (byoc regions and
        # external calls, which may have several results: they return a tuple)
        if not isinstance(op, GraphOp | FusedOp) and not callable(getattr(op, "reference", None)):
            raise NotImplementedError(f"the interpreter cannot evaluate '{op.name}'")
        args = [values[v] for v in op.operands]
        result = op.reference(*args)
        results = result if isinstance(result, tuple) else (result,)
        for value, array in zip(op.results, results, strict=True):
            values[value] = np.asarray(array)
    raise ValueError(f"function '{function.sym_name.data}' has no func.return")


def interpret(module: ModuleOp, function: str = "main") -> Callable[..., np.ndarray | tuple[np.ndarray, ...]]:
    """A callable evaluating ``function`` of a graph module with numpy reference semantics.

    Example::

        f = interpret(module)
        y = f(np.ones((1, 784), np.float32))
    """
    fn = find_function(module, function)
    signature = signature_of(fn)
    if _uses_16bit_floats(fn):  # 16-bit float ops compute in float32, as compiled code does
        module = module.clone()
        run_pipeline(module, (LEGALIZE_16BIT_FLOATS,), PassContext(opt_level=0, dump_ir=False))
        fn = find_function(module, function)

    def run(*args: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        arrays = signature.check_inputs(args)
        outputs = evaluate_function(fn, arrays)
        outputs = [o.astype(spec.dtype, copy=False) for o, spec in zip(outputs, signature.outputs)]
        # like compiled code: every output is a fresh array (not an input, not another output)
        seen = {id(a) for a in arrays}
        for k, o in enumerate(outputs):
            if id(o) in seen:
                outputs[k] = o.copy()
            seen.add(id(outputs[k]))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    run.signature = signature  # type: ignore[attr-defined]
    return run

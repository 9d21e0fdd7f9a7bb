"""``tk.build``: a graph-dialect module to a callable native module."""

from __future__ import annotations

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp

from .backends.llvm.jit import CPUTarget, jit_compile
from .dialects.graph import ConstantOp
from .dialects.graph.types import WeightAttr
from .errors import UnsupportedOperatorError
from .interpreter import find_function
from .lowering.expand_math import ExpandMathPass
from .lowering.graph_to_te import GraphToTEPass, unsupported_ops
from .lowering.loop_to_llvm import LoopToLLVMPass
from .lowering.te_to_loop import TEToLoopPass, entry_layout
from .runtime.module import CompiledModule
from .signature import signature_of


def weight_array(data: WeightAttr | DenseIntOrFPElementsAttr) -> np.ndarray:
    """The numpy data of a constant, as listed in a lowered function's ``tk.weights``."""
    return data.array if isinstance(data, WeightAttr) else ConstantOp(data).array()


def check_supported(module: ModuleOp) -> None:
    """Raise one UnsupportedOperatorError naming every op that cannot be compiled."""
    missing = unsupported_ops(module)
    if missing:
        listed = ", ".join(f"{name} (x{n})" for name, n in sorted(missing.items()))
        raise UnsupportedOperatorError(f"cannot compile {sum(missing.values())} ops: {listed}")


def lower_to_loops(module: ModuleOp) -> ModuleOp:
    """A copy of a graph module lowered to the loop dialect (host function + kernels)."""
    check_supported(module)
    module.verify()
    lowered = module.clone()
    ctx = Context()
    GraphToTEPass().apply(ctx, lowered)
    TEToLoopPass().apply(ctx, lowered)
    return lowered


def lower_to_llvm_dialect(loops: ModuleOp) -> ModuleOp:
    """Lower a loop-dialect module (from :func:`lower_to_loops`) in place to xDSL's llvm
    dialect: f32 exp/log/tanh/erf/pow expanded to vectorisable arith code, then loop-to-llvm."""
    ctx = Context()
    for step in (ExpandMathPass(), LoopToLLVMPass()):
        step.apply(ctx, loops)
    return loops


def build(module: ModuleOp, target: str = "llvm", *, function: str = "main") -> CompiledModule:
    """Compile ``function`` of a graph module for ``target``; returns a callable.

    Example::

        lib = tk.build(module, target="llvm")
        y = lib(np.ones((1, 784), np.float32))
    """
    cpu = CPUTarget.parse(target)
    signature = signature_of(find_function(module, function))
    loops = lower_to_loops(module)
    _, _, weights = entry_layout(find_function(loops, function))
    jit = jit_compile(lower_to_llvm_dialect(loops), cpu)
    return CompiledModule(
        jit.address(function), signature, [weight_array(w) for w in weights], keep_alive=jit
    )

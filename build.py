"""``tk.build``: a graph-dialect module to a callable native module.

The work is the driver's (``driver/``): this is the public entry, which also applies a
tuning log (the tuner sits above the driver). ``lower_to_loops``, ``lower_to_llvm_dialect``
and ``jit_loops`` (scheduling by hand) are public here too.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from . import driver
from .driver import BuildRequest, Target, jit_loops, lower_to_llvm_dialect, lower_to_loops, parse_target
from .driver.compilable import build_context
from .driver.pipelines import check_precision
from .errors import UnsupportedOperatorError


def build(
    module: ModuleOp,
    target: str | Target = "llvm",
    *,
    function: str = "main",
    opt_level: int | None = None,
    dump_ir: str | None = None,
    tuning_log: str | None = None,
    precision: str = "fp32",
) -> Any:
    """Compile ``function`` of a graph module for ``target``; returns a callable.

    The graph is optimized at ``opt_level`` (default: the current PassContext's, O2:
    constant folding, simplification, CSE, batch-norm folding, operator fusion), then
    lowered to native code. ``dump_ir="dir"`` writes the IR after every pass there.
    ``lib.pass_timings`` lists (pass, seconds); ``lib.compile_seconds`` is the total.
    ``tuning_log``: a ``tk.tune`` log; each kernel with a record gets its fastest
    record's schedule, the others their default schedule. ``precision="bf16"``: linear
    layers with constant weights as bfloat16 products with float32 sums (as
    torch.autocast; ~1e-2 relative error); ``"fp32"`` (default) keeps float32 models
    float32 (a bfloat16 model's linear layers are bfloat16 products either way).

    Example::

        lib = tk.build(module, target="llvm")
        y = lib(np.ones((1, 784), np.float32))
    """
    parsed = parse_target(target)
    schedule = None
    if tuning_log is not None:
        # (the tuner is loaded only by builds given a log: it sits above the driver)
        from .tuning.dispatch import schedule_from_log

        def schedule(loops: ModuleOp, run_default: Any) -> None:
            schedule_from_log(loops, str(parsed), tuning_log, run_default)

    request = BuildRequest(
        function=function, ctx=build_context(opt_level, dump_ir), schedule=schedule, precision=check_precision(precision)
    )
    return driver.build(module, parsed, request)


__all__ = ["UnsupportedOperatorError", "build", "jit_loops", "lower_to_llvm_dialect", "lower_to_loops"]

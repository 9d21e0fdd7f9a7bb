"""``apply-schedule``: replay a schedule trace on a kernel, from tensorkiln-opt.

    tensorkiln-opt k.mlir -p 'apply-schedule{kernel="matmul_0" trace="[{\\"primitive\\": \\"split\\", \\"args\\": {\\"loop\\": \\"i0\\", \\"factor\\": 4}}]"}'

``kernel`` is the kernel function's symbol name; ``trace`` the JSON text of a trace
(:func:`tensorkiln.schedule.trace_to_json`, quotes escaped as ``\\"`` in the pass
option). The Python API (:class:`tensorkiln.schedule.Schedule`) is the main way in;
this pass makes a stored trace usable on IR files and in lit tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from .nest import ScheduleError
from .schedule import Schedule


@dataclass(frozen=True)
class ApplySchedulePass(ModulePass):
    """Replay the JSON ``trace`` on the kernel function named ``kernel``."""

    name = "apply-schedule"

    kernel: str = ""
    trace: str = "[]"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp)]
        found = [f for f in functions if f.sym_name.data == self.kernel]
        if not found:
            names = ", ".join(f.sym_name.data for f in functions) or "none"
            raise PassFailedException(f"apply-schedule: no function named '{self.kernel}' (functions: {names})")
        try:
            Schedule.replay(found[0], self.trace)
        except ScheduleError as error:
            raise PassFailedException(f"apply-schedule on '{self.kernel}': {error}") from error


__all__ = ["ApplySchedulePass"]

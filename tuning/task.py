"""Tuning tasks: the distinct kernels of a model, with a stable workload key.

A *task* is one kernel of a loop-level module (``te-to-loop``'s output, after graph
fusion), unscheduled, for one target. Two kernels with the same loop IR -- up to the
function's symbol name -- are the same workload, so a model with eight identical
ResNet blocks has one task per distinct conv kernel, weighted by how often it occurs::

    tasks = tk.extract_tasks(module, "llvm")
    for t in tasks:
        print(t.name, t.weight, t.flops, t.key)

The key is a hash of the kernel's printed IR (symbol renamed to ``@kernel``) and of the
target's CPU and features: records measured on another CPU never apply here.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, _FloatType
from xdsl.ir import Operation
from xdsl.parser import Parser

from ..dialects import loop
from ..driver import parse_target
from ..driver.compilable import check_supported
from ..driver.pipelines import TO_LOOPS, optimize_graph
from ..passes.pipeline import PassContext, run_pipeline
from ..schedule.nest import static_trip_bound
from ..universe import make_context

#: the name a kernel's symbol takes in its normalised text (and in measured modules)
KERNEL_SYMBOL = "kernel"


def normalized_kernel_text(kernel: func.FuncOp) -> str:
    """The kernel printed alone, its symbol renamed to ``@kernel`` (SSA names are
    renumbered by the printer, so equal computations print equal text)."""
    copy = kernel.clone()
    copy.sym_name = StringAttr(KERNEL_SYMBOL)
    return str(ModuleOp([copy]))


def target_fingerprint(target: str) -> str:
    """What of a target changes generated code: the CPU name and its features."""
    cpu = parse_target(target).config
    return f"{cpu.cpu}|{cpu.features}|O{cpu.opt_level}"


def workload_key(kernel_text: str, target: str, constants: Sequence[int] = ()) -> str:
    """A stable key of (normalised kernel IR, target, the arguments that are constant
    weights in the model): 16 hex digits of SHA-256. The constants matter because a
    schedule may re-lay out a constant argument (packed at compile time), which it
    cannot do to the same kernel fed a run-time tensor."""
    digest = hashlib.sha256(kernel_text.encode())
    digest.update(b"\0" + target_fingerprint(target).encode())
    if constants:
        digest.update(b"\0constants:" + ",".join(map(str, sorted(constants))).encode())
    return digest.hexdigest()[:16]


_FLOAT_OPS = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    arith.NegfOp,
)


def _counts_as_flop(op: Operation) -> bool:
    if isinstance(op, _FLOAT_OPS):
        return True
    # math.* on floats (exp, tanh, sqrt, fma...) count one each, as TVM's FLOP counter does
    return op.dialect_name() == "math" and bool(op.results) and isinstance(op.results[0].type, _FloatType)


def kernel_flops(kernel: func.FuncOp) -> int:
    """Floating-point operations one call performs: each float arith/math op times the
    trip counts of the loops around it (loops of unknown trip count count once)."""
    total = 0

    def visit(op: Operation, times: int) -> None:
        nonlocal total
        if isinstance(op, loop.ForOp):
            trips = static_trip_bound(op)
            times *= trips if trips is not None else 1
        elif _counts_as_flop(op):
            total += times
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    visit(inner, times)

    for op in kernel.body.block.ops:
        visit(op, 1)
    return total


def output_arguments(kernel: func.FuncOp) -> list[int]:
    """Indices of the kernel arguments it stores to (its outputs)."""
    args = list(kernel.body.block.args)
    written = {op.buffer for op in kernel.walk() if isinstance(op, loop.StoreOp)}
    return [k for k, a in enumerate(args) if a in written]


def is_static(kernel: func.FuncOp) -> bool:
    """Every buffer argument has a static shape (dynamic kernels are not tuned)."""
    return all(
        isinstance(t, MemRefType) and all(d >= 0 for d in t.get_shape()) for t in kernel.function_type.inputs.data
    )


@dataclass
class Task:
    """One distinct kernel to tune.

    ``kernel_text``: the unscheduled kernel (symbol ``@kernel``) as a module's text;
    ``names``: the symbols of the kernels in the model that share it (``weight`` of them);
    ``constants``: indices of the arguments that are constant weights in the model (a
    schedule may pack those, see :func:`workload_key`).
    """

    key: str
    target: str
    tag: str
    kernel_text: str
    flops: int
    names: list[str] = field(default_factory=list)
    arg_shapes: list[tuple[tuple[int, ...], str]] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    constants: tuple[int, ...] = ()

    @property
    def weight(self) -> int:
        return len(self.names)

    @property
    def name(self) -> str:
        """A readable name: the kernel tag and its argument shapes."""
        shapes = ",".join("x".join(map(str, s)) or "scalar" for s, _ in self.arg_shapes)
        return f"{self.tag}[{shapes}]"

    def kernel(self) -> func.FuncOp:
        """A fresh copy of the unscheduled kernel, alone in its own module (the text is
        parsed once; copies are clones, several times faster than parsing)."""
        parsed = self.__dict__.get("_parsed")
        if parsed is None:
            parsed = self.__dict__["_parsed"] = parse_kernel_module(self.kernel_text)[0]
        return loop.kernels(parsed.clone())[0]

    def __repr__(self) -> str:
        return f"Task({self.name}, weight={self.weight}, flops={self.flops}, key={self.key})"


def parse_kernel_module(text: str) -> tuple[ModuleOp, func.FuncOp]:
    """Parse a measured module's text; returns it and its ``tk.kernel`` function."""
    module = Parser(make_context(), text).parse_module()
    found = loop.kernels(module)
    if len(found) != 1:
        raise ValueError(f"expected one kernel (a function with {loop.KERNEL_ATTR}) in the module, found {len(found)}")
    return module, found[0]


def _element_name(t: MemRefType) -> str:
    return str(t.element_type)


def task_of(kernel: func.FuncOp, target: str, constants: Collection[int] = ()) -> Task:
    """The task of one (unscheduled, static) kernel; ``constants``: its arguments that
    are constant weights in the model."""
    text = normalized_kernel_text(kernel)
    types = kernel.function_type.inputs.data
    constants = tuple(sorted(constants))
    return Task(
        key=workload_key(text, target, constants),
        constants=constants,
        target=target,
        tag=loop.kernel_tag(kernel),
        kernel_text=text,
        flops=kernel_flops(kernel),
        names=[kernel.sym_name.data],
        arg_shapes=[(tuple(t.get_shape()), _element_name(t)) for t in types],
        outputs=output_arguments(kernel),
    )


def tasks_of_loop_module(loops: ModuleOp, target: str) -> list[Task]:
    """The distinct static kernels of a loop-level module, in first-occurrence order."""
    from ..schedule.strategies.analysis import constant_arguments

    constants = constant_arguments(loops)
    found: dict[str, Task] = {}
    for kernel in loop.kernels(loops):
        if not is_static(kernel):
            continue
        task = task_of(kernel, target, constants.get(kernel.sym_name.data, ()))
        if task.key in found:
            found[task.key].names.append(kernel.sym_name.data)
        else:
            found[task.key] = task
    return list(found.values())


def lower_for_tuning(module: ModuleOp, opt_level: int | None = None) -> ModuleOp:
    """A graph module as ``tk.build`` sees it before scheduling: graph optimization
    (fusion) at the current PassContext's level, then ``graph-to-te,te-to-loop``."""
    import dataclasses

    ctx = PassContext.current()
    if opt_level is not None:
        ctx = dataclasses.replace(ctx, opt_level=opt_level)
    ctx = dataclasses.replace(ctx, dump_ir=False)
    check_supported(module)
    module.verify()
    work = module.clone()
    optimize_graph(work, ctx)
    run_pipeline(work, TO_LOOPS, ctx)
    return work


def extract_tasks(module: ModuleOp, target: str = "llvm", *, opt_level: int | None = None) -> list[Task]:
    """The distinct kernels of a graph module after fusion, as tuning tasks.

    Kernels with symbolic (dynamic) dims are left out: they are compiled with their
    default schedule. Example::

        tasks = tk.extract_tasks(module, "llvm")
        print([(t.tag, t.weight, t.flops) for t in tasks])
    """
    return tasks_of_loop_module(lower_for_tuning(module, opt_level), target)


def total_flops(tasks: Sequence[Task]) -> int:
    return sum(t.flops * t.weight for t in tasks)


def gflops(flops: int, seconds: float) -> float:
    return flops / seconds / 1e9 if seconds > 0 and math.isfinite(seconds) else 0.0

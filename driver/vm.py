"""Graph function with control flow -> VM bytecode + compiled straight-line functions.

The function is walked block by block. Runs of ordinary graph ops (a *segment*) are
outlined into a ``func.func`` of their own (inputs: the values they read from
outside, outputs: the values read after them) and compiled by the target's build
(a callback: :func:`compile_vm`; ``driver/cpu.py`` gives the ``llvm`` kind's); ``graph.if`` and ``graph.while`` become jumps (:mod:`tensorkiln.runtime.vm`
lists the instructions). Regions are isolated from above, so a region's block
arguments simply take the registers of the op's operands. Constants used by a
segment are cloned into it (weights by reference); a constant used by control flow
itself or returned is loaded into a register with ``const``.

Example::

    vm = tensorkiln.driver.build_vm(module)   # a VMModule: vm(x), vm.program.disassemble()
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from ..dialects.graph import ConstantOp
from ..dialects.graph.control import CONTROL_FLOW_OPS, IfOp, RegionYieldOp, WhileOp
from ..dialects.graph.host import CheckOp, DataSizeOp
from ..runtime.artifact import META, VM_ARTIFACT_FORMAT, VM_CONSTANTS, VM_PROGRAM
from ..runtime.manifest import seal
from ..runtime.module import CompiledModule
from ..runtime.profiler import BenchmarkResult, KernelStat, PassTimings, ProfileReport
from ..runtime.npz import save_arrays
from ..runtime.vm import VirtualMachine, VMProgram
from ..dialects.functions import find_function, signature_of
from .export import ExportError


def needs_vm(function: func.FuncOp) -> bool:
    """Whether ``function`` holds ops only the VM runs: control flow, sizes read from data
    (a straight-line function computes its run-time checks' predicates as outputs)."""
    return any(isinstance(op, CONTROL_FLOW_OPS + (DataSizeOp,)) for op in function.walk())


def sizes_first(block: Block) -> list[Operation]:
    """``block``'s ops with each ``graph.data_size`` moved up, with what its count
    depends on, to as early as it can run: the sizes a model reads from independent
    data are then read together, between two functions, not one function apart each."""
    ordered: list[Operation] = []
    placed: set[Operation] = set()

    def place(root: Operation) -> None:  # root after everything of this block it reads (no recursion: long chains)
        stack = [(root, False)]
        while stack:
            op, ready = stack.pop()
            if ready:
                ordered.append(op)
                continue
            if op in placed:
                continue
            placed.add(op)
            stack.append((op, True))
            for value in reversed(op.operands):
                owner = value.owner
                if isinstance(owner, Operation) and owner.parent_block() is block and owner not in placed:
                    stack.append((owner, False))

    sizes = [op for op in block.ops if isinstance(op, DataSizeOp)]
    for op in sizes:  # the counts, then the sizes: read together where they can be
        if isinstance(op.count.owner, Operation) and op.count.owner.parent_block() is block:
            place(op.count.owner)
    for op in [*sizes, *block.ops]:
        place(op)
    return ordered


class _Emitter:
    def __init__(self) -> None:
        self.code: list[tuple] = []
        self.n_registers = 0
        self.functions: list[func.FuncOp] = []
        self.constants: list[np.ndarray] = []
        #: graph.check ops of the segment being collected: checked after its call
        self.pending_checks: list[CheckOp] = []

    def fresh(self, n: int = 1) -> list[int]:
        regs = list(range(self.n_registers, self.n_registers + n))
        self.n_registers += n
        return regs

    def register_of(self, value: SSAValue, regs: dict[SSAValue, int]) -> int:
        if value not in regs:
            owner = value.owner
            if not isinstance(owner, ConstantOp):
                raise ValueError(f"VM compiler: {value} has no register (defined by {getattr(owner, 'name', owner)})")
            (r,) = self.fresh()
            self.code.append(("const", r, len(self.constants)))
            self.constants.append(np.asarray(owner.array()))
            regs[value] = r
        return regs[value]

    # -- blocks ---------------------------------------------------------------------

    def emit_block(self, block: Block, arg_regs: Sequence[int], name: str) -> list[int]:
        """Emit ``block``'s code with its arguments in ``arg_regs``; returns the registers
        of what it returns (func.return or graph.region_yield)."""
        regs: dict[SSAValue, int] = dict(zip(block.args, arg_regs))
        segment: list[Operation] = []
        for op in sizes_first(block):
            if isinstance(op, func.ReturnOp | RegionYieldOp):
                self.flush(segment, regs, name)
                return [self.register_of(v, regs) for v in op.operands]
            if isinstance(op, IfOp):
                self.flush(segment, regs, name)
                segment = []
                self.emit_if(op, regs, name)
            elif isinstance(op, WhileOp):
                self.flush(segment, regs, name)
                segment = []
                self.emit_while(op, regs, name)
            elif isinstance(op, DataSizeOp):  # what follows is compiled for the size it reads
                self.flush(segment, regs, name)
                (r,) = self.fresh()
                lower, upper = op.bounds
                self.code.append(("size", self.register_of(op.count, regs), r, op.symbol, lower, -1 if upper is None else upper))
                regs[op.carrier] = r
            elif isinstance(op, CheckOp):  # its predicate is a result of the segment; checked after it
                self.pending_checks.append(op)
            elif not isinstance(op, ConstantOp):
                segment.append(op)
        raise ValueError(f"VM compiler: block of '{name}' has no terminator")

    def flush(self, segment: list[Operation], regs: dict[SSAValue, int], name: str) -> None:
        """Outline ``segment`` into a function and emit its call, then the checks of
        what it computed."""
        self.outline(segment, regs, name)
        for check in self.pending_checks:
            self.code.append(("check", self.register_of(check.pred, regs), check.message.data, check.error.data))
        self.pending_checks = []

    def outline(self, segment: list[Operation], regs: dict[SSAValue, int], name: str) -> None:
        if not segment:
            return
        inside = set(segment)
        defined = {r for op in segment for r in op.results}
        inputs: list[SSAValue] = []
        constants: list[ConstantOp] = []
        for op in segment:
            for v in op.operands:
                if v in defined or v in inputs:
                    continue
                if isinstance(v.owner, ConstantOp) and v not in regs:
                    if v.owner not in constants:
                        constants.append(v.owner)
                else:
                    inputs.append(v)
        outputs = [r for op in segment for r in op.results if any(u.operation not in inside for u in r.uses)]
        block = Block(arg_types=[v.type for v in inputs])
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
        for k, arg in enumerate(block.args):
            arg.name_hint = f"a{k}"
        for c in constants:
            clone = c.clone()
            block.add_op(clone)
            mapping[c.result] = clone.result
        for op in segment:
            clone = op.clone(value_mapper=mapping)
            block.add_op(clone)
        block.add_op(func.ReturnOp(*(mapping[v] for v in outputs)))
        fname = f"{name}_seg{len(self.functions)}"
        self.functions.append(func.FuncOp(fname, ([v.type for v in inputs], [v.type for v in outputs]), Region(block)))
        out_regs = self.fresh(len(outputs))
        self.code.append(("call", len(self.functions) - 1, tuple(self.register_of(v, regs) for v in inputs), tuple(out_regs)))
        regs.update(zip(outputs, out_regs))
        segment.clear()

    def emit_if(self, op: IfOp, regs: dict[SSAValue, int], name: str) -> None:
        pred = self.register_of(op.pred, regs)
        inputs = [self.register_of(v, regs) for v in op.inputs]
        out = self.fresh(len(op.outputs))
        branch = len(self.code)
        self.code.append(None)  # jump_unless, patched below
        then_values = self.emit_block(op.then_region.block, inputs, f"{name}_then{branch}")
        self.code.append(("move", tuple(out), tuple(then_values)))
        leave = len(self.code)
        self.code.append(None)  # jump to the end, patched below
        self.code[branch] = ("jump_unless", pred, len(self.code))
        else_values = self.emit_block(op.else_region.block, inputs, f"{name}_else{branch}")
        self.code.append(("move", tuple(out), tuple(else_values)))
        self.code[leave] = ("jump", len(self.code))
        regs.update(zip(op.outputs, out))

    def emit_while(self, op: WhileOp, regs: dict[SSAValue, int], name: str) -> None:
        carried = self.fresh(len(op.inputs))
        self.code.append(("move", tuple(carried), tuple(self.register_of(v, regs) for v in op.inputs)))
        top = len(self.code)
        (pred,) = self.emit_block(op.cond_region.block, carried, f"{name}_cond{top}")
        exit_jump = len(self.code)
        self.code.append(None)
        body_values = self.emit_block(op.body_region.block, carried, f"{name}_body{top}")
        self.code.append(("move", tuple(carried), tuple(body_values)))
        self.code.append(("jump", top))
        self.code[exit_jump] = ("jump_unless", pred, len(self.code))
        regs.update(zip(op.outputs, carried))


def compile_vm_program(module: ModuleOp, function: str = "main") -> tuple[VMProgram, list[ModuleOp]]:
    """The bytecode of ``function`` and one graph module per straight-line function."""
    fn = find_function(module, function)
    if not needs_vm(fn):
        # one straight-line function: the module itself (a build the disk cache shares with AOT)
        n_in, n_out = len(fn.body.block.args), len(fn.function_type.outputs.data)
        code = [("call", 0, tuple(range(n_in)), tuple(range(n_in, n_in + n_out))), ("ret", tuple(range(n_in, n_in + n_out)))]
        return VMProgram(signature_of(fn), code, n_in + n_out, list(range(n_in)), [fn.sym_name.data]), [module]
    emitter = _Emitter()
    inputs = emitter.fresh(len(fn.body.block.args))
    results = emitter.emit_block(fn.body.block, inputs, fn.sym_name.data)
    emitter.code.append(("ret", tuple(results)))
    modules = []
    for f in emitter.functions:
        m = ModuleOp([f])
        m.verify()
        modules.append(m)
    program = VMProgram(
        signature_of(fn),
        emitter.code,
        emitter.n_registers,
        inputs,
        [f.sym_name.data for f in emitter.functions],
        emitter.constants,
    )
    program.check()
    return program, modules


class VMModule(VirtualMachine):
    """A model run by the VM; ``program.disassemble()`` shows its bytecode, ``functions``
    the compiled straight-line functions."""

    compile_seconds: float
    pass_timings: list[tuple[str, float]]
    first_run_seconds: float | None = None

    def __call__(self, *args: Any) -> Any:
        if self.first_run_seconds is None:
            start = time.perf_counter()
            result = super().__call__(*args)
            self.first_run_seconds = time.perf_counter() - start
            return result
        return super().__call__(*args)

    def profile(self, *inputs: Any, runs: int = 10) -> ProfileReport:
        """Per compiled function: calls per run, total and mean time, share (slowest first);
        plus compile time, first-run and steady-state latency of the VM."""
        if self.first_run_seconds is None:
            self(*inputs)
        totals: dict[str, float] = {}
        calls: dict[str, int] = {}
        for _ in range(runs):
            _, seconds = self.run_timed(*inputs)
            for name, times in seconds.items():
                totals[name] = totals.get(name, 0.0) + sum(times)
                calls[name] = calls.get(name, 0) + len(times)
        total = sum(totals.values())
        stats = [
            KernelStat(n, calls[n] // runs, totals[n] / runs, totals[n] / calls[n], totals[n] / total if total else 0.0)
            for n in totals
        ]
        stats.sort(key=lambda k: k.total_seconds, reverse=True)
        steady = self.benchmark(*inputs, number=max(1, runs), repeat=5).median
        return ProfileReport(stats, self.compile_seconds, self.first_run_seconds, steady, total / runs, runs, executor="vm")

    def benchmark(self, *inputs: Any, number: int = 10, repeat: int = 5, executor: str = "vm") -> BenchmarkResult:
        return super().benchmark(*inputs, number=number, repeat=repeat)

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write a VM artifact: ``vm.json`` (the bytecode), ``constants.npz``, and one
        artifact per compiled function under ``functions/<k>``; ``load_module`` runs it."""
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise ExportError(f"export_library: {root} exists and is not a directory")
        root.mkdir(parents=True, exist_ok=True)
        names = []
        for k, fn in enumerate(self.functions):
            fn.export_library(root / "functions" / str(k))
            names.append(f"functions/{k}")
        with open(root / VM_CONSTANTS, "wb") as f:
            save_arrays(f, {f"c{k}": c for k, c in enumerate(self.program.constants)})
        (root / VM_PROGRAM).write_text(json.dumps(self.program.to_json(), indent=1))
        meta = {"format": VM_ARTIFACT_FORMAT, "program": VM_PROGRAM, "constants": VM_CONSTANTS, "functions": names}
        (root / META).write_text(json.dumps(meta, indent=1))
        seal(root)  # the manifest of every file, written last


def vm_of(lib: CompiledModule) -> VMModule:
    """The VM running an already built function without control flow (one call of it)."""
    n_in, n_out = len(lib.signature.inputs), len(lib.signature.outputs)
    outs = tuple(range(n_in, n_in + n_out))
    program = VMProgram(lib.signature, [("call", 0, tuple(range(n_in)), outs), ("ret", outs)], n_in + n_out, list(range(n_in)), ["main"])
    vm = VMModule(program, [lib])
    vm.pass_timings, vm.compile_seconds = lib.pass_timings, lib.compile_seconds
    return vm


def compile_vm(
    module: ModuleOp, function: str, compile: Callable[[ModuleOp, str], CompiledModule]
) -> VMModule:
    """Compile ``function`` of ``module`` for the VM: its bytecode, and each straight-line
    piece by ``compile(piece_module, piece_function)`` (the target's build).

    Example: ``vm = compile_vm(module, "main", lambda m, name: build_for_cpu(m, name))``
    """
    start = time.perf_counter()
    module.verify()
    program, modules = compile_vm_program(module, function)
    compiled = [compile(m, name) for m, name in zip(modules, program.function_names)]
    vm = VMModule(program, compiled)
    vm.pass_timings = PassTimings(t for lib in compiled for t in lib.pass_timings)
    vm.compile_seconds = time.perf_counter() - start
    return vm


__all__ = ["VMModule", "compile_vm", "compile_vm_program", "needs_vm", "vm_of"]

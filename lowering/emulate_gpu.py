"""emulate-gpu: run gpu-dialect kernels on the CPU, with GPU semantics, to check them.

The *same* ``gpu.func`` kernels that the CUDA printer prints become loop-dialect
functions that loop over every block and every thread, so the existing LLVM path
(``loop-to-llvm``) compiles them; tests compare their results with numpy. Each
``gpu.func @k(args)`` becomes ``func.func @k(args, %grid_x, %grid_y, %grid_z)``::

    for bz < grid_z, by < grid_y, bx < grid_x:        // every block, one after another
      <shared buffers of the block>
      for tz < BZ, ty < BY, tx < BX: <code up to the first barrier>
      for tz < BZ, ty < BY, tx < BX: <code between the first and second barrier>
      ...

A barrier splits the block's code into phases, and each phase runs for every thread
before the next starts: exactly what ``__syncthreads()`` guarantees, so shared
memory written before a barrier is read after it as on the GPU. A barrier inside a
serial loop splits the loop's body the same way, the loop itself running at block
level (its bounds must be the same in every thread: a barrier that only some threads
reach is an error, as it is undefined behaviour on the GPU). Values a phase takes
from an earlier one are recomputed when they are pure index arithmetic; a loaded
value crossing a barrier is refused. Per-thread (``memref.alloca``) buffers that live
across phases get one copy per thread; ``scf.if`` becomes a loop of 0 or 1
iterations. The host's ``gpu.launch_func`` becomes a call with the grid size.

Example: ``tensorkiln-opt k.mlir -p emulate-gpu,loop-to-llvm``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from .loop_to_gpu import KERNEL_ATTR, is_shared

INDEX = IndexType()
_AXES = ("x", "y", "z")
_IDS = (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)


def _has_barrier(op: Operation) -> bool:
    return any(isinstance(o, gpu.BarrierOp) for o in op.walk())


def _is_pure(op: Operation) -> bool:
    return (op.name.split(".")[0] in ("arith", "math") and not op.regions) or isinstance(op, (*_IDS, memref.DimOp))


@dataclass
class _Scope:
    """Where code is being emitted: the value map, the block, and the thread indices
    (None at block level, where only values equal in every thread may be computed)."""

    values: dict[SSAValue, SSAValue]
    block: Block
    threads: tuple[SSAValue, SSAValue, SSAValue] | None = None
    linear: SSAValue | None = None

    def ins(self, op: Operation) -> SSAValue | None:
        """Append ``op`` (before the block's terminator, if it has one)."""
        last = self.block.last_op
        if isinstance(last, loop.YieldOp | func.ReturnOp):
            self.block.insert_op_before(op, last)
        else:
            self.block.add_op(op)
        return op.results[0] if op.results else None

    def const(self, n: int) -> SSAValue:
        return self.ins(arith.ConstantOp(IntegerAttr(n, INDEX)))


def _new_loop(scope: _Scope, lb: SSAValue, ub: SSAValue, name: str, step: SSAValue | None = None, kind: str = "serial") -> tuple[loop.ForOp, Block]:
    body = Block(arg_types=[INDEX])
    body.add_op(loop.YieldOp())
    op = loop.ForOp(lb, ub, step if step is not None else scope.const(1), body, kind=kind, name=name)
    scope.ins(op)
    return op, body


@dataclass
class _KernelEmulator:
    kernel: gpu.FuncOp
    block_size: tuple[int, int, int] = (1, 1, 1)
    grid: list[SSAValue] = field(default_factory=list)
    block_ids: list[SSAValue] = field(default_factory=list)
    #: per-thread buffers that live across barriers: original -> [threads, ...] copy
    expanded: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def fail(self, message: str) -> PassFailedException:
        return PassFailedException(f"emulate-gpu: kernel '{self.kernel.sym_name.data}': {message}")

    def convert(self) -> func.FuncOp:
        k = self.kernel
        if k.known_block_size is None:
            raise self.fail("has no gpu.known_block_size (the emulator needs the block size)")
        self.block_size = tuple(k.known_block_size.get_values())
        src = k.body.block
        entry = Block(arg_types=[*src.arg_types, INDEX, INDEX, INDEX])
        entry.add_op(func.ReturnOp())
        top = _Scope(dict(zip(src.args, entry.args)), entry)
        self.grid = list(entry.args[len(src.args) :])
        zero = top.const(0)
        ids = []
        scope = top
        for d in reversed(range(3)):  # z outermost
            _, body = _new_loop(scope, zero, self.grid[d], f"blockIdx.{_AXES[d]}")
            ids.append(body.args[0])
            scope = _Scope(dict(scope.values), body)
        self.block_ids = list(reversed(ids))
        self.emit_block_level(list(src.ops), scope)
        out = func.FuncOp(k.sym_name.data, (entry.arg_types, []), Region(entry))
        if KERNEL_ATTR in k.attributes:
            out.attributes[KERNEL_ATTR] = k.attributes[KERNEL_ATTR]
        return out

    # -- block level: phases between barriers -------------------------------------------

    def emit_block_level(self, ops: list[Operation], scope: _Scope) -> None:
        splits = any(isinstance(op, gpu.BarrierOp) or (op.regions and _has_barrier(op)) for op in ops)
        phase: list[Operation] = []
        for op in ops:
            if isinstance(op, gpu.BarrierOp):
                self.emit_phase(phase, scope)
                phase = []
            elif isinstance(op, loop.ForOp) and _has_barrier(op):
                self.emit_phase(phase, scope)
                phase = []
                self.emit_uniform_loop(op, scope)
            elif op.regions and _has_barrier(op):
                raise self.fail(f"a barrier inside '{op.name}' is not reached by every thread of a block")
            elif isinstance(op, memref.AllocaOp) and is_shared(op.memref.type):
                scope.values[op.memref] = self.alloc(scope, op.memref.type)  # shared: one per block
            elif isinstance(op, memref.AllocaOp) and splits:
                t = op.memref.type
                threads = self.block_size[0] * self.block_size[1] * self.block_size[2]
                self.expanded[op.memref] = self.alloc(scope, MemRefType(t.element_type, [threads, *t.get_shape()]))
            elif isinstance(op, gpu.ReturnOp):
                if op.next_op is not None:
                    raise self.fail("returns early (not supported)")
            else:
                phase.append(op)
        self.emit_phase(phase, scope)

    def alloc(self, scope: _Scope, t: MemRefType) -> SSAValue:
        return scope.ins(loop.AllocOp(MemRefType(t.element_type, t.get_shape()), scope="local"))

    def emit_uniform_loop(self, op: loop.ForOp, scope: _Scope) -> None:
        lb, ub, step = (self.value(v, scope) for v in (op.lb, op.ub, op.step))
        _, body = _new_loop(scope, lb, ub, op.loop_name.data, step)
        inner = _Scope(dict(scope.values), body)
        inner.values[op.induction_var] = body.args[0]
        self.emit_block_level([o for o in op.body.block.ops if not isinstance(o, loop.YieldOp)], inner)

    def emit_phase(self, ops: list[Operation], scope: _Scope) -> None:
        if not ops:
            return
        zero = scope.const(0)
        threads: list[SSAValue] = []
        inner = scope
        for d in reversed(range(3)):
            _, body = _new_loop(inner, zero, inner.const(self.block_size[d]), f"threadIdx.{_AXES[d]}")
            threads.append(body.args[0])
            inner = _Scope(dict(inner.values), body)
        tz, ty, tx = threads
        inner.threads = (tx, ty, tz)
        bx, by, _ = self.block_size
        # the thread's number in its block: (tz * by + ty) * bx + tx
        row = inner.ins(arith.AddiOp(inner.ins(arith.MuliOp(tz, inner.const(by))), ty))
        inner.linear = inner.ins(arith.AddiOp(inner.ins(arith.MuliOp(row, inner.const(bx))), tx))
        for op in ops:
            self.convert_op(op, inner)

    # -- values ---------------------------------------------------------------------------

    def value(self, v: SSAValue, scope: _Scope) -> SSAValue:
        """``v`` in ``scope``: mapped, or recomputed there if it is pure arithmetic."""
        if v in scope.values:
            return scope.values[v]
        owner = v.owner
        if isinstance(owner, Operation) and _is_pure(owner):
            self.convert_op(owner, scope)
            return scope.values[v]
        raise self.fail(
            f"a value ({owner.name if isinstance(owner, Operation) else 'a loop variable'}) is used across a barrier "
            "or outside the loop that defines it"
        )

    # -- ops in a thread -----------------------------------------------------------------

    def convert_op(self, op: Operation, scope: _Scope) -> None:
        v = scope.values
        match op:
            case gpu.ThreadIdOp():
                if scope.threads is None:
                    raise self.fail("a barrier's loop bounds depend on the thread index (threads would diverge)")
                v[op.result] = scope.threads[_AXES.index(op.dimension.data.value)]
            case gpu.BlockIdOp():
                v[op.result] = self.block_ids[_AXES.index(op.dimension.data.value)]
            case gpu.BlockDimOp():
                v[op.result] = scope.const(self.block_size[_AXES.index(op.dimension.data.value)])
            case gpu.GridDimOp():
                v[op.result] = self.grid[_AXES.index(op.dimension.data.value)]
            case gpu.BarrierOp():
                raise self.fail("a barrier inside a branch or a loop that not every thread runs alike")
            case memref.LoadOp():
                buffer, indices = self.access(op.memref, list(op.indices), scope)
                v[op.res] = scope.ins(loop.LoadOp(buffer, indices))
            case memref.StoreOp():
                buffer, indices = self.access(op.memref, list(op.indices), scope)
                scope.ins(loop.StoreOp(self.value(op.value, scope), buffer, indices))
            case memref.DimOp():
                axis = op.index.owner.value.value.data
                v[op.result] = scope.ins(loop.DimOp(self.value(op.source, scope), axis))
            case memref.AllocaOp():
                v[op.memref] = self.alloc(scope, op.memref.type)
            case loop.ForOp():
                lb, ub, step = (self.value(x, scope) for x in (op.lb, op.ub, op.step))
                # serial: emulation needs the semantics, and unrolling only slows its compile
                new, body = _new_loop(scope, lb, ub, op.loop_name.data, step, "serial")
                v[op.induction_var] = body.args[0]
                inner = _Scope(v, body, scope.threads, scope.linear)
                for o in op.body.block.ops:
                    if not isinstance(o, loop.YieldOp):
                        self.convert_op(o, inner)
            case scf.IfOp():
                if op.results or op.false_region.blocks:
                    raise self.fail("scf.if with results or an else branch is not emulated")
                cond = self.value(op.cond, scope)
                once = scope.ins(arith.SelectOp(cond, scope.const(1), scope.const(0)))
                _, body = _new_loop(scope, scope.const(0), once, "if")
                inner = _Scope(v, body, scope.threads, scope.linear)
                for o in op.true_region.block.ops:
                    if not isinstance(o, scf.YieldOp):
                        self.convert_op(o, inner)
            case _ if _is_pure(op):
                new = op.clone(value_mapper={o: self.value(o, scope) for o in op.operands})
                scope.ins(new)
                for old, res in zip(op.results, new.results):
                    v[old] = res
            case _:
                raise self.fail(f"no emulation of '{op.name}'")

    def access(self, buffer: SSAValue, indices: list[SSAValue], scope: _Scope) -> tuple[SSAValue, list[SSAValue]]:
        mapped = [self.value(i, scope) for i in indices]
        if buffer in self.expanded:
            return self.expanded[buffer], [scope.linear, *mapped]
        return self.value(buffer, scope), mapped


def _kernel_functions(module: ModuleOp) -> dict[str, gpu.FuncOp]:
    found = {}
    for op in module.ops:
        if isinstance(op, gpu.ModuleOp):
            for f in op.body.block.ops:
                if isinstance(f, gpu.FuncOp):
                    found[f.sym_name.data] = f
    return found


def _static_index(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


@dataclass(frozen=True)
class EmulateGPUPass(ModulePass):
    """Turn gpu.module kernels into CPU loop nests over blocks and threads, and
    launches into calls (see the module docstring)."""

    name = "emulate-gpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = _kernel_functions(op)
        converted = {name: _KernelEmulator(f).convert() for name, f in kernels.items()}
        for launch in [o for o in op.walk() if isinstance(o, gpu.LaunchFuncOp)]:
            name = launch.kernel.nested_references.data[-1].data
            if name not in converted:
                raise PassFailedException(f"emulate-gpu: launch of unknown kernel '{name}'")
            expected = tuple(kernels[name].known_block_size.get_values())
            given = tuple(_static_index(s) for s in (launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ))
            if given != expected:
                raise PassFailedException(f"emulate-gpu: '{name}' launched with block {given}, compiled for {expected}")
            grid = [launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ]
            call = func.CallOp(name, [*launch.kernelOperands, *grid], [])
            Rewriter.replace_op(launch, call)
        for g in [o for o in op.ops if isinstance(o, gpu.ModuleOp)]:
            g.detach()
            g.erase()
        for f in converted.values():
            op.body.block.add_op(f)
        op.attributes.pop("gpu.container_module", None)


__all__ = ["EmulateGPUPass"]

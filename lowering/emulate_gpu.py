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
reach is an error, as it is undefined behaviour on the GPU).

A warp shuffle (``loop.shuffle_xor``) splits the code the same way, and in two: every
thread stores its value in a per-block scratch buffer at its thread number, then
(the next phase) reads the entry of its partner ``thread ^ offset``. A tensor-core
product (``loop.mma_tf32``) too: every lane stores its 10 operands (A and B rounded to
TF32), then each computes its 4 elements of D from the lanes of its warp that hold
the rows of A and columns of B it needs. A shuffle inside an ``scf.if`` (a guard that
keeps whole warps, see ``loop-to-gpu``) splits the branch: each piece runs under the
same condition.

Values a phase takes from an earlier one are recomputed when they are constants or
index arithmetic, and otherwise (loaded values, shuffle results) kept per thread: stored in
a buffer with one entry per thread at the end of the phase that computes them and
loaded where they are used. Per-thread (``memref.alloca``) buffers that live across
phases get one copy per thread; ``scf.if`` becomes a loop of 0 or 1 iterations. The
host's ``gpu.launch_func`` becomes a call with the grid size.

Example: ``tensorkiln-opt k.mlir -p emulate-gpu,loop-to-llvm``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, f32, i1, i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from ..dialects.scalar import is_scalar_arithmetic
from .loop_to_gpu import is_shared

INDEX = IndexType()
_AXES = ("x", "y", "z")
_IDS = (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)


def _has_barrier(op: Operation) -> bool:
    return any(isinstance(o, gpu.BarrierOp) for o in op.walk())


#: warp-wide ops: each splits the code into a phase writing every lane's operands and one
#: reading the others'
_WARP_OPS = (loop.ShuffleXorOp, loop.MmaTf32Op)


def _has_sync(op: Operation) -> bool:
    """Whether ``op`` holds a barrier or a warp-wide op: code that splits into phases."""
    return any(isinstance(o, (gpu.BarrierOp, *_WARP_OPS)) for o in op.walk())


@dataclass(frozen=True)
class _ShuffleWrite:
    """The end of a phase: this thread's value of ``op`` into ``scratch[thread]``."""

    op: loop.ShuffleXorOp
    scratch: SSAValue


@dataclass(frozen=True)
class _ShuffleRead:
    """The start of the next phase: ``op``'s result is ``scratch[thread ^ offset]``."""

    op: loop.ShuffleXorOp
    scratch: SSAValue


@dataclass(frozen=True)
class _MmaWrite:
    """The end of a phase: this lane's operands of ``op`` (A and B rounded to TF32) into
    ``scratch[operand][thread]``."""

    op: loop.MmaTf32Op
    scratch: SSAValue


@dataclass(frozen=True)
class _MmaRead:
    """The start of the next phase: this lane's four elements of D, from the operands
    its warp's lanes wrote (``loop.mma_tf32_position`` says who holds what)."""

    op: loop.MmaTf32Op
    scratch: SSAValue


#: what a phase runs: ops of the kernel, and the two halves of each warp-wide op
_Item = Operation | _ShuffleWrite | _ShuffleRead | _MmaWrite | _MmaRead


def _is_pure(op: Operation) -> bool:
    return is_scalar_arithmetic(op) or isinstance(op, (*_IDS, memref.DimOp))


def _recomputed(op: Operation) -> bool:
    """Whether a later phase recomputes ``op`` rather than keeping its value per thread:
    constants, ids and index arithmetic (cheap, and needed at block level for the
    bounds of loops around barriers)."""
    return _is_pure(op) and (not op.operands or all(isinstance(r.type, IndexType) or r.type == i1 for r in op.results))


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
    #: per-thread values that live across phases: original -> [threads] buffer
    spilled: dict[SSAValue, SSAValue] = field(default_factory=dict)

    @property
    def threads(self) -> int:
        return self.block_size[0] * self.block_size[1] * self.block_size[2]

    def fail(self, message: str) -> PassFailedException:
        return PassFailedException(f"emulate-gpu: kernel '{self.kernel.sym_name.data}': {message}")

    def convert(self) -> func.FuncOp:
        k = self.kernel
        if k.known_block_size is None:
            raise self.fail("has no gpu.known_block_size (the emulator needs the block size)")
        self.block_size = tuple(k.known_block_size.get_values())
        warp_ops = {o.name for o in k.walk() if isinstance(o, _WARP_OPS)}
        if warp_ops and self.threads % loop.WARP_SIZE:
            raise self.fail(f"{loop.warp_ops_phrase(warp_ops)} in a block of {self.threads} threads (not whole warps of {loop.WARP_SIZE})")
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
        if (tag := loop.kernel_tag(k)) is not None:
            loop.set_kernel_tag(out, tag)
        return out

    # -- block level: phases between barriers -------------------------------------------

    def emit_block_level(self, ops: list[Operation], scope: _Scope, guards: tuple[SSAValue, ...] = ()) -> None:
        """Split ``ops`` into phases at barriers and warp-wide ops; ``guards``: the conditions
        of the ``scf.if`` branches around them (each phase runs under all of them)."""
        splits = any(isinstance(op, (gpu.BarrierOp, *_WARP_OPS)) or (op.regions and _has_sync(op)) for op in ops)
        phase: list[_Item] = []
        for op in ops:
            if isinstance(op, gpu.BarrierOp):
                if guards:
                    raise self.fail("a barrier inside 'scf.if' is not reached by every thread of a block")
                self.emit_phase(phase, scope, guards)
                phase = []
            elif isinstance(op, loop.ShuffleXorOp):
                t = op.result.type
                scratch = self.alloc(scope, MemRefType(t, [self.threads]))
                self.emit_phase([*phase, _ShuffleWrite(op, scratch)], scope, guards)
                phase = [_ShuffleRead(op, scratch)]
            elif isinstance(op, loop.MmaTf32Op):
                scratch = self.alloc(scope, MemRefType(f32, [len(op.operands), self.threads]))
                self.emit_phase([*phase, _MmaWrite(op, scratch)], scope, guards)
                phase = [_MmaRead(op, scratch)]
            elif isinstance(op, loop.ForOp) and _has_sync(op):
                self.emit_phase(phase, scope, guards)
                phase = []
                self.emit_uniform_loop(op, scope, guards)
            elif op.regions and _has_barrier(op):
                raise self.fail(f"a barrier inside '{op.name}' is not reached by every thread of a block")
            elif isinstance(op, scf.IfOp) and _has_sync(op):
                if op.results or op.false_region.blocks:
                    raise self.fail("a shuffle inside scf.if with results or an else branch is not emulated")
                if not self.keeps_whole_warps(op.cond):
                    raise self.fail(
                        "a shuffle inside scf.if whose condition may split a warp (expected threadIdx.x < a "
                        f"multiple of {loop.WARP_SIZE}, the guard loop-to-gpu writes)"
                    )
                self.emit_phase(phase, scope, guards)
                phase = []
                body = [o for o in op.true_region.block.ops if not isinstance(o, scf.YieldOp)]
                self.emit_block_level(body, scope, (*guards, op.cond))
            elif op.regions and _has_sync(op):
                raise self.fail(f"a shuffle inside '{op.name}' is not emulated")
            elif isinstance(op, memref.AllocaOp) and is_shared(op.memref.type):
                scope.values[op.memref] = self.alloc(scope, op.memref.type)  # shared: one per block
            elif isinstance(op, memref.AllocaOp) and splits:
                t = op.memref.type
                self.expanded[op.memref] = self.alloc(scope, MemRefType(t.element_type, [self.threads, *t.get_shape()]))
            elif isinstance(op, gpu.ReturnOp):
                if op.next_op is not None:
                    raise self.fail("returns early (not supported)")
            else:
                phase.append(op)
        self.emit_phase(phase, scope, guards)

    def keeps_whole_warps(self, cond: SSAValue) -> bool:
        """Whether ``cond`` is true for every lane of a warp or for none: ``threadIdx.x < C``
        with ``C`` a multiple of the warp size, in a block whose x size is one too (else a
        shuffle would read partners that never wrote: undefined on the GPU, stale here)."""
        cmp = cond.owner
        if not isinstance(cmp, arith.CmpiOp) or cmp.predicate.value.data not in (2, 6):  # slt, ult
            return False
        tid, bound = cmp.lhs.owner, _static_index(cmp.rhs)
        return (
            isinstance(tid, gpu.ThreadIdOp)
            and tid.dimension.data.value == "x"
            and bound is not None
            and bound % loop.WARP_SIZE == 0
            and self.block_size[0] % loop.WARP_SIZE == 0
        )

    def alloc(self, scope: _Scope, t: MemRefType) -> SSAValue:
        return scope.ins(loop.AllocOp(MemRefType(t.element_type, t.get_shape()), scope="local"))

    def emit_uniform_loop(self, op: loop.ForOp, scope: _Scope, guards: tuple[SSAValue, ...] = ()) -> None:
        lb, ub, step = (self.value(v, scope) for v in (op.lb, op.ub, op.step))
        _, body = _new_loop(scope, lb, ub, op.loop_name.data, step)
        inner = _Scope(dict(scope.values), body)
        inner.values[op.induction_var] = body.args[0]
        self.emit_block_level([o for o in op.body.block.ops if not isinstance(o, loop.YieldOp)], inner, guards)

    def spill_plan(self, items: list[_Item]) -> list[SSAValue]:
        """The values ``items`` compute that later phases use and cannot recompute (not
        pure arithmetic): each gets a buffer with one entry per thread."""
        inside: set[Operation] = set()
        defined: set[SSAValue] = set()
        for item in items:
            if isinstance(item, _ShuffleWrite | _MmaWrite):
                inside.add(item.op)  # the warp op's use of its operands happens here
            elif isinstance(item, _ShuffleRead | _MmaRead):
                defined.update(item.op.results)
            else:
                inside.update(item.walk())
                defined.update(item.results)
        escaping = [v for v in defined if any(use.operation not in inside for use in v.uses)]
        plan: list[SSAValue] = []
        while escaping:
            v = escaping.pop()
            if v in self.spilled or v in plan:
                continue
            owner = v.owner
            if isinstance(owner, Operation) and _recomputed(owner):
                escaping += [o for o in owner.operands if o in defined]  # recomputed from these
            elif isinstance(v.type, MemRefType):
                raise self.fail(f"a buffer ({owner.name}) is used across a barrier or shuffle")
            else:
                plan.append(v)
        return plan

    def emit_phase(self, items: list[_Item], scope: _Scope, guards: tuple[SSAValue, ...] = ()) -> None:
        if not items:
            return
        spills = self.spill_plan(items)
        buffers = [self.alloc(scope, MemRefType(v.type, [self.threads])) for v in spills]
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
        for cond in guards:  # the scf.if branches around a split branch
            once = inner.ins(arith.SelectOp(self.value(cond, inner), inner.const(1), inner.const(0)))
            _, body = _new_loop(inner, inner.const(0), once, "if")
            inner = _Scope(inner.values, body, inner.threads, inner.linear)
        for item in items:
            if isinstance(item, _ShuffleWrite):
                inner.ins(loop.StoreOp(self.value(item.op.value, inner), item.scratch, [inner.linear]))
            elif isinstance(item, _ShuffleRead):
                partner = inner.ins(arith.XOrIOp(inner.linear, inner.const(item.op.offset.value.data)))
                inner.values[item.op.result] = inner.ins(loop.LoadOp(item.scratch, [partner]))
            elif isinstance(item, _MmaWrite):
                factors = len(item.op.a) + len(item.op.b)  # rounded; C is not
                for k, operand in enumerate(item.op.operands):
                    x = self.value(operand, inner)
                    inner.ins(loop.StoreOp(_tf32(inner, x) if k < factors else x, item.scratch, [inner.const(k), inner.linear]))
            elif isinstance(item, _MmaRead):
                _mma_tf32_result(item.op, item.scratch, inner)
            else:
                self.convert_op(item, inner)
        for v, buffer in zip(spills, buffers):
            inner.ins(loop.StoreOp(inner.values[v], buffer, [inner.linear]))
        self.spilled.update(zip(spills, buffers))

    # -- values ---------------------------------------------------------------------------

    def value(self, v: SSAValue, scope: _Scope) -> SSAValue:
        """``v`` in ``scope``: mapped, reloaded if an earlier phase kept it per thread, or
        recomputed there if it is pure arithmetic."""
        if v in scope.values:
            return scope.values[v]
        if v in self.spilled and scope.linear is not None:
            scope.values[v] = scope.ins(loop.LoadOp(self.spilled[v], [scope.linear]))
            return scope.values[v]
        owner = v.owner
        if isinstance(owner, Operation) and _is_pure(owner):
            self.convert_op(owner, scope)
            return scope.values[v]
        raise self.fail(
            f"a value ({owner.name if isinstance(owner, Operation) else 'a loop variable'}) is used across a barrier "
            "or shuffle by code that is not in a thread (a loop around a barrier), or outside the loop that defines it"
        )

    # -- ops in a thread -----------------------------------------------------------------

    def convert_op(self, op: Operation, scope: _Scope) -> None:
        v = scope.values
        match op:
            case gpu.ThreadIdOp():
                if scope.threads is None:
                    raise self.fail(
                        "the bounds of a loop around a barrier or shuffle depend on the thread index (threads would diverge)"
                    )
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
                # a copy: what is computed (or reloaded) in the body stays in the body
                inner = _Scope(dict(v), body, scope.threads, scope.linear)
                inner.values[op.induction_var] = body.args[0]
                for o in op.body.block.ops:
                    if not isinstance(o, loop.YieldOp):
                        self.convert_op(o, inner)
            case scf.IfOp():
                if op.results or op.false_region.blocks:
                    raise self.fail("scf.if with results or an else branch is not emulated")
                cond = self.value(op.cond, scope)
                once = scope.ins(arith.SelectOp(cond, scope.const(1), scope.const(0)))
                _, body = _new_loop(scope, scope.const(0), once, "if")
                inner = _Scope(dict(v), body, scope.threads, scope.linear)
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


def _tf32(scope: _Scope, x: SSAValue) -> SSAValue:
    """``x`` rounded to TF32 as ``cvt.rna.tf32.f32`` does: to the nearest value with a
    10-bit mantissa, ties away from zero (add half of the 13 dropped bits, clear them)."""
    bits = scope.ins(arith.BitcastOp(x, i32))
    half = scope.ins(arith.ConstantOp(IntegerAttr(1 << 12, i32)))
    keep = scope.ins(arith.ConstantOp(IntegerAttr(-(1 << 13), i32)))
    rounded = scope.ins(arith.AndIOp(scope.ins(arith.AddiOp(bits, half)), keep))
    return scope.ins(arith.BitcastOp(rounded, f32))


def _mma_tf32_result(op: loop.MmaTf32Op, scratch: SSAValue, scope: _Scope) -> None:
    """This lane's d0..d3: ``D[r][n] = C[r][n] + sum_k A[r][k] B[k][n]`` at the places of
    its c0..c3, reading A and B from the lanes that hold them. With ``g = lane / 4`` and
    ``t = lane % 4`` (``loop.mma_tf32_position``), register i of C is at row
    ``g + 8 (i / 2)``, column ``n = 2t + i % 2``; A[r][k] is register ``r / 8 + 2 (k / 4)``
    of lane ``4 (r % 8) + k % 4``, B[k][n] register ``4 + k / 4`` of lane ``4n + k % 4``."""
    warp = scope.const(loop.WARP_SIZE)
    lane = scope.ins(arith.RemUIOp(scope.linear, warp))
    first = scope.ins(arith.SubiOp(scope.linear, lane))  # lane 0 of this warp
    g = scope.ins(arith.DivUIOp(lane, scope.const(4)))
    t = scope.ins(arith.RemUIOp(lane, scope.const(4)))
    _, _, k_depth = loop.MMA_SHAPE
    for i, result in enumerate(op.results):
        n = scope.ins(arith.AddiOp(scope.ins(arith.MuliOp(t, scope.const(2))), scope.const(i % 2)))
        total = scope.ins(loop.LoadOp(scratch, [scope.const(6 + i), scope.linear]))
        for k in range(k_depth):
            a_lane = scope.ins(arith.AddiOp(first, scope.ins(arith.AddiOp(scope.ins(arith.MuliOp(g, scope.const(4))), scope.const(k % 4)))))
            b_lane = scope.ins(arith.AddiOp(first, scope.ins(arith.AddiOp(scope.ins(arith.MuliOp(n, scope.const(4))), scope.const(k % 4)))))
            a = scope.ins(loop.LoadOp(scratch, [scope.const(i // 2 + 2 * (k // 4)), a_lane]))
            b = scope.ins(loop.LoadOp(scratch, [scope.const(4 + k // 4), b_lane]))
            total = scope.ins(arith.AddfOp(total, scope.ins(arith.MulfOp(a, b))))
        scope.values[result] = total


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

"""loop -> gpu: kernels whose loops are bound to GPU axes become ``gpu.func`` kernels in
one ``gpu.module @kernels``; the host function launches them with ``gpu.launch_func``.

A kernel scheduled for the GPU (``bind``, see ``schedule/gpu_strategies.py``) has its
``blockIdx`` loops outermost and ``threadIdx`` loops inside them::

    loop.for %bi = %c0 to %nb step %c1 blockIdx.x name("i.outer") {
      %s = arith.muli %bi, %c256
      loop.for %ti = %c0 to %min step %c1 threadIdx.x name("i.inner") { body }
    }

becomes, inside ``gpu.func @k(...) kernel attributes {gpu.known_block_size = [256,1,1]}``::

    %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    %bi = %c0 + %b * %c1               // the block loop's iteration of this block
    %s = arith.muli %bi, %c256
    %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %ti = %c0 + %t * %c1
    scf.if (%ti < %min) { body }       // a partial block: threads past the end idle

and the host's ``func.call @k(%a, %b)`` becomes ``gpu.launch_func @kernels::@k``
with the grid along each block axis = the loop's trip count, computed on the host
from the kernel arguments' sizes (symbolic shapes work), and the block size = the
largest compile-time trip bound of the loops bound to each thread axis.

Rules of the mapping (a kernel that breaks one fails with a message naming it):

* block loop bounds depend only on kernel arguments (sizes) and constants;
* thread loops have trip counts bounded at compile time (split them first);
  the same thread axis may be bound to several sibling loops (phases of a block:
  e.g. a cooperative copy into shared memory, then the compute), never nested;
* code inside the blocks but outside thread loops runs in every thread of the block
  (index arithmetic, serial loops around phases); it may only store to ``local``
  buffers, since every thread would store;
* ``loop.alloc`` scopes: ``local`` -> a per-thread ``memref.alloca`` (registers),
  ``shared`` -> a ``memref.alloca`` in address space 3 (CUDA ``__shared__``), one per
  block, allocated outside thread loops; ``global`` allocations are the host's;
* ``gpu.barrier`` is inserted between two phases of a block when one writes a shared
  buffer the other reads or writes, and at the end of a serial loop body whose
  phases write shared memory (the next iteration overwrites it);
* a kernel with no bound loop at all runs as one thread (grid 1, block 1): correct,
  slow; ``vectorized``/``parallel`` loops run serially inside a thread;
* ``loop.shuffle_xor`` (a warp shuffle) and ``loop.mma_tf32`` (a warp's tensor-core
  product) stay as they are, and every lane of a warp must run them together: the
  block is a whole number of warps, a guarded thread loop around one is bound to
  ``threadIdx.x`` with a static bound that is a multiple of the warp size (its guard
  keeps or drops whole warps), and serial loops between the thread loop and the op
  have bounds defined outside the thread loops.

Loads, stores and sizes become ``memref.load``/``memref.store``/``memref.dim``;
serial and unrolled loops stay ``loop.for`` (their kind tells the CUDA printer to
unroll).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i32,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from ..dialects.scalar import is_scalar_arithmetic

#: the name of the gpu.module holding every kernel
GPU_MODULE = "kernels"
#: the memory space of shared (per-block) buffers, as NVVM numbers it
SHARED_MEMORY_SPACE = IntegerAttr(3, i32)
#: CUDA's limit on threads per block
MAX_THREADS_PER_BLOCK = 1024

INDEX = IndexType()
_AXES = ("x", "y", "z")


def is_shared(t: object) -> bool:
    """Whether a memref type lives in shared (per-block) memory."""
    return isinstance(t, MemRefType) and t.memory_space == SHARED_MEMORY_SPACE


def _axis_of(kind: str) -> tuple[str, int] | None:
    """``"threadIdx.y"`` -> ``("threadIdx", 1)``; None for CPU loop kinds."""
    if kind in loop.GPU_BINDINGS:
        what, d = kind.split(".")
        return what, _AXES.index(d)
    return None


def _static(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _trip_bound(for_op: loop.ForOp) -> int | None:
    """The most iterations of ``for_op`` known at compile time (constant bounds, or a
    ``minsi`` upper bound with a constant operand: the inner loop of a split)."""
    lb, step = _static(for_op.lb), _static(for_op.step)
    if lb is None or step is None or step <= 0:
        return None
    ub = _static(for_op.ub)
    if ub is None and isinstance(for_op.ub.owner, arith.MinSIOp):
        limits = [v for v in map(_static, for_op.ub.owner.operands) if v is not None]
        ub = min(limits) if limits else None
    if ub is None:
        return None
    return max(0, -(-(ub - lb) // step))


def _shared_accesses(op: Operation) -> tuple[set[SSAValue], set[SSAValue]]:
    """(shared buffers read, shared buffers written) under ``op`` (original IR)."""
    reads: set[SSAValue] = set()
    writes: set[SSAValue] = set()
    for inner in op.walk():
        if isinstance(inner, loop.LoadOp) and _is_shared_alloc(inner.buffer):
            reads.add(inner.buffer)
        elif isinstance(inner, loop.StoreOp) and _is_shared_alloc(inner.buffer):
            writes.add(inner.buffer)
    return reads, writes


def _in_thread_loop(value: SSAValue) -> bool:
    """Whether ``value`` may differ between the threads of a block: defined inside a
    thread loop and not a constant."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp):
        return False
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if isinstance(op, loop.ForOp) and op.kind.data.startswith("threadIdx"):
            return True
        op = op.parent_op()
    return False


def _is_shared_alloc(value: SSAValue) -> bool:
    return isinstance(value.owner, loop.AllocOp) and value.owner.scope.data == "shared"


@dataclass
class Launch:
    """How the host launches one kernel: the original kernel (for its grid bounds),
    the grid extents as (lb, ub, step) of each block axis' loop, the block sizes."""

    kernel: func.FuncOp
    grid: list[tuple[SSAValue, SSAValue, SSAValue] | None] = field(default_factory=lambda: [None] * 3)
    block: list[int] = field(default_factory=lambda: [1, 1, 1])


@dataclass
class _Phases:
    """Shared buffers read / written since the last barrier (original values)."""

    reads: set[SSAValue] = field(default_factory=set)
    writes: set[SSAValue] = field(default_factory=set)

    def conflicts(self, reads: set[SSAValue], writes: set[SSAValue]) -> bool:
        return bool(reads & self.writes or writes & (self.writes | self.reads))


class _KernelConverter:
    """One loop-level kernel -> one ``gpu.func`` (and its :class:`Launch`)."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.values: dict[SSAValue, SSAValue] = {}
        self.launch = Launch(kernel)
        bound = [f for f in kernel.walk() if isinstance(f, loop.ForOp) and _axis_of(f.kind.data)]
        self.has_threads = any(f.kind.data.startswith("threadIdx") for f in bound)
        # block sizes first: a phase shorter than the block needs its guard even when an
        # earlier phase on the same axis was shorter still
        for f in bound:
            axis = _axis_of(f.kind.data)
            extent = _trip_bound(f)
            if axis[0] == "threadIdx" and extent is not None:
                self.launch.block[axis[1]] = max(self.launch.block[axis[1]], extent)
        self.phases = _Phases()
        self.ids: dict[str, SSAValue] = {}
        #: the kernel's warp-wide ops (its block must then be whole warps)
        self.warp_ops: set[str] = set()

    def fail(self, message: str) -> PassFailedException:
        return PassFailedException(f"loop-to-gpu: kernel '{self.name}': {message}")

    # -- building ------------------------------------------------------------------

    def _ins(self, block: Block, op: Operation) -> SSAValue | None:
        block.add_op(op)
        return op.results[0] if op.results else None

    def _id(self, block: Block, what: str, d: int) -> SSAValue:
        cls = gpu.BlockIdOp if what == "blockIdx" else gpu.ThreadIdOp
        return self._ins(block, cls(gpu.DimensionAttr(gpu.DimensionEnum(_AXES[d]))))

    def convert(self) -> gpu.FuncOp:
        src = self.kernel.body.block
        arg_types = list(src.arg_types)
        body = Block(arg_types=arg_types)
        for old, new in zip(src.args, body.args):
            self.values[old] = new
            new.name_hint = old.name_hint
        self.convert_ops(body, list(src.ops), in_thread=set(), in_block=False)
        threads = self.launch.block[0] * self.launch.block[1] * self.launch.block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise self.fail(f"block of {self.launch.block} threads is more than {MAX_THREADS_PER_BLOCK}")
        if self.warp_ops and threads % loop.WARP_SIZE:
            raise self.fail(
                f"{loop.warp_ops_phrase(self.warp_ops)} in a block of {threads} threads (a block with warp-wide ops must be whole "
                f"warps of {loop.WARP_SIZE})"
            )
        out = gpu.FuncOp(
            self.name, (arg_types, []), Region(body), kernel=True, known_block_size=self.launch.block
        )
        loop.copy_kernel_facts(self.kernel, out)
        return out

    def convert_ops(self, block: Block, ops: list[Operation], in_thread: set[str], in_block: bool) -> None:
        """Convert ``ops`` into ``block``. ``in_thread``: the thread axes bound around
        (empty: block level); ``in_block``: inside a block loop."""
        for op in ops:
            if not in_thread and self.has_threads and not self._holds_phases(op):
                reads, writes = _shared_accesses(op)
                if self.phases.conflicts(reads, writes):
                    self._ins(block, gpu.BarrierOp())
                    self.phases = _Phases()
                self.phases.reads |= reads
                self.phases.writes |= writes
            self.convert_op(block, op, in_thread, in_block)

    def _holds_phases(self, op: Operation) -> bool:
        """A block loop, or a serial loop around thread loops: barriers go inside it."""
        if not isinstance(op, loop.ForOp) or op.kind.data.startswith("threadIdx"):
            return False
        return op.kind.data.startswith("blockIdx") or any(
            isinstance(f, loop.ForOp) and f.kind.data.startswith("threadIdx") for f in op.walk()
        )

    def convert_op(self, block: Block, op: Operation, in_thread: set[str], in_block: bool) -> None:
        v = self.values
        match op:
            case loop.ForOp():
                self.convert_for(block, op, in_thread, in_block)
            case loop.YieldOp():
                pass
            case loop.LoadOp():
                v[op.result] = self._ins(block, memref.LoadOp.get(v[op.buffer], [v[i] for i in op.indices]))
            case loop.StoreOp():
                if self.has_threads and not in_thread and not self._is_local(op.buffer):
                    raise self.fail(
                        "a store outside the threadIdx loops would run in every thread of a block "
                        "(bind the loops around it to thread axes)"
                    )
                self._ins(block, memref.StoreOp.get(v[op.value], v[op.buffer], [v[i] for i in op.indices]))
            case loop.AllocOp():
                self.convert_alloc(block, op, in_thread)
            case loop.FreeOp():
                raise self.fail("frees a buffer (kernels only use local and shared buffers)")
            case loop.ShuffleXorOp():
                self._check_converged(op)
                self.warp_ops.add(op.name)
                v[op.result] = self._ins(block, loop.ShuffleXorOp(v[op.value], op.offset.value.data, op.width.value.data))
            case loop.MmaTf32Op():
                self._check_converged(op)
                self.warp_ops.add(op.name)
                new = loop.MmaTf32Op(*([v[x] for x in part] for part in (op.a, op.b, op.c)))
                self._ins(block, new)
                v.update(zip(op.results, new.results))
            case loop.DimOp():
                axis = self._ins(block, arith.ConstantOp(IntegerAttr(op.axis.value.data, INDEX)))
                v[op.result] = self._ins(block, memref.DimOp(v[op.buffer], axis))
            case func.ReturnOp():
                self._ins(block, gpu.ReturnOp([]))
            case func.CallOp():
                raise self.fail(f"calls '@{op.callee.string_value()}' (tensorized kernels do not run on the GPU)")
            case _ if is_scalar_arithmetic(op):
                new = op.clone(value_mapper={k: v[k] for k in op.operands if k in v})
                missing = [o for o in op.operands if o not in v]
                if missing:
                    raise self.fail(f"'{op.name}' uses a value defined outside its reach")
                self._ins(block, new)
                for old, res in zip(op.results, new.results):
                    v[old] = res
            case _:
                raise self.fail(f"no GPU lowering for '{op.name}'")

    def _check_converged(self, op: loop.ShuffleXorOp | loop.MmaTf32Op) -> None:
        """Every lane of a warp reaches ``op`` together (module docstring, last rule)."""
        what_op = "a shuffle" if isinstance(op, loop.ShuffleXorOp) else f"'{op.name}'"
        thread_loops: list[loop.ForOp] = []
        serial: list[loop.ForOp] = []
        parent = op.parent_op()
        while parent is not None and parent is not self.kernel:
            if isinstance(parent, loop.ForOp):
                what = _axis_of(parent.kind.data)
                if what is not None and what[0] == "threadIdx":
                    thread_loops.append(parent)
                elif what is None and not thread_loops:
                    serial.append(parent)  # inside the innermost thread loop
            parent = parent.parent_op()
        for f in thread_loops:
            what, d = _axis_of(f.kind.data)
            ub = _static(f.ub)
            exact = ub is not None and _trip_bound(f) == self.launch.block[d]
            if not exact and (d != 0 or ub is None or _static(f.lb) != 0 or _static(f.step) != 1 or ub % loop.WARP_SIZE):
                raise self.fail(
                    f"{what_op} inside loop '{f.loop_name.data}' ({f.kind.data}), whose guard would split a warp "
                    f"(a guarded loop around a shuffle runs along threadIdx.x from 0 by 1 to a multiple of {loop.WARP_SIZE})"
                )
        for f in serial:
            if thread_loops and any(_in_thread_loop(b) for b in (f.lb, f.ub, f.step)):
                raise self.fail(
                    f"{what_op} inside loop '{f.loop_name.data}', whose bounds depend on the thread "
                    "(lanes of a warp would leave the loop apart)"
                )

    def _is_local(self, buffer: SSAValue) -> bool:
        return isinstance(buffer.owner, loop.AllocOp) and buffer.owner.scope.data == "local"

    def convert_alloc(self, block: Block, op: loop.AllocOp, in_thread: set[str]) -> None:
        t: MemRefType = op.result.type
        scope = op.scope.data
        if scope == "global":
            raise self.fail("allocates a global buffer inside a kernel (the host allocates them)")
        if any(d < 0 for d in t.get_shape()):
            raise self.fail(f"a {scope} buffer needs a static shape, got {t}")
        if scope == "shared":
            if in_thread:
                raise self.fail("a shared buffer must be allocated outside the threadIdx loops (one per block)")
            new_type = MemRefType(t.element_type, t.get_shape(), memory_space=SHARED_MEMORY_SPACE)
        else:
            new_type = MemRefType(t.element_type, t.get_shape())
        self.values[op.result] = self._ins(block, memref.AllocaOp.get(new_type.element_type, shape=new_type.get_shape(), memory_space=new_type.memory_space))

    # -- loops ----------------------------------------------------------------------

    def convert_for(self, block: Block, op: loop.ForOp, in_thread: set[str], in_block: bool) -> None:
        v = self.values
        axis = _axis_of(op.kind.data)
        if axis is None:
            self.convert_serial(block, op, in_thread, in_block)
            return
        what, d = axis
        if what == "blockIdx":
            if in_thread or self.launch.grid[d] is not None:
                raise self.fail(f"loop '{op.loop_name.data}' ({op.kind.data}) must be outside thread loops and bound once")
            self.launch.grid[d] = (op.lb, op.ub, op.step)
            index = self._id(block, what, d)
            self._bind_iv(block, op, index)
            self.convert_ops(block, list(op.body.block.ops), in_thread, in_block=True)
            return
        if op.kind.data in in_thread:
            raise self.fail(f"loop '{op.loop_name.data}' is bound to {op.kind.data} inside a loop bound to it")
        extent = _trip_bound(op)
        if extent is None:
            raise self.fail(
                f"loop '{op.loop_name.data}' is bound to {op.kind.data} but has no compile-time trip bound (split it first)"
            )
        self.launch.block[d] = max(self.launch.block[d], extent)
        index = self._id(block, what, d)
        iv = self._bind_iv(block, op, index)
        exact = _static(op.ub) is not None and extent == self.launch.block[d]
        inner = block
        if not exact:
            # threads past this loop's end (a partial tile, or a shorter phase) idle
            in_range = self._ins(block, arith.CmpiOp(iv, v[op.ub], "slt"))
            guarded = Block()
            inner = guarded
            if_op = scf.IfOp(in_range, [], Region(guarded))
        self.convert_ops(inner, list(op.body.block.ops), in_thread | {op.kind.data}, in_block)
        if not exact:
            guarded.add_op(scf.YieldOp())
            self._ins(block, if_op)

    def _bind_iv(self, block: Block, op: loop.ForOp, index: SSAValue) -> SSAValue:
        """The loop's induction variable for GPU index ``index``: ``lb + index * step``."""
        v = self.values
        scaled = index if _static(op.step) == 1 else self._ins(block, arith.MuliOp(index, v[op.step]))
        iv = scaled if _static(op.lb) == 0 else self._ins(block, arith.AddiOp(v[op.lb], scaled))
        v[op.induction_var] = iv
        if op.loop_name.data:
            iv.name_hint = _c_name(op.loop_name.data)
        return iv

    def convert_serial(self, block: Block, op: loop.ForOp, in_thread: set[str], in_block: bool) -> None:
        v = self.values
        kind = "unrolled" if op.kind.data == "unrolled" else "serial"
        body = Block(arg_types=[INDEX])
        new = loop.ForOp(v[op.lb], v[op.ub], v[op.step], body, kind=kind, name=op.loop_name.data, role=op.loop_role)
        v[op.induction_var] = body.args[0]
        holds_phases = not in_thread and self.has_threads and self._holds_phases(op)
        if holds_phases:
            reads, writes = _shared_accesses(op)
            if self.phases.conflicts(reads, writes):
                self._ins(block, gpu.BarrierOp())
            self.phases = _Phases()
        self.convert_ops(body, list(op.body.block.ops), in_thread, in_block)
        if holds_phases and self.phases.conflicts(reads, writes):
            # the next iteration's phases write what this one's last phases use
            body.add_op(gpu.BarrierOp())
            self.phases = _Phases()
        body.add_op(loop.YieldOp())
        self._ins(block, new)


def _c_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


# ---------------------------------------------------------------------------
# host side


class _HostValues:
    """Re-computes a kernel's pure index values (grid bounds) on the host, from the
    operands of one call."""

    def __init__(self, call: func.CallOp, kernel: func.FuncOp, launch_name: str):
        self.call, self.kernel = call, kernel
        self.values: dict[SSAValue, SSAValue] = dict(zip(kernel.body.block.args, call.arguments))
        self.launch_name = launch_name

    def _ins(self, op: Operation) -> SSAValue:
        self.call.parent_block().insert_op_before(op, self.call)
        return op.results[0]

    def get(self, value: SSAValue) -> SSAValue:
        if value in self.values:
            return self.values[value]
        owner = value.owner
        if isinstance(owner, loop.DimOp):
            new = loop.DimOp(self.get(owner.buffer), owner.axis.value.data)
        elif isinstance(owner, Operation) and owner.name.startswith("arith.") and not owner.regions:
            new = owner.clone(value_mapper={o: self.get(o) for o in owner.operands})
        else:
            raise PassFailedException(
                f"loop-to-gpu: kernel '{self.launch_name}': a block loop's bounds depend on a loop "
                "variable or a loaded value (the grid size must follow from the argument sizes)"
            )
        self.values[value] = self._ins(new)
        return self.values[value]

    def const(self, n: int) -> SSAValue:
        return self._ins(arith.ConstantOp(IntegerAttr(n, INDEX)))

    def trip_count(self, lb: SSAValue, ub: SSAValue, step: SSAValue) -> SSAValue:
        """``max(0, ceil((ub - lb) / step))`` on the host."""
        span = self._ins(arith.SubiOp(self.get(ub), self.get(lb)))
        step_v = self.get(step)
        up = self._ins(arith.AddiOp(span, self._ins(arith.SubiOp(step_v, self.const(1)))))
        trips = self._ins(arith.DivSIOp(up, step_v))
        return self._ins(arith.MaxSIOp(trips, self.const(0)))


def _launch_from_call(call: func.CallOp, launch: Launch) -> None:
    host = _HostValues(call, launch.kernel, launch.kernel.sym_name.data)
    grid = [host.const(1) if g is None else host.trip_count(*g) for g in launch.grid]
    block = [host.const(b) for b in launch.block]
    target = SymbolRefAttr(GPU_MODULE, [call.callee.root_reference])
    new = gpu.LaunchFuncOp(target, grid, block, kernelOperands=list(call.arguments))
    Rewriter.replace_op(call, new)


@dataclass(frozen=True)
class LoopToGPUPass(ModulePass):
    """Move every kernel (``tk.kernel`` functions) into ``gpu.module @kernels`` as a
    ``gpu.func`` and turn the host's calls into ``gpu.launch_func``."""

    name = "loop-to-gpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = loop.kernels(op)
        if not kernels:
            return
        launches: dict[str, Launch] = {}
        gpu_funcs = []
        for kernel in kernels:
            converter = _KernelConverter(kernel)
            gpu_funcs.append(converter.convert())
            launches[kernel.sym_name.data] = converter.launch
        for call in [c for c in op.walk() if isinstance(c, func.CallOp)]:
            launch = launches.get(call.callee.string_value())
            if launch is not None:
                _launch_from_call(call, launch)
        for kernel in kernels:
            kernel.detach()
        module_body = Block()
        for f in gpu_funcs:
            module_body.add_op(f)
        op.body.block.add_op(gpu.ModuleOp(StringAttr(GPU_MODULE), Region(module_body)))
        op.attributes["gpu.container_module"] = UnitAttr()


def gpu_module_of(module: ModuleOp) -> gpu.ModuleOp:
    """The ``gpu.module`` that :class:`LoopToGPUPass` made."""
    for op in module.ops:
        if isinstance(op, gpu.ModuleOp):
            return op
    raise ValueError("no gpu.module in this module (run loop-to-gpu first)")


__all__ = ["GPU_MODULE", "SHARED_MEMORY_SPACE", "LoopToGPUPass", "gpu_module_of", "is_shared"]

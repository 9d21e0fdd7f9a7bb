"""A GPU template for reductions along one loop (rows of softmax, layer-norm statistics,
sums, max...): one block per output element, its threads sharing the reduction.

te-to-loop writes a reduction as, for each output element::

    <pre ops>                                   // e.g. the row max that softmax_sum subtracts
    %acc = loop.alloc() {scope = "local"} : memref<f32>
    loop.store %init, %acc[]
    loop.for %k = %lb to %ub step %s name("k0") { ...; %r = combine(load %acc[], %x); loop.store %r, %acc[] }
    <post ops>                                  // the epilogue, ending with the output store

:func:`block_reduction` rebuilds that nest (the same ops, cloned) as::

    loop.for %o = 0 to <outputs> blockIdx.x {            // output element o
      %warps = loop.alloc() {scope = "shared"} : memref<8xf32>
      %result = loop.alloc() {scope = "shared"} : memref<1xf32>
      loop.for %t = 0 to 256 threadIdx.x {              // each thread: a strided partial
        <pre ops>; %p0..%p3 = local; %pi[] = %init       // four accumulators:
        loop.for %k = %lb + t*s to %ub - 3*256*s step 4*256*s {   // their loads in flight together
          <k body on %p0>; <k + 256*s body on %p1>; ...; <k + 3*256*s body on %p3> }
        loop.for %k = <where that ended> to %ub step 256*s { <k body on %p0> }   // the rest
        %p = combine(combine(%p0, %p1), combine(%p2, %p3))
        %v = combine(%p[], shuffle_xor(%p[], 16))        // a butterfly within each warp:
        ... offsets 8, 4, 2, 1                          // every lane ends with its warp's value
        loop.for %_ = %t % 32 to 1 { %warps[%t / 32] = %v }   // lane 0 of each warp
      }                                                 // (barrier)
      loop.for %t = 0 to 32 threadIdx.x {               // the first warp: the 8 warp values
        %w = %warps[%t % 8]; butterfly of offsets 4, 2, 1 within segments of 8 lanes
        loop.for %_ = %t to 1 { %result[0] = %w }
      }                                                 // (barrier)
      loop.for %t = 0 to 1 threadIdx.x { <pre ops>; <post ops reading %result[0]> }
    }

Two barriers per block (loop-to-gpu puts them between the phases), where a
shared-memory tree needs one per halving. :func:`block_allreduce` is the middle part
on its own: any per-thread value of a 256-thread phase, combined across the block into
a shared buffer that the phases after it read (for kernels with several reductions).

The partial results are combined in a different order than the serial loop, so only
reassociable combiners are accepted (float add/mul with the ``reassoc`` flag, min, max,
integer add/mul/min/max: wrapping sums and products are exact in any order); anything
else raises ScheduleError and the kernel keeps another strategy. Idle threads (past the
end of a short row) contribute the initial value, which is the combiner's identity in
the reductions te-to-loop writes (0 for add, 1 for mul).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import loop
from .nest import ScheduleError, body_ops, defined_inside, static_value

INDEX = IndexType()
#: threads per block of a block reduction (a power of two)
REDUCTION_THREADS = 256
#: reductions shorter than this (known at compile time) keep one thread per output
MIN_BLOCK_REDUCTION = 64

P = "block_reduction"


def reassociable(op: Operation) -> bool:
    """Whether combining partial results with ``op`` in another order is allowed."""
    if isinstance(op, arith.MaximumfOp | arith.MinimumfOp | arith.AddiOp | arith.MuliOp | arith.MaxSIOp | arith.MinSIOp):
        return True
    if isinstance(op, arith.AddfOp | arith.MulfOp):
        return "reassoc" in [str(f) for f in op.fastmath.data] if op.fastmath is not None else False
    return False


@dataclass
class ReductionNest:
    """A perfect output nest whose innermost body reduces over one loop."""

    loops: list[loop.ForOp]
    pre: list[Operation]
    acc: loop.AllocOp
    init: loop.StoreOp
    reduction: loop.ForOp
    combine: Operation
    #: the combine operand that is the accumulator's old value
    old: SSAValue
    post: list[Operation]


def output_loops_of(kernel: func.FuncOp) -> list[loop.ForOp]:
    """The kernel's loop nest down to its innermost output loop (``i...``), outermost first,
    whatever ops stand between the loops."""
    top = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    if len(top) != 1:
        raise ScheduleError(P, f"expected one loop nest, found {len(top)}")
    if not is_output_loop(top[0]):
        raise ScheduleError(P, "the kernel has no output loop (a 0-d result; see unit_output_loop)")
    loops = [top[0]]
    while True:
        inner = [op for op in body_ops(loops[-1]) if isinstance(op, loop.ForOp)]
        if len(inner) != 1 or not is_output_loop(inner[0]):
            return loops
        loops.append(inner[0])


def is_output_loop(f: loop.ForOp) -> bool:
    """An output loop (role ``spatial``: te-to-loop's ``i0, i1, ...``); a fused or split
    output loop keeps the role."""
    return f.loop_role == "spatial"


def unit_output_loop(kernel: func.FuncOp) -> None:
    """Give a kernel without an output loop (a 0-d result: a full reduction, a scalar
    op) one, ``i0`` of one trip, around its body, so that every template sees the usual
    nest: a full reduction becomes one block's reduction instead of one thread's."""
    block = kernel.body.block
    ops = [op for op in block.ops if not isinstance(op, func.ReturnOp)]
    if any(isinstance(op, loop.ForOp) and is_output_loop(op) for op in ops):
        return
    body = Block(arg_types=[INDEX])
    for op in ops:
        op.detach()
        body.add_op(op)
    body.add_op(loop.YieldOp())
    zero, one = arith.ConstantOp(IntegerAttr(0, INDEX)), arith.ConstantOp(IntegerAttr(1, INDEX))
    unit = loop.ForOp(zero, one, one, body, kind="serial", name="i0", role="spatial")
    block.insert_ops_before([zero, one, unit], block.last_op)


def fuse_reduction_loops(schedule) -> None:
    """Fuse the perfectly nested reduction loops inside the innermost output loop (a sum
    over several axes) into one, the form the reduction templates take."""
    loops = output_nest(schedule.kernel)
    inner = [op for op in body_ops(loops[-1]) if isinstance(op, loop.ForOp)]
    if len(inner) != 1:
        raise ScheduleError(P, "not one reduction loop nest")
    reductions = [inner[0]]
    while len(nested := [op for op in body_ops(reductions[-1]) if isinstance(op, loop.ForOp)]) == 1:
        reductions.append(nested[0])
    if len(reductions) > 1:
        fuse_all(schedule, [f.loop_name.data for f in reductions])


def output_nest(kernel: func.FuncOp) -> list[loop.ForOp]:
    """The kernel's output loops ``i0, i1, ...``: a perfect rectangular nest from 0 step 1."""
    loops = output_loops_of(kernel)
    for outer, inner in zip(loops, loops[1:]):
        if any(not isinstance(op, arith.ConstantOp) for op in body_ops(outer) if op is not inner):
            raise ScheduleError(P, "ops between the output loops")
    for f in loops:
        if static_value(f.lb) != 0 or static_value(f.step) != 1:
            raise ScheduleError(P, f"loop '{f.loop_name.data}' does not run from 0 by 1")
        if defined_inside(f.ub, loops[0]):
            raise ScheduleError(P, f"the bound of loop '{f.loop_name.data}' depends on an outer loop")
    return loops


def reduction_nest(kernel: func.FuncOp) -> ReductionNest:
    loops = output_nest(kernel)
    ops = body_ops(loops[-1])
    allocs = [k for k, op in enumerate(ops) if isinstance(op, loop.AllocOp)]
    red_loops = [k for k, op in enumerate(ops) if isinstance(op, loop.ForOp)]
    if len(allocs) != 1 or len(red_loops) != 1:
        raise ScheduleError(P, "not one accumulator and one reduction loop")
    a, r = allocs[0], red_loops[0]
    acc, init, reduction = ops[a], ops[a + 1], ops[r]
    if acc.scope.data != "local" or acc.result.type.get_shape() != () or r != a + 2:
        raise ScheduleError(P, "the accumulator is not a scalar initialised right before the loop")
    if not isinstance(init, loop.StoreOp) or init.buffer is not acc.result:
        raise ScheduleError(P, "the accumulator is not initialised")
    if any(isinstance(op, loop.ForOp) for op in reduction.walk() if op is not reduction):
        raise ScheduleError(P, "nested reduction loops")
    stores = [op for op in reduction.walk() if isinstance(op, loop.StoreOp)]
    if len(stores) != 1 or stores[0].buffer is not acc.result:
        raise ScheduleError(P, "the reduction loop stores elsewhere than its accumulator")
    combine = stores[0].value.owner
    if not isinstance(combine, Operation) or not reassociable(combine):
        raise ScheduleError(P, "the combiner is not reassociable")
    olds = [v for v in combine.operands if isinstance(v.owner, loop.LoadOp) and v.owner.buffer is acc.result]
    if len(olds) != 1 or len(combine.operands) != 2:
        raise ScheduleError(P, "the combiner does not combine the accumulator with one value")
    pre = ops[:a]
    if any(op.regions or isinstance(op, loop.StoreOp | loop.AllocOp) for op in pre):
        raise ScheduleError(P, "unexpected ops before the accumulator")
    return ReductionNest(loops, pre, acc, init, reduction, combine, olds[0], ops[r + 1 :])


class Emitter:
    """Appends ops to a block (before its terminator)."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue | None:
        last = self.block.last_op
        if isinstance(last, loop.YieldOp):
            self.block.insert_op_before(op, last)
        else:
            self.block.add_op(op)
        return op.results[0] if op.results else None

    def const(self, n: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(n, INDEX)))

    def loop(self, lb: SSAValue, ub: SSAValue, step: SSAValue, kind: str, name: str) -> tuple[Block, SSAValue]:
        body = Block(arg_types=[INDEX])
        body.add_op(loop.YieldOp())
        self.add(loop.ForOp(lb, ub, step, body, kind=kind, name=name))
        return body, body.args[0]

    def clone(self, ops: list[Operation], mapping: dict[SSAValue, SSAValue]) -> None:
        for op in ops:
            new = op.clone(value_mapper=mapping)
            self.add(new)
            for old, res in zip(op.results, new.results):
                mapping[old] = res


def fuse_all(schedule, names: list[str]) -> str:
    """Fuse the perfectly nested loops ``names`` (outermost first) into one; its name."""
    fused = names[0]
    for name in names[1:]:
        fused = schedule.fuse(fused, name)
    return fused


def decompose(e: Emitter, flat: SSAValue, loops: list[loop.ForOp]) -> dict[SSAValue, SSAValue]:
    """The output loops' induction variables of the flat index ``flat`` (row-major)."""
    mapping: dict[SSAValue, SSAValue] = {}
    rest = flat
    for f in reversed(loops[1:]):
        mapping[f.induction_var] = e.add(arith.RemUIOp(rest, f.ub))
        rest = e.add(arith.DivUIOp(rest, f.ub))
    mapping[loops[0].induction_var] = rest
    return mapping


@dataclass(frozen=True)
class Combiner:
    """How two partial results of a reduction combine: its combine op, cloned with new
    operands (``old`` is the operand that was the accumulator)."""

    op: Operation
    old: SSAValue

    def __call__(self, e: Emitter, acc: SSAValue, x: SSAValue) -> SSAValue:
        a, b = self.op.operands
        other = b if a is self.old else a
        return e.add(self.op.clone(value_mapper={self.old: acc, other: x}))


def warp_allreduce(e: Emitter, value: SSAValue, combine: Combiner, width: int = loop.WARP_SIZE) -> SSAValue:
    """A butterfly of xor shuffles (offsets width/2, ..., 2, 1): every lane of each segment
    of ``width`` lanes ends with the combination of the segment's values (the same bits in
    every lane: each step combines the same two values, in either order)."""
    offset = width // 2
    while offset >= 1:
        value = combine(e, value, e.add(loop.ShuffleXorOp(value, offset, width)))
        offset //= 2
    return value


def _in_lane_zero(e: Emitter, lane: SSAValue) -> Emitter:
    """An emitter whose ops run only in lane 0: a loop from the lane to 1 (one trip or none)."""
    body, _ = e.loop(lane, e.const(1), e.const(1), "serial", "lane0")
    return Emitter(body)


def block_allreduce(
    b: Emitter,
    element_type: Attribute,
    combine: Combiner,
    partial: Callable[[Emitter, SSAValue], SSAValue],
    threads: int = REDUCTION_THREADS,
    name: str = "partial",
) -> SSAValue:
    """Combine one value per thread across a block; returns a ``shared`` buffer
    ``memref<1xT>`` whose element is the result for the phases emitted after this one.

    ``b`` emits into the block loop's body. ``partial(pe, t)`` emits, into the phase of
    ``threads`` threads (``t``: the thread), the code computing the thread's value and
    returns it. Each warp combines its values with shuffles, lane 0 stores the warp's
    value in shared memory, and (after a barrier) the first warp combines those the
    same way into the result (module docstring). Example::

        result = block_allreduce(b, f32, Combiner(max_op, acc_load), lambda pe, t: my_partial(pe, t))
        # a later phase: loop.load %result[%c0]
    """
    warp = loop.WARP_SIZE
    warps = threads // warp
    if threads % warp or warps & (warps - 1) or warps > warp:
        raise ScheduleError(P, f"{threads} threads are not a power-of-two number of warps (at most {warp})")
    if not loop.shuffle_type_ok(element_type):
        raise ScheduleError(P, f"warp shuffles do not move {element_type}")
    warp_values = b.add(loop.AllocOp(MemRefType(element_type, [warps]), scope="shared")) if warps > 1 else None
    result = b.add(loop.AllocOp(MemRefType(element_type, [1]), scope="shared"))
    body, t = b.loop(b.const(0), b.const(threads), b.const(1), "threadIdx.x", name)
    pe = Emitter(body)
    value = warp_allreduce(pe, partial(pe, t), combine)
    w = pe.const(warp)
    lane, warp_index = pe.add(arith.RemUIOp(t, w)), pe.add(arith.DivUIOp(t, w))
    lane0 = _in_lane_zero(pe, lane)
    if warp_values is None:  # one warp: its value is the block's
        lane0.add(loop.StoreOp(value, result, [lane0.const(0)]))
        return result
    lane0.add(loop.StoreOp(value, warp_values, [warp_index]))
    # the first warp, whole (every lane shuffles): segments of `warps` lanes each combine
    # all the warp values, lane 0 keeps them
    body, t = b.loop(b.const(0), b.const(warp), b.const(1), "threadIdx.x", f"{name}.warps")
    we = Emitter(body)
    mine = we.add(loop.LoadOp(warp_values, [we.add(arith.RemUIOp(t, we.const(warps)))]))
    value = warp_allreduce(we, mine, combine, warps)
    lane0 = _in_lane_zero(we, t)
    lane0.add(loop.StoreOp(value, result, [lane0.const(0)]))
    return result


def strided_partial(pe: Emitter, nest: ReductionNest, mapping: dict[SSAValue, SSAValue], first: SSAValue, count: SSAValue) -> SSAValue:
    """Emit one thread's share of the reduction of the output element that ``mapping``
    gives the loops of (``nest.pre`` already cloned there): its iterations ``first``,
    ``first + count``, ... combined from the initial value; returns the partial value."""
    combiner = Combiner(nest.combine, nest.old)
    return accumulate_strided(pe, nest.reduction, nest.acc, nest.init, combiner, mapping, first, count)


#: independent accumulators per thread in a strided partial: their loads are in flight
#: together, where one accumulator chains each load behind the last combine
ACCUMULATORS = 4


def accumulate_strided(
    pe: Emitter,
    reduction: loop.ForOp,
    acc: loop.AllocOp,
    init: loop.StoreOp,
    combine: Combiner,
    mapping: dict[SSAValue, SSAValue],
    first: SSAValue,
    count: SSAValue,
) -> SSAValue:
    """The iterations ``first``, ``first + count``, ... of ``reduction`` (a loop that
    combines into the scalar ``acc``, initialised by ``init``), emitted into ``pe`` with
    ``ACCUMULATORS`` accumulators: a main loop taking that many iterations a step, each
    into its own accumulator, then the rest into the first; returns their combination.
    ``mapping`` maps the values defined outside the loop."""
    r = reduction
    step = mapping.get(r.step, r.step)
    lb = pe.add(arith.AddiOp(mapping.get(r.lb, r.lb), pe.add(arith.MuliOp(first, step))))
    ub = mapping.get(r.ub, r.ub)
    stride = pe.add(arith.MuliOp(count, step))  # between a thread's iterations
    n = ACCUMULATORS
    accs = []
    for _ in range(n):
        accs.append(pe.add(loop.AllocOp(acc.result.type, scope="local")))
        pe.clone([init], mapping | {acc.result: accs[-1]})
    # the main loop runs while its last iteration k + (n-1)*stride is below ub
    spread = pe.add(arith.MuliOp(stride, pe.const(n - 1)))
    main_step = pe.add(arith.MuliOp(stride, pe.const(n)))
    main_ub = pe.add(arith.SubiOp(ub, spread))
    offsets = [pe.add(arith.MuliOp(stride, pe.const(u))) for u in range(1, n)]
    main_body, k = pe.loop(lb, main_ub, main_step, "serial", r.loop_name.data)
    me = Emitter(main_body)
    for acc_u, k_u in zip(accs, [k] + [me.add(arith.AddiOp(k, offset)) for offset in offsets]):
        me.clone(body_ops(r), mapping | {acc.result: acc_u, r.induction_var: k_u})
    # the rest start after the main loop's ceil((main_ub - lb) / main_step) steps (none if negative)
    span = pe.add(arith.AddiOp(pe.add(arith.SubiOp(main_ub, lb)), pe.add(arith.SubiOp(main_step, pe.const(1)))))
    steps = pe.add(arith.DivSIOp(pe.add(arith.MaxSIOp(span, pe.const(0))), main_step))
    rest_lb = pe.add(arith.AddiOp(lb, pe.add(arith.MuliOp(steps, main_step))))
    rest_body, k = pe.loop(rest_lb, ub, stride, "serial", f"{r.loop_name.data}.rest")
    Emitter(rest_body).clone(body_ops(r), mapping | {acc.result: accs[0], r.induction_var: k})
    values = [pe.add(loop.LoadOp(a, [])) for a in accs]
    while len(values) > 1:  # pairwise: ((a0 . a1) . (a2 . a3))
        values = [combine(pe, values[i], values[i + 1]) if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)]
    return values[0]


def write_result(pe: Emitter, nest: ReductionNest, mapping: dict[SSAValue, SSAValue], value: SSAValue) -> None:
    """Emit the epilogue (``nest.post``: e.g. the output store) on the reduced ``value``."""
    final = pe.add(loop.AllocOp(nest.acc.result.type, scope="local"))
    pe.add(loop.StoreOp(value, final, []))
    mapping[nest.acc.result] = final
    pe.clone(nest.post, mapping)


def block_reduction(schedule) -> None:
    """Rebuild a reduction kernel as one block per output element (module docstring)."""
    kernel: func.FuncOp = schedule.kernel
    fuse_reduction_loops(schedule)
    nest = reduction_nest(kernel)
    trips = static_value(nest.reduction.ub)
    # a single output (a full reduction) takes a block whatever its length: there is no
    # other output for the idle threads to work on
    single = all(static_value(f.ub) == 1 for f in nest.loops)
    if trips is not None and trips < MIN_BLOCK_REDUCTION and not single:
        raise ScheduleError(P, f"a reduction of {trips} is too short for a block")
    element_type = nest.acc.result.type.element_type
    if not loop.shuffle_type_ok(element_type):
        raise ScheduleError(P, f"warp shuffles do not move {element_type}")
    threads = REDUCTION_THREADS
    top = nest.loops[0]
    # build before the old nest, then drop it
    anchor = Block()
    e = Emitter(anchor)
    count = nest.loops[0].ub
    for f in nest.loops[1:]:
        count = e.add(arith.MuliOp(count, f.ub))
    zero, one = e.const(0), e.const(1)
    block_body, o = e.loop(zero, count, one, "blockIdx.x", "out")
    b = Emitter(block_body)
    t_count = b.const(threads)

    def partial(pe: Emitter, t: SSAValue) -> SSAValue:
        """This thread's strided partial: iterations t, t + 256, ... of the reduction."""
        mapping = decompose(pe, o, nest.loops)
        pe.clone(nest.pre, mapping)
        return strided_partial(pe, nest, mapping, t, t_count)

    result = block_allreduce(b, element_type, Combiner(nest.combine, nest.old), partial, threads)
    # the epilogue, in one thread
    body, _ = b.loop(b.const(0), b.const(1), b.const(1), "threadIdx.x", "write")
    pe = Emitter(body)
    mapping = decompose(pe, o, nest.loops)
    pe.clone(nest.pre, mapping)
    write_result(pe, nest, mapping, pe.add(loop.LoadOp(result, [pe.const(0)])))
    for op in list(anchor.ops):
        op.detach()
        kernel.body.block.insert_op_before(op, top)
    top.detach()
    top.erase()


__all__ = [
    "ACCUMULATORS",
    "MIN_BLOCK_REDUCTION",
    "REDUCTION_THREADS",
    "Combiner",
    "ReductionNest",
    "accumulate_strided",
    "block_allreduce",
    "block_reduction",
    "fuse_all",
    "fuse_reduction_loops",
    "is_output_loop",
    "output_loops_of",
    "reduction_nest",
    "strided_partial",
    "unit_output_loop",
    "warp_allreduce",
    "write_result",
]

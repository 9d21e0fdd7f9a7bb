"""Loop-structure primitives: split, reorder, fuse, tile, and the loop kinds
(parallel, vectorize, unroll, bind).

Each takes a kernel (``func.func``) and loop names, transforms the kernel in place,
and raises :class:`ScheduleError` (leaving the kernel unchanged) when a loop does not
exist or the transformation is illegal. Example, on a matmul kernel::

    split(kernel, "i0", 4)            # i0 -> i0.outer, i0.inner (any trip count)
    split(kernel, "i1", 16)
    reorder(kernel, "i0.outer", "i1.outer", "i0.inner", "i1.inner")
    vectorize(kernel, "i1.inner")     # after cache_write, see cache.py
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from xdsl.builder import InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, SSAValue

from ..dialects.loop import GPU_BINDINGS, ForOp, LoadOp, StoreOp, YieldOp, set_max_threads
from ..dialects.walk import walk_ops
from .nest import (
    INDEX,
    Dependence,
    IndexBuilder,
    ScheduleError,
    all_loops,
    band,
    body_ops,
    check_new_names,
    defined_inside,
    describe_buffer,
    find_loop,
    is_movable,
    is_reduction_update,
    operand_closure,
    static_trip_bound,
    static_value,
    transformation,
    written_buffers,
)


def _require_kind(primitive: str, for_op: ForOp, kinds: Sequence[str] = ("serial",)) -> None:
    if for_op.kind.data not in kinds:
        raise ScheduleError(
            primitive,
            f"loop '{for_op.loop_name.data}' is {for_op.kind.data}; {primitive} needs a "
            f"{' or '.join(kinds)} loop (apply loop kinds last)",
        )


def _factor(primitive: str, factor: object) -> int:
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ScheduleError(primitive, f"the factor must be an integer >= 1, got {factor!r}")
    return factor


def _move_body(source: ForOp, target: Block) -> None:
    """Move ``source``'s body ops (not its yield) to the end of ``target`` (before its yield)."""
    anchor = target.last_op
    for op in body_ops(source):
        op.detach()
        target.insert_op_before(op, anchor)


def _replace_loop(old: ForOp, new: Operation) -> None:
    old.parent_block().insert_op_before(new, old)
    old.detach()
    old.erase()


# ---------------------------------------------------------------------------
# split


@transformation("split")
def split(kernel: func.FuncOp, loop: str, factor: int, tail: str = "guard") -> tuple[str, str]:
    """Split ``loop`` into ``<name>.outer`` (stepping by ``factor`` iterations) and
    ``<name>.inner`` (at most ``factor`` iterations); returns the two names.

    ``for x = lb to ub step s`` becomes::

        for xo = lb to ub step s*factor name("x.outer") {
          %n = arith.minsi %c(s*factor), (ub - xo)     // just %c(s*factor) when it divides
          for xi = 0 to %n step s name("x.inner") { x = xo + xi; body }
        }

    correct for any trip count: the last inner loop runs the remainder.

    ``tail="shift"`` (Halide's ShiftInwards) keeps every inner loop full instead: the
    last tile moves back to end at ``ub`` (``x = min(xo, ub - factor*s) + xi``), so the
    inner loop's trip count is the constant ``factor`` (registers, full unrolling) and
    some iterations run twice. Needs constant bounds, at least ``factor`` iterations,
    and a loop whose iterations may run again: nothing it stores to is also read in it.
    """
    P = "split"
    if tail not in ("guard", "shift"):
        raise ScheduleError(P, f"tail must be 'guard' or 'shift', got {tail!r}")
    x = find_loop(kernel, loop, P)
    factor = _factor(P, factor)
    _require_kind(P, x)
    outer_name, inner_name = f"{loop}.outer", f"{loop}.inner"
    check_new_names(kernel, (outer_name, inner_name), P, replaced=(loop,))

    before = IndexBuilder(kernel, InsertPoint.before(x))
    outer_step = before.mul(x.step, before.const(factor))
    outer = ForOp(x.lb, x.ub, outer_step, Block(arg_types=[INDEX]), kind=x.kind.data, name=outer_name, role=x.loop_role)
    outer.attributes |= dict(x.attributes)
    outer_block = outer.body.block
    outer_block.add_op(YieldOp())
    xo = outer_block.args[0]

    in_outer = IndexBuilder(kernel, InsertPoint.before(outer_block.last_op))
    trips = static_trip_bound(x) if static_value(x.ub) is not None else None
    base = xo
    if trips is not None and trips % factor == 0:
        inner_ub = outer_step  # a constant: every tile is full
    elif tail == "shift":
        _check_shiftable(P, kernel, x, trips, factor)
        inner_ub = outer_step
        last_start = in_outer.const(static_value(x.lb) + (trips - factor) * static_value(x.step))
        base = in_outer.min(xo, last_start)
    else:
        inner_ub = in_outer.min(outer_step, in_outer.sub(x.ub, xo))
    inner = ForOp(in_outer.const(0), inner_ub, x.step, Block(arg_types=[INDEX]), name=inner_name, role=x.loop_role)
    inner_block = inner.body.block
    inner_block.add_op(YieldOp())
    in_outer.builder.insert(inner)

    position = IndexBuilder(kernel, InsertPoint.before(inner_block.last_op)).add(base, inner_block.args[0])
    _move_body(x, inner_block)
    x.induction_var.replace_all_uses_with(position)
    _replace_loop(x, outer)
    return outer_name, inner_name


def _check_shiftable(primitive: str, kernel: func.FuncOp, x: ForOp, trips: int | None, factor: int) -> None:
    """``tail="shift"`` runs some iterations of ``x`` twice: legal when its trip count is
    known and at least ``factor``, and no buffer it stores to (outside it) is read in it
    (so running an iteration again stores the same values)."""
    name = x.loop_name.data
    if trips is None or static_value(x.lb) is None or static_value(x.step) is None:
        raise ScheduleError(primitive, f"tail='shift' needs constant bounds; loop '{name}' has none (use tail='guard')")
    if trips < factor:
        raise ScheduleError(
            primitive, f"tail='shift': loop '{name}' runs {trips} iterations, fewer than the factor {factor}"
        )
    stored = {op.buffer for op in walk_ops(x) if isinstance(op, StoreOp) and not defined_inside(op.buffer, x)}
    for op in walk_ops(x):
        if isinstance(op, func.CallOp):
            raise ScheduleError(primitive, f"tail='shift': loop '{name}' calls {op.callee}, which may accumulate")
        if isinstance(op, LoadOp) and op.buffer in stored:
            raise ScheduleError(
                primitive,
                f"tail='shift': loop '{name}' reads {describe_buffer(kernel, op.buffer)}, which it also writes "
                "(an iteration run twice could see its own result)",
            )


# ---------------------------------------------------------------------------
# reorder


def _nested_chain(primitive: str, kernel: func.FuncOp, names: Sequence[str]) -> tuple[list[ForOp], list]:
    """The band (chain, movable ops between) holding every loop of ``names``."""
    loops = [find_loop(kernel, n, primitive) for n in names]
    if len(set(names)) != len(names):
        raise ScheduleError(primitive, f"a loop is named twice in {list(names)}")
    top = loops[0]
    for other in loops[1:]:
        if other.is_ancestor(top):
            top = other
        elif not top.is_ancestor(other):
            raise ScheduleError(
                primitive, f"loops '{top.loop_name.data}' and '{other.loop_name.data}' are not nested in each other"
            )
    written = written_buffers(top)
    chain, between = band(top, written)
    for for_op in loops:
        if for_op not in chain:
            blocker = chain[-1]
            ops = body_ops(blocker)
            inner = sum(isinstance(op, ForOp) for op in ops)
            stray = sorted({op.name for op in ops if not isinstance(op, ForOp) and not is_movable(op, written)})
            holds = ", ".join(([f"{inner} loops"] if inner > 1 else []) + stray)
            raise ScheduleError(
                primitive,
                f"loop '{for_op.loop_name.data}' is not perfectly nested in '{top.loop_name.data}': "
                f"the body of '{blocker.loop_name.data}' also holds {holds}",
            )
    return chain, between


def _check_permutable(primitive: str, kernel: func.FuncOp, chain: list[ForOp], moved: Sequence[ForOp]) -> None:
    """Each element a band body writes outside it must be written by one iteration of
    every moved loop, or be a reduction update (whose order does not matter)."""
    innermost = chain[-1]
    for store in walk_ops(innermost):
        if not isinstance(store, StoreOp) or defined_inside(store.buffer, chain[0]):
            continue
        if is_reduction_update(store):
            continue
        for for_op in moved:
            depends = Dependence([for_op.induction_var])
            if not any(depends(i) for i in store.indices):
                raise ScheduleError(
                    primitive,
                    f"every iteration of loop '{for_op.loop_name.data}' writes the same elements of "
                    f"{describe_buffer(kernel, store.buffer)}; reordering it would change the result",
                )


def rebuild_band(
    primitive: str,
    kernel: func.FuncOp,
    chain: list[ForOp],
    between: list[Operation],
    order: list[ForOp],
) -> None:
    """Re-nest the band ``chain`` in ``order``. The movable ops between the loops go to
    the outermost place where their operands exist if a loop bound needs them, else to
    the top of the innermost body."""
    position = {for_op: k for k, for_op in enumerate(order)}
    iv_level = {for_op.induction_var: position[for_op] for for_op in chain}
    bound_values = [v for for_op in chain for v in (for_op.lb, for_op.ub, for_op.step)]
    bound_ops = operand_closure(bound_values, between)

    level: dict[Operation, int] = {}

    def level_of(value: SSAValue) -> int:
        if value in iv_level:
            return iv_level[value]
        return level.get(value.owner, -1)

    for op in between:
        level[op] = max((level_of(v) for v in op.operands), default=-1)
    for for_op in chain:
        for v in (for_op.lb, for_op.ub, for_op.step):
            if level_of(v) >= position[for_op]:
                culprit = order[level_of(v)]
                raise ScheduleError(
                    primitive,
                    f"the bounds of loop '{for_op.loop_name.data}' depend on loop '{culprit.loop_name.data}', "
                    "which would be inside it",
                )

    new_loops = [
        ForOp(f.lb, f.ub, f.step, Block(arg_types=[INDEX]), kind=f.kind.data, name=f.loop_name.data, role=f.loop_role)
        for f in order
    ]
    for new, old in zip(new_loops, order):
        new.attributes |= dict(old.attributes)
        new.body.block.add_op(YieldOp())
    top = chain[0]
    parent = top.parent_block()

    def place(op: Operation, lvl: int) -> None:
        op.detach()
        if lvl < 0:
            parent.insert_op_before(op, top)
        else:
            block = new_loops[lvl].body.block
            block.insert_op_before(op, block.last_op)

    for op in between:
        if op in bound_ops:
            place(op, level[op])
    for outer, inner in itertools.pairwise(new_loops):
        block = outer.body.block
        block.insert_op_before(inner, block.last_op)
    for op in between:
        if op not in bound_ops:
            place(op, len(order) - 1)
    _move_body(chain[-1], new_loops[-1].body.block)
    for new, old in zip(new_loops, order):
        old.induction_var.replace_all_uses_with(new.induction_var)
    _replace_loop(top, new_loops[0])
    for new in new_loops:
        if new.kind.data == "vectorized" and new is not new_loops[-1]:
            raise ScheduleError(primitive, f"vectorized loop '{new.loop_name.data}' would no longer be innermost")


@transformation("reorder")
def reorder(kernel: func.FuncOp, loops: Sequence[str]) -> None:
    """Permute perfectly nested loops: the named loops take the places the same loops
    held, in the order given (TVM's ``reorder``); loops not named stay where they are.

    Legal when the loops form a band (each the only loop in its parent, with only
    index arithmetic and loads beside it), no loop's bounds depend on a loop that would
    move inside it, and every element written is written once per iteration of each
    moved loop or is a reduction update.
    """
    P = "reorder"
    names = list(loops)
    if not names:
        raise ScheduleError(P, "no loops given")
    chain, between = _nested_chain(P, kernel, names)
    named = [find_loop(kernel, n, P) for n in names]
    slots = sorted(chain.index(f) for f in named)
    order = list(chain)
    for slot, for_op in zip(slots, named):
        order[slot] = for_op
    if order == chain:
        return
    _check_permutable(P, kernel, chain, [f for k, f in enumerate(order) if chain[k] is not f])
    rebuild_band(P, kernel, chain, between, order)


# ---------------------------------------------------------------------------
# fuse


@transformation("fuse")
def fuse(kernel: func.FuncOp, outer: str, inner: str) -> str:
    """Fuse ``outer`` and ``inner`` (directly, perfectly nested; inner's bounds not
    depending on outer) into one loop ``<outer>.<inner>.fused`` over the product of
    their trip counts; returns its name. The original induction variables are
    recovered as ``lb + (f / n_inner) * step`` and ``lb + (f % n_inner) * step``.
    """
    P = "fuse"
    o, i = find_loop(kernel, outer, P), find_loop(kernel, inner, P)
    chain, between = band(o, written_buffers(o))
    if len(chain) < 2 or chain[1] is not i:
        raise ScheduleError(P, f"loop '{inner}' is not perfectly nested directly inside loop '{outer}'")
    # only the ops between the two loops move; deeper ones (a split's tail bounds,
    # computed from a loop further in) stay where their operands are defined
    between = [op for op in between if op.parent_block() is o.body.block]
    _require_kind(P, o)
    _require_kind(P, i)
    fused_name = f"{outer}.{inner}.fused"
    check_new_names(kernel, [fused_name], P, replaced=(outer, inner))
    depends = Dependence([o.induction_var])
    for v in (i.lb, i.ub, i.step):
        if depends(v):
            raise ScheduleError(P, f"the bounds of loop '{inner}' depend on loop '{outer}' (not a rectangular nest)")
    bound_ops = operand_closure((i.lb, i.ub, i.step), between)
    for op in between:
        if op in bound_ops:
            op.detach()
            o.parent_block().insert_op_before(op, o)

    before = IndexBuilder(kernel, InsertPoint.before(o))
    outer_trips, inner_trips = before.trip_count(o), before.trip_count(i)
    total = before.mul(outer_trips, inner_trips)
    # the loops' role when they share one (two output loops fuse into an output loop)
    role = o.loop_role if o.loop_role == i.loop_role else None
    fused = ForOp(before.const(0), total, before.const(1), Block(arg_types=[INDEX]), name=fused_name, role=role)
    fused.attributes |= dict(o.attributes)
    block = fused.body.block
    block.add_op(YieldOp())
    at = IndexBuilder(kernel, InsertPoint.before(block.last_op))
    f = block.args[0]
    outer_iv = at.add(o.lb, at.mul(at.divui(f, inner_trips), o.step))
    inner_iv = at.add(i.lb, at.mul(at.remui(f, inner_trips), i.step))
    for op in between:
        if op not in bound_ops:
            op.detach()
            block.insert_op_before(op, block.last_op)
    _move_body(i, block)
    o.induction_var.replace_all_uses_with(outer_iv)
    i.induction_var.replace_all_uses_with(inner_iv)
    _replace_loop(o, fused)
    return fused_name


# ---------------------------------------------------------------------------
# tile


@transformation("tile")
def tile(kernel: func.FuncOp, x: str, y: str, x_factor: int, y_factor: int) -> tuple[str, str, str, str]:
    """``split(x, x_factor)``, ``split(y, y_factor)``, then reorder to
    ``x.outer, y.outer, x.inner, y.inner``; returns those four names. ``y`` must be
    perfectly nested in ``x``."""
    P = "tile"
    _nested_chain(P, kernel, [x, y])
    if find_loop(kernel, y, P).is_ancestor(find_loop(kernel, x, P)):
        raise ScheduleError(P, f"loop '{y}' must be nested inside loop '{x}'")
    xo, xi = split(kernel, x, x_factor)
    yo, yi = split(kernel, y, y_factor)
    reorder(kernel, [xo, yo, xi, yi])
    return xo, yo, xi, yi


# ---------------------------------------------------------------------------
# loop kinds


def _check_no_carried_writes(primitive: str, kernel: func.FuncOp, for_op: ForOp, allow_reductions: bool) -> None:
    """Iterations must write distinct elements of every buffer that outlives them
    (a reduction update is accepted where ``allow_reductions``)."""
    if static_trip_bound(for_op) == 1:
        return  # a single iteration carries nothing (a kernel's unit output loop)
    depends = Dependence([for_op.induction_var])
    loaded = Dependence([op.result for op in walk_ops(for_op) if isinstance(op, LoadOp)])
    for store in walk_ops(for_op):
        if not isinstance(store, StoreOp) or defined_inside(store.buffer, for_op):
            continue
        # an index that follows the iteration and no loaded value: distinct elements (one
        # computed from loaded data, a scatter's target, may repeat across iterations)
        if any(depends(i) and not loaded(i) for i in store.indices):
            continue
        if allow_reductions and is_reduction_update(store):
            continue
        what = "accumulates into" if is_reduction_update(store) else "writes"
        raise ScheduleError(
            primitive,
            f"every iteration of loop '{for_op.loop_name.data}' {what} the same elements of "
            f"{describe_buffer(kernel, store.buffer)} (a loop-carried dependence)",
        )


def _set_kind(primitive: str, kernel: func.FuncOp, loop: str, kind: str) -> ForOp:
    for_op = find_loop(kernel, loop, primitive)
    if for_op.kind.data == kind:
        return for_op
    _require_kind(primitive, for_op)
    for_op.kind = StringAttr(kind)
    return for_op


@transformation("parallel")
def parallel(kernel: func.FuncOp, loop: str, max_threads: int = 0) -> None:
    """Run the iterations of ``loop`` on several threads (at most ``max_threads``, when
    positive: what the loop's work is worth). Legal when its iterations write distinct
    elements (not a reduction loop) and it is neither inside nor around another
    parallel loop."""
    P = "parallel"
    if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 0:
        raise ScheduleError(P, f"max_threads must be an integer >= 0 (0: no cap), got {max_threads!r}")
    for_op = find_loop(kernel, loop, P)
    for other in all_loops(kernel):
        if (
            other is not for_op
            and other.kind.data == "parallel"
            and (other.is_ancestor(for_op) or for_op.is_ancestor(other))
        ):
            raise ScheduleError(P, f"loop '{loop}' is nested with parallel loop '{other.loop_name.data}'")
    _check_no_carried_writes(P, kernel, for_op, allow_reductions=False)
    _set_kind(P, kernel, loop, "parallel")
    set_max_threads(for_op, max_threads or None)


@transformation("vectorize")
def vectorize(kernel: func.FuncOp, loop: str) -> None:
    """Run ``loop`` with SIMD vectors. Legal for an innermost loop whose
    iterations write distinct elements or accumulate into one (a reduction with
    reassociable combiner); any trip count (the lowering handles the remainder)."""
    P = "vectorize"
    for_op = find_loop(kernel, loop, P)
    inner = [op for op in walk_ops(for_op) if isinstance(op, ForOp) and op is not for_op]
    if inner:
        raise ScheduleError(P, f"loop '{loop}' is not innermost (it holds loop '{inner[0].loop_name.data}')")
    _check_no_carried_writes(P, kernel, for_op, allow_reductions=True)
    _set_kind(P, kernel, loop, "vectorized")


@transformation("unroll")
def unroll(kernel: func.FuncOp, loop: str) -> None:
    """Unroll ``loop`` completely. Needs a trip count bounded at compile time
    (constant bounds, or the inner loop of a split)."""
    P = "unroll"
    for_op = find_loop(kernel, loop, P)
    if static_trip_bound(for_op) is None:
        raise ScheduleError(P, f"loop '{loop}' has no trip count known at compile time (split it first)")
    _set_kind(P, kernel, loop, "unrolled")


@transformation("bind")
def bind(kernel: func.FuncOp, loop: str, thread_axis: str) -> None:
    """Bind ``loop`` to a GPU thread axis (``blockIdx.x`` ... ``threadIdx.z``),
    each axis at most once per kernel; the iterations must write distinct elements."""
    P = "bind"
    if thread_axis not in GPU_BINDINGS:
        raise ScheduleError(P, f"unknown thread axis {thread_axis!r} (expected one of {', '.join(GPU_BINDINGS)})")
    for_op = find_loop(kernel, loop, P)
    for other in all_loops(kernel):
        if other is not for_op and other.kind.data == thread_axis:
            raise ScheduleError(P, f"axis {thread_axis} is already bound to loop '{other.loop_name.data}'")
    _check_no_carried_writes(P, kernel, for_op, allow_reductions=False)
    _set_kind(P, kernel, loop, thread_axis)


__all__ = ["bind", "fuse", "parallel", "rebuild_band", "reorder", "split", "tile", "unroll", "vectorize"]

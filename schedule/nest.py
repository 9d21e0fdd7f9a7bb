"""Loop-nest analysis and IR helpers shared by the schedule primitives.

A kernel (``func.func`` with ``tk.kernel``) is one or more nests of named ``loop.for``
ops. The primitives address loops by name and need the same few facts about them:

* **movable ops**: side-effect-free ops without regions (``arith``, ``math``,
  ``loop.dim``, and ``loop.load`` from a buffer nothing in the transformed region
  writes). They may be recomputed, hoisted or sunk freely (subject to SSA order);
* a **band**: a chain of loops, each the only loop in its parent's body, with only
  movable ops beside it (``for i { %x = ...; for j { ... } }``): the loops a
  reorder may permute and a cache_write may tile;
* **static trip bounds**: the most iterations a loop can run, known at compile time
  (constant bounds, or ``min(c, ...)`` upper bounds as made by ``split``);
* dependence of an index value on induction variables (for legality checks).

Index arithmetic is built with :class:`IndexBuilder`, which folds constants and puts
every ``arith.constant`` at the top of the kernel, deduplicated (see :func:`normalize`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterable, Iterator, Sequence

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from ..dialects import loop
from ..dialects.scalar import is_scalar_arithmetic
from ..dialects.walk import walk_ops

INDEX = IndexType()

#: combiners of a reduction update ``acc[idx] = combine(acc[idx], x)`` (see te_to_loop)
REDUCTION_COMBINERS = (
    arith.AddfOp,
    arith.MulfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    arith.AddiOp,
    arith.MuliOp,
    arith.MaxSIOp,
    arith.MinSIOp,
    arith.MaxUIOp,
    arith.MinUIOp,
)


class ScheduleError(ValueError):
    """A schedule primitive cannot be applied: names the primitive, the loop and why.

    ``primitive`` holds the primitive's name. A failed primitive leaves the kernel as
    it was.
    """

    def __init__(self, primitive: str, message: str):
        super().__init__(f"{primitive}: {message}")
        self.primitive = primitive


# ---------------------------------------------------------------------------
# finding loops


def kernel_name(kernel: func.FuncOp) -> str:
    return kernel.sym_name.data


def all_loops(root: Operation) -> list[loop.ForOp]:
    """Every ``loop.for`` under ``root``, in nest order (pre-order)."""
    return [op for op in walk_ops(root) if type(op) is loop.ForOp]  # (isinstance: ABCMeta's slow check)


def loop_names(root: Operation) -> list[str]:
    return [op.loop_name.data for op in all_loops(root)]


def find_loop(kernel: func.FuncOp, name: object, primitive: str) -> loop.ForOp:
    """The loop called ``name`` in ``kernel``; a ScheduleError if there is none or several."""
    if not isinstance(name, str):
        raise ScheduleError(primitive, f"a loop is named by a string, got {name!r}")
    found = [op for op in all_loops(kernel) if op.loop_name.data == name]
    if not found:
        listed = ", ".join(loop_names(kernel)) or "none"
        raise ScheduleError(primitive, f"no loop named '{name}' in kernel '{kernel_name(kernel)}' (loops: {listed})")
    if len(found) > 1:
        raise ScheduleError(primitive, f"{len(found)} loops are named '{name}' in kernel '{kernel_name(kernel)}'")
    return found[0]


def check_new_names(kernel: func.FuncOp, names: Iterable[str], primitive: str, replaced: Iterable[str] = ()) -> None:
    """The loop names a primitive creates must not exist yet (``replaced`` ones go away)."""
    existing = set(loop_names(kernel)) - set(replaced)
    for name in names:
        if name in existing:
            raise ScheduleError(primitive, f"a loop named '{name}' already exists in kernel '{kernel_name(kernel)}'")


def body_ops(for_op: loop.ForOp) -> list[Operation]:
    """The ops of a loop body, without its ``loop.yield``."""
    return [op for op in for_op.body.block.ops if not isinstance(op, loop.YieldOp)]


def new_loop(template: loop.ForOp, lb: SSAValue, ub: SSAValue, step: SSAValue, name: str, kind: str | None = None):
    """An empty loop (body: just ``loop.yield``) with ``template``'s kind, role and attributes."""
    block = Block(arg_types=[INDEX])
    block.add_op(loop.YieldOp())
    op = loop.ForOp(lb, ub, step, block, kind=kind or template.kind.data, name=name, role=template.loop_role)
    op.attributes |= dict(template.attributes)
    return op


def body_end(for_op: loop.ForOp) -> InsertPoint:
    """Insert at the end of a loop body, before its ``loop.yield``."""
    return InsertPoint.before(for_op.body.block.last_op)


# ---------------------------------------------------------------------------
# facts about values and ops


def static_value(value: SSAValue) -> int | None:
    """The integer of an ``arith.constant`` (index or integer type), else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def static_trip_bound(for_op: loop.ForOp) -> int | None:
    """The most iterations ``for_op`` can run, if known at compile time.

    Known for constant bounds, and for an upper bound ``arith.minsi`` with a constant
    operand (the inner loop of a split: ``min(factor, ub - outer)``).
    """
    lb, step = static_value(for_op.lb), static_value(for_op.step)
    if lb is None or step is None or step <= 0:
        return None
    ub = static_value(for_op.ub)
    if ub is None and isinstance(for_op.ub.owner, arith.MinSIOp):
        limits = [v for v in map(static_value, for_op.ub.owner.operands) if v is not None]
        ub = min(limits) if limits else None
    if ub is None:
        return None
    return max(0, -(-(ub - lb) // step))


def defined_inside(value: SSAValue, root: Operation) -> bool:
    """Whether ``value`` is defined in ``root``'s regions (or by ``root``)."""
    owner = value.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        return parent is not None and root.is_ancestor(parent)
    return root.is_ancestor(owner)


def written_buffers(root: Operation) -> set[SSAValue]:
    """Buffers stored to under ``root``, and buffers handed to calls (which may write)."""
    written: set[SSAValue] = set()
    for op in walk_ops(root):
        if isinstance(op, loop.StoreOp):
            written.add(op.buffer)
        elif isinstance(op, func.CallOp):
            written.update(a for a in op.arguments if isinstance(a.type, MemRefType))
    return written


def is_movable(op: Operation, written: set[SSAValue]) -> bool:
    """Side-effect free and region-less: may be recomputed anywhere its operands exist."""
    if op.regions or not op.results:
        return False
    if isinstance(op, loop.LoadOp):
        return op.buffer not in written
    if isinstance(op, loop.DimOp):
        return True
    return is_scalar_arithmetic(op)


class Dependence:
    """Which of a set of values (usually induction variables) a value depends on."""

    def __init__(self, targets: Iterable[SSAValue]):
        self.targets = set(targets)
        self.memo: dict[SSAValue, bool] = {}

    def __call__(self, value: SSAValue) -> bool:
        if value in self.targets:
            return True
        if value in self.memo:
            return self.memo[value]
        self.memo[value] = False  # (no cycles in SSA, but be safe)
        owner = value.owner
        result = isinstance(owner, Operation) and any(self(v) for v in owner.operands)
        self.memo[value] = result
        return result


def is_reduction_update(store: loop.StoreOp) -> bool:
    """``store combine(load buf[idx], x), buf[idx]`` (an accumulation, reorderable)."""
    combine = store.value.owner
    if not isinstance(combine, REDUCTION_COMBINERS):
        return False
    for operand in combine.operands:
        load = operand.owner
        if (
            isinstance(load, loop.LoadOp)
            and load.buffer == store.buffer
            and tuple(load.indices) == tuple(store.indices)
        ):
            return True
    return False


def band(top: loop.ForOp, written: set[SSAValue]) -> tuple[list[loop.ForOp], list[Operation]]:
    """The perfectly nested chain of loops from ``top`` down, and the movable ops
    between them (in program order)."""
    chain, between = [top], []
    while True:
        ops = body_ops(chain[-1])
        loops = [op for op in ops if isinstance(op, loop.ForOp)]
        others = [op for op in ops if not isinstance(op, loop.ForOp)]
        if len(loops) != 1 or not all(is_movable(op, written) for op in others):
            return chain, between
        between += others
        chain.append(loops[0])


def operand_closure(values: Iterable[SSAValue], among: Sequence[Operation]) -> set[Operation]:
    """The ops of ``among`` that ``values`` are computed from (transitively)."""
    members = set(among)
    found: set[Operation] = set()
    work = [v.owner for v in values]
    while work:
        op = work.pop()
        if op in members and op not in found:
            found.add(op)
            work.extend(v.owner for v in op.operands)
    return found


# ---------------------------------------------------------------------------
# building index arithmetic


class IndexBuilder:
    """Builds index arithmetic at an insertion point, folding what is constant.

    Constants go to the top of the kernel's entry block, one per value.
    """

    def __init__(self, kernel: func.FuncOp, ip: InsertPoint):
        self.kernel = kernel
        self.builder = Builder(ip)

    def const(self, value: int) -> SSAValue:
        return index_constant(self.kernel, value)

    def insert(self, op: Operation) -> SSAValue:
        return self.builder.insert(op).results[0]

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None:
            return self.const(ca + cb)
        if ca == 0:
            return b
        if cb == 0:
            return a
        return self.insert(arith.AddiOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None:
            return self.const(ca - cb)
        if cb == 0:
            return a
        return self.insert(arith.SubiOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None:
            return self.const(ca * cb)
        if ca == 1:
            return b
        if cb == 1:
            return a
        return self.insert(arith.MuliOp(a, b))

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None:
            return self.const(min(ca, cb))
        return self.insert(arith.MinSIOp(a, b))

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None:
            return self.const(max(ca, cb))
        return self.insert(arith.MaxSIOp(a, b))

    def divui(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None and cb > 0 and ca >= 0:
            return self.const(ca // cb)
        if cb == 1:
            return a
        return self.insert(arith.DivUIOp(a, b))

    def remui(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ca, cb = static_value(a), static_value(b)
        if ca is not None and cb is not None and cb > 0 and ca >= 0:
            return self.const(ca % cb)
        if cb == 1:
            return self.const(0)
        return self.insert(arith.RemUIOp(a, b))

    def trip_count(self, for_op: loop.ForOp) -> SSAValue:
        """``max(ub - lb, 0) ceildiv step`` (``ub`` itself for ``lb = 0, step = 1``)."""
        lb, step = static_value(for_op.lb), static_value(for_op.step)
        if lb == 0 and step == 1:
            return for_op.ub
        span = self.max(self.sub(for_op.ub, for_op.lb), self.const(0))
        if step == 1:
            return span
        return self.divui(self.add(span, self.sub(for_op.step, self.const(1))), for_op.step)

    def position(self, for_op: loop.ForOp, iv: SSAValue) -> SSAValue:
        """The iteration number of ``iv``: ``(iv - lb) / step`` (``iv`` for ``0``/``1``)."""
        return self.divui(self.sub(iv, for_op.lb), for_op.step)


def index_constant(kernel: func.FuncOp, value: int) -> SSAValue:
    """``arith.constant value : index`` at the top of the kernel (reusing one that exists)."""
    entry = kernel.body.block
    last = None
    for op in entry.ops:
        if not isinstance(op, arith.ConstantOp):
            break
        if op.result.type == INDEX and static_value(op.result) == value:
            return op.result
        last = op
    new = arith.ConstantOp(IntegerAttr(value, INDEX))
    if last is None:
        entry.insert_op_before(new, entry.first_op) if entry.first_op else entry.add_op(new)
    else:
        entry.insert_op_after(new, last)
    return new.result


def normalize(kernel: func.FuncOp) -> None:
    """Hoist every ``arith.constant`` to the top of the kernel, one per (value, type).

    Loop bounds made of constants then dominate every loop, whatever the primitives
    move, and the IR stays readable. Idempotent.
    """
    entry = kernel.body.block
    seen: dict[tuple, arith.ConstantOp] = {}
    order: list[arith.ConstantOp] = []
    for op in walk_ops(kernel):
        if type(op) is not arith.ConstantOp:
            continue
        key = (op.value, op.result.type)
        if key in seen:
            op.result.replace_all_uses_with(seen[key].result)
            op.detach()
            op.erase()
            continue
        seen[key] = op
        order.append(op)
    anchor = entry.first_op
    for op in order:
        if op is anchor:
            anchor = op.next_op
            continue
        op.detach()
        if anchor is None:
            entry.add_op(op)
        else:
            entry.insert_op_before(op, anchor)


def erase_dead_code(root: Operation) -> None:
    """Erase side-effect-free ops (arith, math, scalar, loop.dim, loop.load) whose results are unused."""
    ops = walk_ops(root)
    inside = set(ops)
    # users before the ops they use (reverse pre-order); an op whose last user goes is
    # looked at again (one walk, not one per round of erasures)
    pending = ops
    while pending:
        op = pending.pop()
        if op not in inside or op is root or op.regions or not op.results or any(r.uses for r in op.results):
            continue
        if isinstance(op, loop.LoadOp | loop.DimOp) or is_scalar_arithmetic(op):
            defining = [value.owner for value in op.operands]
            op.detach()
            op.erase()
            inside.discard(op)
            pending.extend(owner for owner in defining if owner in inside)


def describe_buffer(kernel: func.FuncOp, buffer: SSAValue) -> str:
    """``argument 1 (memref<...>)`` or ``a local buffer``, for error messages."""
    args = list(kernel.body.block.args)
    if buffer in args:
        return f"argument {args.index(buffer)} ({buffer.type})"
    return f"a local buffer ({buffer.type})"


# ---------------------------------------------------------------------------
# primitives are transactions


def restore(kernel: func.FuncOp, backup: func.FuncOp) -> None:
    """Put ``backup``'s body (a clone of ``kernel``) back into ``kernel``."""
    region = kernel.body
    for block in list(region.blocks):
        region.detach_block(block)
        block.erase(safe_erase=False)
    backup.body.move_blocks(region)


_VERIFY_EACH = contextvars.ContextVar("tk_schedule_verify_each", default=True)
_BACKUP_EACH = contextvars.ContextVar("tk_schedule_backup_each", default=True)


@contextlib.contextmanager
def _setting(variable: contextvars.ContextVar, value: bool) -> Iterator[None]:
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


@contextlib.contextmanager
def throwaway_kernel() -> Iterator[None]:
    """Inside this block the kernel is a copy that is dropped when a primitive fails
    (``schedule_on_clone``): primitives keep no backup to restore it from. The backup, a
    clone of the whole kernel per primitive, was half the scheduling time of a model
    (DenseNet-121: 9.5 of 18 s). Code in the block that catches a failing primitive and
    goes on must wrap it in :func:`transaction`."""
    with _setting(_BACKUP_EACH, False):
        yield


@contextlib.contextmanager
def transaction() -> Iterator[None]:
    """Primitives in this block restore the kernel when they fail, in a
    :func:`throwaway_kernel` block too: for a primitive whose failure is caught.

    Example::

        try:
            with transaction():
                s.cache_read(panel, at)
        except ScheduleError:
            pass  # the kernel is as it was before cache_read
    """
    with _setting(_BACKUP_EACH, True):
        yield


@contextlib.contextmanager
def deferred_verification() -> Iterator[None]:
    """Inside this block primitives do not verify the kernel after each step (nearly
    half the time of a primitive); the caller verifies it once at the end -- the tuner,
    instantiating hundreds of candidate schedules and dropping any that fails. A
    failing primitive still restores the kernel and raises :class:`ScheduleError`."""
    with _setting(_VERIFY_EACH, False):
        yield


def transformation(name: str):
    """Decorate a primitive ``fn(kernel, ...)``: constants are normalized before and
    after, the kernel is verified after (see :func:`deferred_verification`), and on any
    error the kernel is restored as it was (but in a :func:`throwaway_kernel` block) and a
    :class:`ScheduleError` naming the primitive is raised."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(kernel: func.FuncOp, *args, **kwargs):
            if not isinstance(kernel, func.FuncOp):
                raise TypeError(f"{name}: expected a func.func kernel, got {type(kernel).__name__}")
            backup = kernel.clone() if _BACKUP_EACH.get() else None
            try:
                normalize(kernel)
                result = fn(kernel, *args, **kwargs)
                erase_dead_code(kernel)
                normalize(kernel)
                if _VERIFY_EACH.get():
                    kernel.verify()
            except ScheduleError:
                if backup is not None:
                    restore(kernel, backup)
                raise
            except Exception as error:  # a bug here must not leave a broken kernel behind
                if backup is not None:
                    restore(kernel, backup)
                raise ScheduleError(
                    name, f"internal error on kernel '{kernel_name(kernel)}': {type(error).__name__}: {error}"
                ) from error
            return result

        run.primitive = name
        return run

    return wrap

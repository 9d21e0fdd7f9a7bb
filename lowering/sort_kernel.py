"""The loop kernel of a ``te.sort``: a bottom-up merge sort of each line's indices,
``O(n log n)`` along the axis, in a workspace ``W`` of two index buffers (``W[0]``,
``W[1]``: each the result's shape) the host allocates::

    loop.for %i0 ... name("i0") {                  // lines: independent, parallel
      W[0][line, k] = k                            // "scan0": every run one element long
      passes = #{p : 2**p < n}                     // "scan1": ceil(log2 n)
      loop.for %p = 0 to passes name("scan2") {    // runs of w = 2**p, W[p % 2] -> W[1 - p % 2]
        loop.for %lo = 0 to n step 2w name("scan3") {
          i, j = lo, min(lo + w, n)                // the heads of the two runs (local scalars)
          loop.for %k = lo to min(lo + 2w, n) name("scan4") {
            take the head of the right run when the left is spent, or it sorts
            strictly before the left's head (ties keep the left: stable)
          }
        }
      }
      out[line, k] = W[passes % 2][line, k]        // "scan5"
    }

Elements compare as ``graph.argsort`` orders them: NaN the largest, ``descending``
reversing values but not ties. Every load is inside its buffer: a spent run's head is
read at ``min(head, n - 1)`` and not taken.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, StringAttr, TensorType, i1
from xdsl.ir import Block, Operation, Region, SSAValue

from ..dialects import loop, te
from ..dialects.graph.types import is_float, shape_of, tensor_type
from .line_nest import index_const, line_nest
from .te_to_loop import buffer_type

#: the ``tk.kernel`` tags of a sort kernel and of a top-k one
TAG = "sort"
TOP_K_TAG = "topk"

_I64 = IntegerType(64)


def workspace_type(op: te.SortOp) -> TensorType:
    """Two index buffers of the result's shape."""
    return tensor_type((2, *shape_of(op.result.type)), _I64)


class _Code:
    """Scalar code at one insertion point."""

    def __init__(self, b: Builder):
        self.b = b

    def __call__(self, op: Operation) -> SSAValue:
        return self.b.insert(op).results[0]

    def negation(self, flag: SSAValue) -> SSAValue:
        """``not flag`` (an i1)."""
        return self(arith.XOrIOp(flag, self(arith.ConstantOp(IntegerAttr(1, i1)))))

    def const(self, k: int) -> SSAValue:
        return index_const(self.b, k)

    def local(self, init: SSAValue) -> SSAValue:
        """A local scalar holding the index ``init`` (as an i64: LLVM has no index type)."""
        ref = self(loop.AllocOp(MemRefType(_I64, []), scope="local"))
        self.put(init, ref)
        return ref

    def get(self, ref: SSAValue) -> SSAValue:
        """The index in the local scalar ``ref``."""
        return self(arith.IndexCastOp(self(loop.LoadOp(ref, [])), IndexType()))

    def put(self, value: SSAValue, ref: SSAValue) -> None:
        """Store the index ``value`` in the local scalar ``ref``."""
        self.b.insert(loop.StoreOp(self(arith.IndexCastOp(value, _I64)), ref, []))

    def load(self, buffer: SSAValue, at: list[SSAValue]) -> SSAValue:
        return self(loop.LoadOp(buffer, at))

    def store(self, value: SSAValue, buffer: SSAValue, at: list[SSAValue]) -> None:
        self.b.insert(loop.StoreOp(value, buffer, at))

    def loop(self, lb: SSAValue, ub: SSAValue, step: SSAValue, name: str) -> tuple[SSAValue, _Code]:
        body = Block(arg_types=[IndexType()])
        self.b.insert(loop.ForOp(lb, ub, step, body, kind="serial", name=name))
        body.add_op(loop.YieldOp())
        return body.args[0], _Code(Builder(InsertPoint.before(body.last_op)))


def _strictly_before(descending: bool, is_float_type: bool) -> Callable[[_Code, SSAValue, SSAValue], SSAValue]:
    """``a`` sorts strictly before ``b`` (NaN the largest value)."""

    def before(c: _Code, a: SSAValue, b: SSAValue) -> SSAValue:
        if not is_float_type:
            return c(arith.CmpiOp(a, b, "sgt" if descending else "slt"))
        ordered = c(arith.CmpfOp(a, b, "ogt" if descending else "olt"))
        a_nan, b_nan = c(arith.CmpfOp(a, a, "uno")), c(arith.CmpfOp(b, b, "uno"))
        # ascending: a number before a NaN; descending: a NaN before a number
        first_nan, other_nan = (a_nan, b_nan) if descending else (b_nan, a_nan)
        nan_order = c(arith.AndIOp(first_nan, c.negation(other_nan)))
        return c(arith.OrIOp(ordered, nan_order))

    return before


def sort_kernel(op: te.SortOp, name: str) -> func.FuncOp:
    """The kernel ``name(input, out, workspace)`` of ``op`` (module docstring)."""
    axis = op.axis.value.data
    arg_types = [buffer_type(op.input.type), buffer_type(op.result.type), buffer_type(workspace_type(op))]
    entry = Block(arg_types=arg_types)
    x, out, work = entry.args
    nest = line_nest(Builder(InsertPoint.at_end(entry)), x, axis)
    before = _strictly_before(bool(op.descending.value.data), is_float(op.input.type.element_type))
    c = _Code(nest.inner)
    n, zero, one = nest.size, c.const(0), c.const(1)

    def in_work(half: SSAValue, k: SSAValue) -> list[SSAValue]:
        return [half, *nest.at(k)]

    k, fill = c.loop(zero, n, one, "scan0")
    fill.store(fill(arith.IndexCastOp(k, _I64)), work, in_work(zero, k))

    # passes: how many run widths 1, 2, 4, ... are below n (the width saturates at n)
    passes, width = c.local(zero), c.local(one)
    _, count = c.loop(zero, c.const(64), one, "scan1")
    w = count.get(width)
    below = count(arith.IndexCastOp(count(arith.ExtUIOp(count(arith.CmpiOp(w, n, "ult")), _I64)), IndexType()))
    count.put(count(arith.AddiOp(count.get(passes), below)), passes)
    count.put(count(arith.MinUIOp(count(arith.AddiOp(w, w)), n)), width)

    total = c.get(passes)
    c.put(one, width)
    source = c.local(zero)
    _, merge_pass = c.loop(zero, total, one, "scan2")
    w = merge_pass.get(width)
    src = merge_pass.get(source)
    dst = merge_pass(arith.SubiOp(one, src))
    two_w = merge_pass(arith.AddiOp(w, w))
    lo, pair = merge_pass.loop(zero, n, two_w, "scan3")
    mid = pair(arith.MinUIOp(pair(arith.AddiOp(lo, w)), n))
    hi = pair(arith.MinUIOp(pair(arith.AddiOp(lo, two_w)), n))
    left, right = pair.local(lo), pair.local(mid)
    last = pair(arith.SubiOp(n, one))
    k, step = pair.loop(lo, hi, one, "scan4")
    i, j = step.get(left), step.get(right)
    a_index = step.load(work, in_work(src, step(arith.MinUIOp(i, last))))
    b_index = step.load(work, in_work(src, step(arith.MinUIOp(j, last))))
    a = step.load(x, nest.at(step(arith.IndexCastOp(a_index, IndexType()))))
    b = step.load(x, nest.at(step(arith.IndexCastOp(b_index, IndexType()))))
    left_open = step(arith.CmpiOp(i, mid, "ult"))
    right_spent = step(arith.CmpiOp(j, hi, "uge"))
    right_first = before(step, b, a)
    take_left = step(arith.AndIOp(left_open, step(arith.OrIOp(right_spent, step.negation(right_first)))))
    step.store(step(arith.SelectOp(take_left, a_index, b_index)), work, in_work(dst, k))
    step.put(step(arith.SelectOp(take_left, step(arith.AddiOp(i, one)), i)), left)
    step.put(step(arith.SelectOp(take_left, j, step(arith.AddiOp(j, one)))), right)
    merge_pass.put(dst, source)
    merge_pass.put(two_w, width)

    final = c.get(source)
    k, copy = c.loop(zero, n, one, "scan5")
    copy.store(copy.load(work, in_work(final, k)), out, nest.at(k))
    Builder(InsertPoint.at_end(entry)).insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    kernel.attributes["tk.kernel"] = StringAttr(TAG)
    return kernel


def top_k_kernel(op: te.SortOp, name: str) -> func.FuncOp:
    """The kernel ``name(input, out)`` of a ``te.sort`` with ``k``: each line read once,
    the best ``k`` indices so far kept in order in ``out`` (its ``m <= k`` first slots)::

        loop.for %p = 0 to n name("scan1") {
          insert = m < k or x[p] sorts strictly before x[out[k - 1]]
          slot = min(m, k - 1)                     // the last one is dropped when full
          loop.for %t = 0 to (insert ? slot : 0) name("scan2") {
            move out[slot - t - 1] one down while x[p] sorts strictly before it
          }
          out[landing slot] = p  (when insert);  m = min(m + 1, k)
        }

    ``O(n)`` reads, and ``O(k)`` moves per insertion: few for data in no particular order,
    ``n * k`` at worst (each element better than all before it). Stable: an element
    equal to a kept one goes after it. ``out`` starts at index 0 (every read in bounds)."""
    axis, k_value = op.axis.value.data, op.k.value.data
    arg_types = [buffer_type(op.input.type), buffer_type(op.result.type)]
    entry = Block(arg_types=arg_types)
    x, out = entry.args
    nest = line_nest(Builder(InsertPoint.at_end(entry)), x, axis)
    before = _strictly_before(bool(op.descending.value.data), is_float(op.input.type.element_type))
    c = _Code(nest.inner)
    n, zero, one, k = nest.size, c.const(0), c.const(1), c.const(k_value)
    last_slot = c.const(k_value - 1)

    slot, init = c.loop(zero, k, one, "scan0")
    init.store(init(arith.ConstantOp(IntegerAttr(0, _I64))), out, nest.at(slot))
    held = c.local(zero)
    p, scan = c.loop(zero, n, one, "scan1")
    value = scan.load(x, nest.at(p))
    m = scan.get(held)

    def value_at(code: _Code, slot: SSAValue) -> tuple[SSAValue, SSAValue]:
        index = code.load(out, nest.at(slot))
        return index, code.load(x, nest.at(code(arith.IndexCastOp(index, IndexType()))))

    _, worst = value_at(scan, last_slot)
    insert = scan(arith.OrIOp(scan(arith.CmpiOp(m, k, "ult")), before(scan, value, worst)))
    slot = scan(arith.MinUIOp(m, last_slot))
    landing = scan.local(slot)
    moving = scan.local(one)
    t, shift = scan.loop(zero, scan(arith.SelectOp(insert, slot, zero)), one, "scan2")
    j = shift(arith.SubiOp(slot, t))
    above = shift(arith.SubiOp(j, one))
    above_index, above_value = value_at(shift, above)
    go = shift(arith.AndIOp(shift(arith.CmpiOp(shift.get(moving), zero, "ne")), before(shift, value, above_value)))
    shift.store(shift(arith.SelectOp(go, above_index, shift.load(out, nest.at(j)))), out, nest.at(j))
    shift.put(shift(arith.SelectOp(go, above, shift.get(landing))), landing)
    shift.put(shift(arith.SelectOp(go, one, zero)), moving)
    land = scan.get(landing)
    kept = scan.load(out, nest.at(land))
    scan.store(scan(arith.SelectOp(insert, scan(arith.IndexCastOp(p, _I64)), kept)), out, nest.at(land))
    scan.put(scan(arith.MinUIOp(scan(arith.AddiOp(m, one)), k)), held)
    Builder(InsertPoint.at_end(entry)).insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    kernel.attributes["tk.kernel"] = StringAttr(TOP_K_TAG)
    return kernel


__all__ = ["TAG", "TOP_K_TAG", "sort_kernel", "top_k_kernel", "workspace_type"]

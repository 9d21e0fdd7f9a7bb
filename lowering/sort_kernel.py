"""The loop kernel of a ``te.sort``: a bottom-up merge sort of each line, ``O(n log n)``
along the axis, moving (key, index) pairs in a workspace ``W`` the host allocates: keys in
``W[0]``, ``W[1]``, indices in ``W[2]``, ``W[3]`` (each the result's shape), all of one
wide type that holds both exactly (float64 for float keys, int64 for the others), so the
merges read and write sequentially (reading ``x`` at each index instead gathered from all
over the line: 2x slower on 256K floats)::

    loop.for %i0 ... name("i0") {                  // lines: independent, parallel
      W[0][line, k], W[2][line, k] = x[line, k], k  // "scan0": every run one element long
      passes = #{p : 2**p < n}                     // "scan1": ceil(log2 n)
      loop.for %p = 0 to passes name("scan2") {    // runs of w = 2**p, W[s], W[2 + s] -> W[1 - s], W[3 - s]
        loop.for %lo = 0 to n step 2w name("scan3") {
          i, j = lo, min(lo + w, n)                // the heads of the two runs (local scalars)
          loop.for %k = lo to min(lo + 2w, n) name("scan4") {
            take the head of the right run when the left is spent, or it sorts
            strictly before the left's head (ties keep the left: stable)
          }
        }
      }
      out[line, k] = W[2 + passes % 2][line, k]    // "scan5"
    }

Elements compare as ``graph.argsort`` orders them: NaN the largest, ``descending``
reversing values but not ties. Every load is inside its buffer: a spent run's head is
read at ``min(head, n - 1)`` and not taken.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Float64Type, IndexType, IntegerAttr, IntegerType, TensorType, i1
from xdsl.ir import Attribute, Block, Region, SSAValue

from ..dialects import loop, te
from ..dialects.graph.types import is_float, shape_of, tensor_type
from .line_nest import line_nest
from .scalar_code import LoopNames, ScalarCode
from .kernel_registry import KernelHost, kernel_rule
from .loop_nest import buffer_type

#: the ``tk.kernel`` tags of a sort kernel and of a top-k one
TAG = "sort"
TOP_K_TAG = "topk"

_I64 = IntegerType(64)


def _wide(element: Attribute) -> Attribute:
    """The workspace's type for keys of ``element``: exact for them and for indices."""
    return Float64Type() if is_float(element) else _I64


def workspace_type(op: te.SortOp) -> TensorType:
    """Two key and two index buffers of the result's shape (module docstring)."""
    return tensor_type((4, *shape_of(op.result.type)), _wide(op.input.type.element_type))


def _widen(c: ScalarCode, key: SSAValue, wide: Attribute) -> SSAValue:
    """``key`` in the workspace's type (exactly)."""
    if key.type == wide:
        return key
    if isinstance(wide, Float64Type):
        return c.ins(arith.ExtFOp(key, wide))
    return c.ins((arith.ExtUIOp if key.type == i1 else arith.ExtSIOp)(key, wide))


def _index_to(c: ScalarCode, k: SSAValue, wide: Attribute) -> SSAValue:
    as_integer = c.ins(arith.IndexCastOp(k, _I64))
    return c.ins(arith.SIToFPOp(as_integer, wide)) if isinstance(wide, Float64Type) else as_integer


def _strictly_before(descending: bool, element: Attribute) -> Callable[[ScalarCode, SSAValue, SSAValue], SSAValue]:
    """``a`` sorts strictly before ``b`` (NaN the largest value; booleans unsigned: false < true)."""

    def before(c: ScalarCode, a: SSAValue, b: SSAValue) -> SSAValue:
        if not is_float(element):
            signedness = "u" if element == i1 else "s"
            return c.ins(arith.CmpiOp(a, b, signedness + ("gt" if descending else "lt")))
        ordered = c.ins(arith.CmpfOp(a, b, "ogt" if descending else "olt"))
        a_nan, b_nan = c.ins(arith.CmpfOp(a, a, "uno")), c.ins(arith.CmpfOp(b, b, "uno"))
        # ascending: a number before a NaN; descending: a NaN before a number
        first_nan, other_nan = (a_nan, b_nan) if descending else (b_nan, a_nan)
        nan_order = c.ins(arith.AndIOp(first_nan, c.negation(other_nan)))
        return c.ins(arith.OrIOp(ordered, nan_order))

    return before


def sort_kernel(op: te.SortOp, name: str) -> func.FuncOp:
    """The kernel ``name(input, out, workspace)`` of ``op`` (module docstring)."""
    axis = op.axis.value.data
    arg_types = [buffer_type(op.input.type), buffer_type(op.result.type), buffer_type(workspace_type(op))]
    entry = Block(arg_types=arg_types)
    x, out, work = entry.args
    nest = line_nest(Builder(InsertPoint.at_end(entry)), x, axis)
    before = _strictly_before(bool(op.descending.value.data), op.input.type.element_type)
    c = ScalarCode(nest.inner, op.input.type.element_type, LoopNames(), None)
    n, zero, one = nest.size, c.index(0), c.index(1)

    wide = _wide(op.input.type.element_type)

    def in_work(half: SSAValue, k: SSAValue) -> list[SSAValue]:
        return [half, *nest.at(k)]

    def indices(code: ScalarCode, half: SSAValue) -> SSAValue:
        """The workspace half holding the indices that go with the keys of ``half``."""
        return code.ins(arith.AddiOp(half, code.index(2)))

    k, fill = c.loop(zero, n, one, "scan0", role="scan")
    fill.store(_widen(fill, fill.load(x, nest.at(k)), wide), work, in_work(zero, k))
    fill.store(_index_to(fill, k, wide), work, in_work(fill.index(2), k))

    # passes: how many run widths 1, 2, 4, ... are below n (the width saturates at n)
    passes, width = c.local_index(zero), c.local_index(one)
    _, count = c.loop(zero, c.index(64), one, "scan1", role="scan")
    w = count.get_index(width)
    below = count.ins(arith.IndexCastOp(count.ins(arith.ExtUIOp(count.ins(arith.CmpiOp(w, n, "ult")), _I64)), IndexType()))
    count.put_index(count.ins(arith.AddiOp(count.get_index(passes), below)), passes)
    count.put_index(count.ins(arith.MinUIOp(count.ins(arith.AddiOp(w, w)), n)), width)

    total = c.get_index(passes)
    c.put_index(one, width)
    source = c.local_index(zero)
    _, merge_pass = c.loop(zero, total, one, "scan2", role="scan")
    w = merge_pass.get_index(width)
    src = merge_pass.get_index(source)
    dst = merge_pass.ins(arith.SubiOp(one, src))
    two_w = merge_pass.ins(arith.AddiOp(w, w))
    lo, pair = merge_pass.loop(zero, n, two_w, "scan3", role="scan")
    mid = pair.ins(arith.MinUIOp(pair.ins(arith.AddiOp(lo, w)), n))
    hi = pair.ins(arith.MinUIOp(pair.ins(arith.AddiOp(lo, two_w)), n))
    left, right = pair.local_index(lo), pair.local_index(mid)
    last = pair.ins(arith.SubiOp(n, one))
    k, step = pair.loop(lo, hi, one, "scan4", role="scan")
    i, j = step.get_index(left), step.get_index(right)
    at_a, at_b = step.ins(arith.MinUIOp(i, last)), step.ins(arith.MinUIOp(j, last))
    a, b = step.load(work, in_work(src, at_a)), step.load(work, in_work(src, at_b))
    a_index = step.load(work, in_work(indices(step, src), at_a))
    b_index = step.load(work, in_work(indices(step, src), at_b))
    left_open = step.ins(arith.CmpiOp(i, mid, "ult"))
    right_spent = step.ins(arith.CmpiOp(j, hi, "uge"))
    right_first = before(step, b, a)
    take_left = step.ins(arith.AndIOp(left_open, step.ins(arith.OrIOp(right_spent, step.negation(right_first)))))
    step.store(step.ins(arith.SelectOp(take_left, a, b)), work, in_work(dst, k))
    step.store(step.ins(arith.SelectOp(take_left, a_index, b_index)), work, in_work(indices(step, dst), k))
    step.put_index(step.ins(arith.SelectOp(take_left, step.ins(arith.AddiOp(i, one)), i)), left)
    step.put_index(step.ins(arith.SelectOp(take_left, j, step.ins(arith.AddiOp(j, one)))), right)
    merge_pass.put_index(dst, source)
    merge_pass.put_index(two_w, width)

    final = indices(c, c.get_index(source))
    k, copy = c.loop(zero, n, one, "scan5", role="scan")
    index = copy.load(work, in_work(final, k))
    if isinstance(wide, Float64Type):
        index = copy.ins(arith.FPToSIOp(index, _I64))
    copy.store(index, out, nest.at(k))
    Builder(InsertPoint.at_end(entry)).insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, TAG)
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
    before = _strictly_before(bool(op.descending.value.data), op.input.type.element_type)
    c = ScalarCode(nest.inner, op.input.type.element_type, LoopNames(), None)
    n, zero, one, k = nest.size, c.index(0), c.index(1), c.index(k_value)
    last_slot = c.index(k_value - 1)

    slot, init = c.loop(zero, k, one, "scan0", role="scan")
    init.store(init.ins(arith.ConstantOp(IntegerAttr(0, _I64))), out, nest.at(slot))
    held = c.local_index(zero)
    p, scan = c.loop(zero, n, one, "scan1", role="scan")
    value = scan.load(x, nest.at(p))
    m = scan.get_index(held)

    def value_at(code: ScalarCode, slot: SSAValue) -> tuple[SSAValue, SSAValue]:
        index = code.load(out, nest.at(slot))
        return index, code.load(x, nest.at(code.ins(arith.IndexCastOp(index, IndexType()))))

    _, worst = value_at(scan, last_slot)
    insert = scan.ins(arith.OrIOp(scan.ins(arith.CmpiOp(m, k, "ult")), before(scan, value, worst)))
    slot = scan.ins(arith.MinUIOp(m, last_slot))
    landing = scan.local_index(slot)
    moving = scan.local_index(one)
    t, shift = scan.loop(zero, scan.ins(arith.SelectOp(insert, slot, zero)), one, "scan2", role="scan")
    j = shift.ins(arith.SubiOp(slot, t))
    above = shift.ins(arith.SubiOp(j, one))
    above_index, above_value = value_at(shift, above)
    go = shift.ins(arith.AndIOp(shift.ins(arith.CmpiOp(shift.get_index(moving), zero, "ne")), before(shift, value, above_value)))
    shift.store(shift.ins(arith.SelectOp(go, above_index, shift.load(out, nest.at(j)))), out, nest.at(j))
    shift.put_index(shift.ins(arith.SelectOp(go, above, shift.get_index(landing))), landing)
    shift.put_index(shift.ins(arith.SelectOp(go, one, zero)), moving)
    land = scan.get_index(landing)
    kept = scan.load(out, nest.at(land))
    scan.store(scan.ins(arith.SelectOp(insert, scan.ins(arith.IndexCastOp(p, _I64)), kept)), out, nest.at(land))
    scan.put_index(scan.ins(arith.MinUIOp(scan.ins(arith.AddiOp(m, one)), k)), held)
    Builder(InsertPoint.at_end(entry)).insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, TOP_K_TAG)
    return kernel


@kernel_rule(te.SortOp)
def sort(host: KernelHost, op: te.SortOp, target: SSAValue) -> None:
    """One kernel merge-sorting each line's indices in a workspace (a temporary: two
    index buffers of the result's shape), or keeping the best ``k`` in the output as
    each line is read."""
    if op.k is not None:
        kernel, workspace = top_k_kernel(op, host.kernel_name(TOP_K_TAG)), []
    else:
        kernel = sort_kernel(op, host.kernel_name(TAG))
        workspace = [host.temporary(workspace_type(op))]
    host.call(kernel, [host.buffer(op.input), target, *workspace])


__all__ = ["TAG", "TOP_K_TAG", "sort", "sort_kernel", "top_k_kernel", "workspace_type"]

"""The loop kernel of a ``te.scatter``. te-to-loop first copies the input into the result
buffer (a plain copy kernel, row-major), then this kernel applies the updates in place,
one line of the result (every axis but the scatter axis) at a time::

    %n = indices.dim(axis)
    loop.for %i0 = 0 to min(out, indices).dim(0) {      // lines: no two write one element
      loop.for %j = 0 to %n name("update0") {
        %t = clamp(wrap(indices[.., j, ..]))             // never out of bounds
        out[.., t, ..] = combine(out[.., t, ..], updates[.., j, ..])
      }
    }

``O(size(input) + size(indices))``, where the gather form of TE costs
``O(size(input) * indices.shape[axis])``. The lines run in parallel (CPU threads, GPU
threads) without atomics; each line's updates run in order, so the last ``update``
wins. With ``include_self = false`` a first pass over the line's updates sets the
elements they hit to the combiner's identity.
"""

from __future__ import annotations

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Region, SSAValue

from ..dialects import loop, te
from .line_nest import index_const, line_nest, scalar_literal
from .te_builder import highest_value, lowest_value
from .copy_kernel import copy_kernel
from .kernel_registry import KernelHost, kernel_rule
from .loop_nest import buffer_bounds, buffer_type, combine_op, emit_loop_nest

#: the ``tk.kernel`` tag of scatter kernels
TAG = "scatter"


def scatter_kernel(op: te.ScatterOp, name: str) -> func.FuncOp:
    """The kernel ``name(indices, updates, out)`` updating ``out`` (which holds ``op``'s
    input) in place (module docstring)."""
    axis, mode = op.axis.value.data, op.mode.data
    element = op.result.type.element_type
    arg_types = [buffer_type(v.type) for v in (op.indices, op.updates, op.result)]
    entry = Block(arg_types=arg_types)
    indices, updates, out = entry.args
    b = Builder(InsertPoint.at_end(entry))
    covered = buffer_bounds(b, indices)
    count = covered[axis]
    # the lines the indices cover (lines past their extent on some axis get no update)
    nest = line_nest(b, out, axis, within=covered)
    inner, at = nest.inner, nest.at

    def target(builder: Builder, j: SSAValue) -> SSAValue:
        """The (wrapped, clamped) position along the axis that update ``j`` goes to."""
        raw = builder.insert(loop.LoadOp(indices, at(j))).result
        t = builder.insert(arith.IndexCastOp(raw, IndexType())).result
        size = nest.size
        negative = builder.insert(arith.CmpiOp(t, index_const(builder, 0), "slt")).result
        t = builder.insert(arith.SelectOp(negative, builder.insert(arith.AddiOp(t, size)).result, t)).result
        t = builder.insert(arith.MaxSIOp(t, index_const(builder, 0))).result
        return builder.insert(arith.MinSIOp(t, builder.insert(arith.SubiOp(size, index_const(builder, 1))).result)).result

    if mode != "update" and not op.include_self.value.data:
        identity = {"add": 0, "mul": 1, "max": lowest_value(element), "min": highest_value(element)}[mode]
        (j,), clear = emit_loop_nest(inner, [count], "clear", role="init")
        value = clear.insert(arith.ConstantOp(scalar_literal(identity, element))).result
        clear.insert(loop.StoreOp(value, out, at(target(clear, j))))
    (j,), apply = emit_loop_nest(inner, [count], "update", role="update")
    new = apply.insert(loop.LoadOp(updates, at(j))).result
    where = at(target(apply, j))
    if mode != "update":
        old = apply.insert(loop.LoadOp(out, where)).result
        new = apply.insert(combine_op(mode, element, old, new)).results[0]
    apply.insert(loop.StoreOp(new, out, where))
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, TAG)
    return kernel


@kernel_rule(te.ScatterOp)
def scatter(host: KernelHost, op: te.ScatterOp, target: SSAValue) -> None:
    """Two kernels: the input copied into ``target`` (row-major), then the updates
    applied to it in place, line by line."""
    copy = copy_kernel(target.type, host.kernel_name("copy"))
    update = scatter_kernel(op, host.kernel_name(TAG))
    host.call(copy, [host.buffer(op.input), target])
    host.call(update, [host.buffer(op.indices), host.buffer(op.updates), target])


__all__ = ["TAG", "scatter", "scatter_kernel"]

"""The kernel of a ``te.compute`` or a fused group (``graph.fused``): one loop nest over
the result, its body the compute's body (te-to-loop's default schedule).

Loops are serial, one per result dim (named ``i0``, ``i1``, ...); a reduction
accumulates in a local scalar buffer over serial loops ``k0``... A fused group's other
computes are inlined where they are read, except its row stages (producers holding one
value per row of its output, such as softmax's row max and sum: ``row_stages.py``),
computed once per row, inside the outer (row) loops and before the loops over the
row's elements::

    func.func @softmax_0(%x: memref<64x1024xf32>, %out: memref<64x1024xf32>) attributes {tk.kernel = "softmax"} {
      loop.for %i0 = ... name("i0") {                 // rows
        loop.for %k0 = ... name("k0") { ... }          // row max
        loop.for %k1_0 = ... name("k1_0") { ... }      // row sum of exp(x - max)
        loop.for %i1 = ... name("i1") { ... }          // the row's elements
      }
    }
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop, te
from ..dialects.graph import FusedOp
from ..dialects.graph.types import shape_of
from .kernel_registry import KernelHost, kernel_rule
from .loop_nest import buffer_bounds, buffer_type, combine_op, emit_loop_nest
from .row_stages import RowStages, reduces, row_stages
from .symbol_sizes import SymbolSizes


@dataclass(frozen=True)
class _Inlined:
    """A tensor computed where it is read (a fused producer), not stored in a buffer."""

    compute: te.ComputeOp


def _is_zero(index: SSAValue) -> bool:
    return isinstance(index.owner, arith.ConstantOp) and index.owner.value.value.data == 0


#: the emission of a te body: it yields the emission of each inlined producer it reads and
#: is sent that producer's value back, so that :func:`_run_steps` runs producers on a stack of
#: its own -- nested calls would overflow Python's recursion along a chain of hundreds of
#: fused producers each reading the next
_Steps = Generator["_Steps", SSAValue, SSAValue]


def _run_steps(steps: _Steps) -> SSAValue:
    """Run ``steps`` and the emissions it hands over, innermost first; its value."""
    stack = [steps]
    sent: SSAValue | None = None
    while True:
        try:
            inner = stack[-1].send(sent)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            sent = done.value
            continue
        stack.append(inner)
        sent = None


class _BodyEmitter:
    """Copies a te body into loops: reads become loads (or, for an inlined producer, its
    body at the read's indices), reductions become accumulations in a local buffer.

    ``values`` maps te values to loop values; a tensor maps to its buffer or to
    :class:`_Inlined`. ``symbols`` gives the index value of each symbolic dim.
    """

    def __init__(self, values: dict[SSAValue, SSAValue | _Inlined], symbols: SymbolSizes):
        self.values = values
        self.symbols = symbols
        self.reductions = 0
        #: row stages computed so far (their value in the current row) and the row's
        #: induction variables (``row_stages.py``)
        self.per_row: dict[te.ComputeOp, SSAValue] = {}
        self.row: list[SSAValue] = []
        #: inlined elements already computed in a block, by (producer, block, indices): a
        #: value read twice is computed once (re-emitting it per read grows exponentially
        #: along a chain of such reads)
        self.computed: dict[tuple[te.ComputeOp, Block, tuple[SSAValue, ...]], SSAValue] = {}
        #: pure ops emitted so far, by block and what they compute: one emitted again (an
        #: index expression of a second read of a producer) is the first one, so reads at
        #: equal indices share one element in ``computed`` (as the silu chain shares reads
        #: at the same index variables)
        self.numbered: dict[tuple, Operation] = {}
        #: the producer stored in the output row once the stages that read it start (see
        #: :func:`stashed_producer`), and the output buffer
        self.stashed: te.ComputeOp | None = None
        self.out: SSAValue | None = None
        #: while the output's elements are emitted, their induction variables: each
        #: element overwrites its stashed value, so only that one may be read back
        self.element: list[SSAValue] | None = None

    def at_row(self, indices: Sequence[SSAValue], shape: Sequence[int | str]) -> bool:
        """Whether ``indices`` into a tensor of ``shape`` address the current row: its
        induction variables (or 0 along a row dim of size 1), then zeros."""
        r = len(self.row)
        return all(i is v or (d == 1 and _is_zero(i)) for i, v, d in zip(indices[:r], self.row, shape)) and all(
            _is_zero(i) for i in indices[r:]
        )

    def emit_compute(self, b: Builder, compute: te.ComputeOp, indices: Sequence[SSAValue]) -> SSAValue:
        """The element of ``compute`` at ``indices``, computed in place."""
        return _run_steps(self._compute_steps(b, compute, indices))

    def _compute_steps(self, b: Builder, compute: te.ComputeOp, indices: Sequence[SSAValue]) -> _Steps:
        self.values.update(zip(compute.index_vars, indices))
        self.values.update(zip(compute.input_args, (self.values[v] for v in compute.inputs)))
        return (yield from self._block_steps(b, compute.body.block))

    def _block_steps(self, b: Builder, block: Block) -> _Steps:
        """Emit every op of ``block`` but its te.yield; return the yielded value."""
        for op in block.ops:
            if isinstance(op, te.YieldOp):
                return self.values[op.value]
            yield from self._op_steps(b, op)
        raise PassFailedException("te body without te.yield")

    def _op_steps(self, b: Builder, op: Operation) -> _Steps:
        match op:
            case te.ReadOp():
                source = self.values[op.tensor]
                indices = [self.values[i] for i in op.indices]
                if isinstance(source, _Inlined):
                    hoisted = self.per_row.get(source.compute)
                    if hoisted is not None and self.at_row(indices, shape_of(op.tensor.type)):
                        self.values[op.result] = hoisted  # computed once for this row
                        return
                    if source.compute is self.stashed and self._stash_holds(indices):
                        b.insert(load := loop.LoadOp(self.out, indices))  # stored in this row already
                        self.values[op.result] = load.result
                        return
                    key = (source.compute, b.insertion_point.block, tuple(indices))
                    if key not in self.computed:
                        # handed to _run_steps, not nested here: see _Steps
                        self.computed[key] = yield self._compute_steps(b, source.compute, indices)
                    self.values[op.result] = self.computed[key]
                    return
                new = loop.LoadOp(source, indices)
            case te.DimOp():
                self.values[op.result] = self.emit_dim(b, op.tensor, op.axis.value.data)
                return
            case te.ReduceOp():
                self.values[op.result] = yield from self._reduce_steps(b, op)
                return
            case _:
                new = op.clone(value_mapper=self.values)
                key = _value_number(new, b.insertion_point.block)
                if key is not None:
                    new = self.numbered.setdefault(key, new)
                    if new.parent is not None:  # emitted before in this block
                        self.values.update(zip(op.results, new.results))
                        return
        b.insert(new)
        for old, result in zip(op.results, new.results):
            self.values[old] = result

    def _stash_holds(self, indices: Sequence[SSAValue]) -> bool:
        """Whether the output row still holds the stashed producer at ``indices``: in the
        current row, and before the element loop or at the element being computed (a
        read elsewhere, say a row sum the element loop recomputes, computes it inline)."""
        in_row = all(i is v for i, v in zip(indices, self.row))
        return in_row and (self.element is None or all(i is v for i, v in zip(indices, self.element, strict=True)))

    def emit_dim(self, b: Builder, tensor: SSAValue, axis: int) -> SSAValue:
        source = self.values[tensor]
        if not isinstance(source, _Inlined):
            return b.insert(loop.DimOp(source, axis)).result
        size = shape_of(source.compute.result.type)[axis]
        if isinstance(size, str):
            return self.symbols.size(b, size)
        return b.insert(arith.ConstantOp(IntegerAttr(size, IndexType()))).result

    def _reduce_steps(self, b: Builder, op: te.ReduceOp) -> _Steps:
        t = op.result.type
        acc = b.insert(loop.AllocOp(MemRefType(t, []), scope="local")).result
        init = b.insert(arith.ConstantOp(op.init)).result
        b.insert(loop.StoreOp(init, acc, []))
        prefix = f"k{self.reductions}_" if self.reductions else "k"
        self.reductions += 1
        ivs, inner = emit_loop_nest(b, [self.values[e] for e in op.extents], prefix, role="reduction")
        self.values.update(zip(op.axes, ivs))
        term = yield from self._block_steps(inner, op.body.block)
        current = inner.insert(loop.LoadOp(acc, [])).result
        combined = inner.insert(combine_op(op.combiner.data, t, current, term)).results[0]
        inner.insert(loop.StoreOp(combined, acc, []))
        return b.insert(loop.LoadOp(acc, [])).result


def _value_number(op: Operation, block: Block) -> tuple | None:
    """What a side-effect-free op without regions computes in ``block`` (its name,
    operands, properties, attributes and result types), or None for other ops."""
    if op.regions or not is_side_effect_free(op):
        return None
    properties = tuple(sorted(op.properties.items()))
    attributes = tuple(sorted(op.attributes.items()))
    return (block, op.name, tuple(op.operands), properties, attributes, tuple(r.type for r in op.results))


def stashed_producer(root: te.ComputeOp, rows: RowStages | None, inlined: Sequence[te.ComputeOp]) -> te.ComputeOp | None:
    """The elementwise producer to compute once per element and store in the output row,
    before the stages that read it, or None. Softmax's ``exp(x - max)`` is read by the row
    sum and by the output: inlined, each element's exp is computed twice; stored, the sum
    and the output read it back from the row (in cache), and the output scales it in
    place (softmax 64x1024, one thread: 1 exp per element instead of 2). Only a producer
    holding transcendental math (``math.*``: a subtraction is cheaper to redo than to
    store and load) of the output's shape and element type, read directly by the output
    and by a stage, and not reading a stage computed after one that reads it."""
    if rows is None:
        return None
    stages = list(rows.stages)
    for p in inlined:
        if p in stages or p.result.type != root.result.type or reduces(p):
            continue
        if not any(op.name.startswith("math.") for op in p.body.walk()):
            continue
        readers = {use.operation for use in p.result.uses}
        reading_stages = [k for k, stage in enumerate(stages) if stage in readers]
        if root not in readers or not reading_stages:
            continue
        read_by_p = [k for k, stage in enumerate(stages) if stage.result in p.inputs]
        if all(k < min(reading_stages) for k in read_by_p):
            return p
    return None


def _kernel(
    name: str,
    tag: str,
    inputs: Sequence[SSAValue],
    root: te.ComputeOp,
    inlined: Sequence[te.ComputeOp] = (),
    carriers: Sequence[SSAValue] = (),
    stash_rows: bool = False,
) -> func.FuncOp:
    """The kernel ``name(inputs..., carriers..., out)``: one loop nest over ``root``'s
    result, with the ``inlined`` computes evaluated where they are read (default schedule),
    except row stages (``row_stages.py``): those once per row, before the row's elements,
    and with ``stash_rows`` the producer :func:`stashed_producer` picks, stored in the
    output row before the stages that read it (a loop named ``ks<depth>...``).
    ``carriers`` are tensors the kernel never reads, passed for their sizes only (symbols
    its own tensors do not give, see :func:`unsized_symbols`)."""
    arg_types = [buffer_type(v.type) for v in (*inputs, *carriers, root.result)]
    entry = Block(arg_types=arg_types)
    *in_buffers, out = entry.args
    b = Builder(InsertPoint.at_end(entry))
    values: dict[SSAValue, SSAValue | _Inlined] = dict(zip(inputs, in_buffers))
    values.update((c.result, _Inlined(c)) for c in inlined)
    symbols = SymbolSizes(b, [*inputs, *carriers, root.result], [*in_buffers, out])
    bounds = buffer_bounds(b, out)
    emitter = _BodyEmitter(values, symbols)
    rows = row_stages(root, inlined)
    depth = rows.depth if rows else 0
    row_ivs, row = emit_loop_nest(b, bounds[:depth], "i", role="spatial")
    stash = stashed_producer(root, rows, inlined) if stash_rows else None
    if rows:
        # each stage once per row, at the row's first element (zeros past the row dims)
        zero = row.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
        emitter.row, emitter.out = row_ivs, out
        for stage in rows.stages:
            if stash is not None and emitter.stashed is None and stage in {u.operation for u in stash.result.uses}:
                stash_ivs, stash_body = emit_loop_nest(row, bounds[depth:], "ks", depth, role="init")
                at = [*row_ivs, *stash_ivs]
                stash_body.insert(loop.StoreOp(emitter.emit_compute(stash_body, stash, at), out, at))
                emitter.stashed = stash
            value = emitter.emit_compute(row, stage, [*row_ivs] + [zero] * (len(bounds) - depth))
            emitter.per_row[stage] = value
    element_ivs, inner = emit_loop_nest(row, bounds[depth:], "i", depth, role="spatial")
    ivs = [*row_ivs, *element_ivs]
    emitter.element = ivs
    inner.insert(loop.StoreOp(emitter.emit_compute(inner, root, ivs), out, ivs))
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, tag)
    return kernel


def outline_kernel(compute: te.ComputeOp, name: str, carriers: Sequence[SSAValue] = ()) -> func.FuncOp:
    """The kernel computing one ``te.compute`` (``carriers``: see :func:`_kernel`)."""
    return _kernel(name, _tag(compute), list(compute.inputs), compute, carriers=carriers)


def outline_fused_kernel(
    fused: FusedOp, name: str, carriers: Sequence[SSAValue] = (), stash_rows: bool = False
) -> func.FuncOp:
    """ONE kernel for a fused group: its output compute, every other compute inlined
    (row stages once per row; ``carriers``, ``stash_rows``: see :func:`_kernel`)."""
    block = fused.body.block
    root = block.last_op.value.owner
    computes = [op for op in block.ops if isinstance(op, te.ComputeOp)]
    if not isinstance(root, te.ComputeOp) or len(computes) != len(list(block.ops)) - 1:
        raise PassFailedException(
            f"te-to-loop: fused group '{fused.group_name.data}' must hold only te.compute ops (run graph-to-te first)"
        )
    inlined = [c for c in computes if c is not root]
    return _kernel(name, fused.group_name.data, list(block.args), root, inlined, carriers, stash_rows)


def _tag(compute: te.ComputeOp) -> str:
    return compute.attributes.get("tag", StringAttr("kernel")).data


@kernel_rule(te.ComputeOp)
def compute(host: KernelHost, op: te.ComputeOp, target: SSAValue) -> None:
    """One kernel computing ``op`` into ``target``."""
    carriers = host.carriers(op)
    kernel = outline_kernel(op, host.kernel_name(_tag(op)), carriers)
    host.call(kernel, [host.buffer(v) for v in (*op.inputs, *carriers)] + [target])


@kernel_rule(FusedOp)
def fused(host: KernelHost, op: FusedOp, target: SSAValue) -> None:
    """One kernel computing the fused group ``op`` into ``target``."""
    carriers = host.carriers(op)
    kernel = outline_fused_kernel(op, host.kernel_name(op.group_name.data), carriers, host.stash_rows)
    host.call(kernel, [host.buffer(v) for v in (*op.inputs, *carriers)] + [target])


__all__ = ["outline_fused_kernel", "outline_kernel", "stashed_producer"]

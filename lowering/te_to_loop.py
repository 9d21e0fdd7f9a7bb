"""te -> loop: each ``te.compute`` becomes a kernel (a loop nest over buffers), and the
graph function becomes a host function that allocates buffers and calls the kernels.

The default schedule is the plain one: one serial loop per result dim (named ``i0``,
``i1``, ...), reductions accumulate in a local scalar buffer over serial loops ``k0``...
Schedules (split, reorder, vectorize, parallel, ...) transform these loop nests later.
A fused group's row stages (producers holding one value per row of its output, such as
softmax's row max and sum: ``row_stages.py``) are computed once per row, inside the
outer (row) loops and before the loops over the row's elements.

After the pass, the function ``main(inputs) -> outputs`` reads::

    func.func @main(%x: memref<...>, ..., %out0: memref<...>, ..., %w0: memref<...>, ...)
        attributes {tk.entry = {inputs = 1, outputs = 1}, tk.weights = [...]}

inputs first, then the buffers the outputs are written to, then one buffer per
constant (its data listed in ``tk.weights``, in order), so the caller binds weights.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder, InsertPoint
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException

from ..dialects.byoc import CallOp as ExternalCallOp
from ..dialects import loop, te
from ..dialects.graph import ConstantOp, FusedOp
from ..dialects.graph.types import is_float, shape_of
from ..runtime.dim_expr import evaluate, free_symbols, is_symbol, lower
from .row_stages import RowStages, reduces, row_stages
from .te_builder import REASSOC

# (the names the driver imports from here until it reads them from dialects/loop.py)
ENTRY_ATTR, WEIGHTS_ATTR, entry_layout = loop.ENTRY_ATTR, loop.WEIGHTS_ATTR, loop.entry_layout


def buffer_type(t: TensorType) -> MemRefType:
    """The memref holding a tensor (symbolic dims become ``?``)."""
    return MemRefType(t.element_type, t.get_shape())


# ---------------------------------------------------------------------------
# kernels


class SymbolSizes:
    """Index values of symbolic dims: those of some buffer read off it (``loop.dim``), a
    dim computed from symbols (``4*n``, ``runtime/dim_expr.py``) computed where needed."""

    #: index arithmetic for each operator of a dim expression
    OPS = {
        "+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "//": arith.FloorDivSIOp,
        "%": arith.RemSIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp,
    }  # fmt: skip

    def __init__(self, b: Builder, tensors: Sequence[SSAValue], buffers: Sequence[SSAValue]):
        """Read the symbolic dims of ``tensors`` off the buffers holding them (the first
        buffer that has each)."""
        self.read: dict[str, SSAValue] = {}
        for tensor, buffer in zip(tensors, buffers):
            for axis, d in enumerate(shape_of(tensor.type)):
                if isinstance(d, str) and d not in self.read:
                    self.read[d] = b.insert(loop.DimOp(buffer, axis)).result

    def size(self, b: Builder, dim: str, t: Attribute | None = None) -> SSAValue:
        """The value of ``dim`` (computed at ``b`` if it is an expression not read off a buffer)."""
        if dim in self.read:
            return self.read[dim]
        if is_symbol(dim):
            solved = self._solve(b, dim)
            if solved is None:
                raise PassFailedException(f"te-to-loop: symbolic dim '{dim}'{f' of {t}' if t else ''} is not an input dim")
            self.read[dim] = solved
            return solved

        def index(k: int) -> SSAValue:
            return b.insert(arith.ConstantOp(IntegerAttr(k, IndexType()))).result

        def binary(make: type[Operation]):
            return lambda x, y: b.insert(make(x, y)).result

        emit = {op: binary(make) for op, make in self.OPS.items()}
        emit["neg"] = lambda x: b.insert(arith.SubiOp(index(0), x)).result
        return lower(dim, lambda name: self.size(b, name, t), emit, index)


    def _solve(self, b: Builder, symbol: str) -> SSAValue | None:
        """``symbol`` from a dim read off a buffer that is linear in it alone: a kernel
        whose input has ``4*n`` rows (a batch merged with another axis) and whose output
        has ``n`` computes ``n = (dim - 0) / 4``."""
        for expr, value in self.read.items():
            line = _linear_in(expr, symbol)
            if line is None:
                continue
            offset, scale = line
            index = lambda k: b.insert(arith.ConstantOp(IntegerAttr(k, IndexType()))).result  # noqa: E731
            rest = b.insert(arith.SubiOp(value, index(offset))).result if offset else value
            return b.insert(arith.DivUIOp(rest, index(scale))).result if scale != 1 else rest
        return None


def _linear_in(dim: str, symbol: str) -> tuple[int, int] | None:
    """(offset, scale) when ``dim`` is ``offset + scale*symbol`` (scale > 0), else None."""
    if dim == symbol:
        return 0, 1
    if is_symbol(dim) or free_symbols(dim) != {symbol}:
        return None
    offset, *points = (evaluate(dim, {symbol: k}) for k in range(4))
    scale = points[0] - offset
    if scale <= 0 or any(p != offset + k * scale for k, p in enumerate(points, 1)):
        return None
    return offset, scale


def _sizes_symbol(t: Attribute, symbol: str) -> bool:
    """Whether a tensor of type ``t`` gives ``symbol``: a dim of it linear in it alone."""
    return isinstance(t, TensorType) and any(
        isinstance(d, str) and _linear_in(d, symbol) is not None for d in shape_of(t)
    )


def unsized_symbols(op: Operation, tensors: Sequence[SSAValue]) -> set[str]:
    """The symbols a kernel of ``op`` would need that no tensor of ``tensors`` (its
    buffers) gives: those of a dim inside ``op`` that is not itself a dim of a buffer
    (:class:`SymbolSizes` computes such a dim from its symbols). A fused kernel whose
    buffers are all padded to ``-8*((-s)//8)`` rows but which slices ``s`` of them
    cannot recover ``s``."""
    read = {d for v in tensors for d in shape_of(v.type) if isinstance(d, str)}
    needed: set[str] = set()
    for inner in op.walk():
        for value in (*inner.results, *(a for r in inner.regions for blk in r.blocks for a in blk.args)):
            if isinstance(value.type, TensorType):
                unread = (d for d in shape_of(value.type) if isinstance(d, str) and d not in read)
                needed.update(s for d in unread for s in free_symbols(d))
    return {s for s in needed if not any(_sizes_symbol(v.type, s) for v in tensors)}


def _bounds(b: Builder, buffer: SSAValue) -> list[SSAValue]:
    """Loop upper bounds covering ``buffer``: constants, or ``loop.dim`` for ``?`` dims."""
    bounds = []
    for axis, size in enumerate(buffer.type.get_shape()):
        op = loop.DimOp(buffer, axis) if size < 0 else arith.ConstantOp(IntegerAttr(size, IndexType()))
        bounds.append(b.insert(op).results[0])
    return bounds


def emit_loop_nest(
    b: Builder, upper_bounds: Sequence[SSAValue], prefix: str, first: int = 0
) -> tuple[list[SSAValue], Builder]:
    """Serial loops ``0 <= iv < ub`` named ``{prefix}{first}``, ``{prefix}{first + 1}``...;
    returns the induction variables and a builder inside."""
    ivs: list[SSAValue] = []
    if not upper_bounds:
        return ivs, b
    zero = b.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
    one = b.insert(arith.ConstantOp(IntegerAttr(1, IndexType()))).result
    for k, ub in enumerate(upper_bounds, first):
        body = Block(arg_types=[IndexType()])
        b.insert(loop.ForOp(zero, ub, one, body, kind="serial", name=f"{prefix}{k}"))
        body.add_op(loop.YieldOp())
        ivs.append(body.args[0])
        b = Builder(InsertPoint.before(body.last_op))
    return ivs, b


_COMBINE = {
    ("add", True): lambda a, b: arith.AddfOp(a, b, REASSOC),
    ("mul", True): lambda a, b: arith.MulfOp(a, b, REASSOC),
    ("max", True): arith.MaximumfOp,
    ("min", True): arith.MinimumfOp,
    ("add", False): arith.AddiOp,
    ("mul", False): arith.MuliOp,
    ("max", False): arith.MaxSIOp,
    ("min", False): arith.MinSIOp,
}


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
        ivs, inner = emit_loop_nest(b, [self.values[e] for e in op.extents], prefix)
        self.values.update(zip(op.axes, ivs))
        term = yield from self._block_steps(inner, op.body.block)
        current = inner.insert(loop.LoadOp(acc, [])).result
        combined = inner.insert(_COMBINE[op.combiner.data, is_float(t)](current, term)).results[0]
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
    bounds = _bounds(b, out)
    emitter = _BodyEmitter(values, symbols)
    rows = row_stages(root, inlined)
    depth = rows.depth if rows else 0
    row_ivs, row = emit_loop_nest(b, bounds[:depth], "i")
    stash = stashed_producer(root, rows, inlined) if stash_rows else None
    if rows:
        # each stage once per row, at the row's first element (zeros past the row dims)
        zero = row.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
        emitter.row, emitter.out = row_ivs, out
        for stage in rows.stages:
            if stash is not None and emitter.stashed is None and stage in {u.operation for u in stash.result.uses}:
                stash_ivs, stash_body = emit_loop_nest(row, bounds[depth:], "ks", depth)
                at = [*row_ivs, *stash_ivs]
                stash_body.insert(loop.StoreOp(emitter.emit_compute(stash_body, stash, at), out, at))
                emitter.stashed = stash
            value = emitter.emit_compute(row, stage, [*row_ivs] + [zero] * (len(bounds) - depth))
            emitter.per_row[stage] = value
    element_ivs, inner = emit_loop_nest(row, bounds[depth:], "i", depth)
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


def copy_kernel(t: MemRefType, name: str) -> func.FuncOp:
    """A kernel copying one buffer of type ``t`` into another (for outputs that are inputs)."""
    entry = Block(arg_types=[t, t])
    src, dst = entry.args
    b = Builder(InsertPoint.at_end(entry))
    ivs, inner = emit_loop_nest(b, _bounds(b, dst), "i")
    inner.insert(loop.StoreOp(inner.insert(loop.LoadOp(src, ivs)).result, dst, ivs))
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, ([t, t], []), Region(entry))
    loop.set_kernel_tag(kernel, "copy")
    return kernel


# ---------------------------------------------------------------------------
# the host function

#: kernel names longer than this are cut (``_HostLowering.kernel_name``)
_LONGEST_NAME = 96

#: the tensor-level ops that become kernels
_KERNEL_OPS = te.ComputeOp | te.ScatterOp | te.ScanOp | te.SortOp | te.DenseLinalgOp | FusedOp


class _HostLowering:
    """Rewrites one tensor-level function into a buffer-level host function + kernels."""

    def __init__(self, function: func.FuncOp, stash_rows: bool = False):
        self.function = function
        self.stash_rows = stash_rows
        self.kernels: list[func.FuncOp] = []
        self.names: dict[str, int] = {}

    def kernel_name(self, tag: str) -> str:
        """A unique function name from ``tag`` (``<tag>_<k>``); a fused group of many ops
        (a special function's: hundreds of op names, thousands of characters) keeps its
        first ops and ``etc``, for symbols and profiles one can read (the whole tag stays
        the kernel's ``tk.kernel``, which the schedules read)."""
        if len(tag) > _LONGEST_NAME:
            cut = tag.rfind("_", 0, _LONGEST_NAME // 2)
            tag = tag[: cut if cut > 0 else _LONGEST_NAME // 2] + "_etc"
        k = self.names.get(tag, 0)
        self.names[tag] = k + 1
        return f"{tag}_{k}"

    def lower(self) -> None:
        f = self.function
        old_block = f.body.block
        ret = old_block.last_op
        if not isinstance(ret, func.ReturnOp):
            raise PassFailedException(f"te-to-loop: function '{f.sym_name.data}' must end with func.return")
        for op in old_block.ops:
            if not isinstance(op, _KERNEL_OPS | ConstantOp | ExternalCallOp | func.ReturnOp):
                raise PassFailedException(
                    f"te-to-loop: '{op.name}' in '{f.sym_name.data}' is not lowered to te yet (run graph-to-te first)"
                )
        constants = [op for op in old_block.ops if isinstance(op, ConstantOp)]
        input_types = [buffer_type(a.type) for a in old_block.args]
        output_types = [buffer_type(v.type) for v in ret.arguments]
        weight_types = [buffer_type(c.result.type) for c in constants]
        entry = Block(arg_types=input_types + output_types + weight_types)
        n_in, n_out = len(input_types), len(output_types)
        for new, old in zip(entry.args, old_block.args):
            new.name_hint = old.name_hint
        for k, arg in enumerate(entry.args[n_in : n_in + n_out]):
            arg.name_hint = f"out{k}"
        for k, arg in enumerate(entry.args[n_in + n_out :]):
            arg.name_hint = f"w{k}"
        buffers: dict[SSAValue, SSAValue] = dict(zip(old_block.args, entry.args[:n_in]))
        buffers.update(zip((c.result for c in constants), entry.args[n_in + n_out :]))
        outputs = list(entry.args[n_in : n_in + n_out])

        b = Builder(InsertPoint.at_end(entry))
        symbols = SymbolSizes(b, old_block.args, entry.args[:n_in])
        # A compute returned from the function writes straight into its output buffer.
        written_to: dict[SSAValue, SSAValue] = {}
        for value, out in zip(ret.arguments, outputs):
            if isinstance(value.owner, _KERNEL_OPS | ExternalCallOp) and value not in written_to:
                written_to[value] = out
        temporaries = []
        for op in old_block.ops:
            if isinstance(op, ExternalCallOp):
                # an external module (byoc): a call of its native symbol, declared here,
                # with the same buffer arguments as a kernel (inputs, then outputs)
                targets = []
                for result in op.outputs:
                    if result in written_to:
                        targets.append(written_to[result])
                        continue
                    t = buffer_type(result.type)
                    targets.append(b.insert(loop.AllocOp(t, self.dynamic_sizes(b, result.type, symbols))).result)
                    temporaries.append(targets[-1])
                symbol = op.external.symbol
                arg_types = [buffer_type(v.type) for v in op.inputs] + [t.type for t in targets]
                if symbol not in {k.sym_name.data for k in self.kernels}:
                    self.kernels.append(func.FuncOp.external(symbol, arg_types, []))
                b.insert(func.CallOp(symbol, [buffers[v] for v in op.inputs] + targets, []))
                buffers.update(zip(op.outputs, targets))
                continue
            if not isinstance(op, _KERNEL_OPS):
                continue
            if op.result in written_to:
                target = written_to[op.result]
            else:
                target = b.insert(
                    loop.AllocOp(buffer_type(op.result.type), self.dynamic_sizes(b, op.result.type, symbols))
                ).result
                temporaries.append(target)
            carriers = self.carriers(op, old_block.args)
            if isinstance(op, FusedOp):
                kernel = outline_fused_kernel(op, self.kernel_name(op.group_name.data), carriers, self.stash_rows)
            elif isinstance(op, te.ScatterOp):
                self.scatter(b, op, buffers, target)
                buffers[op.result] = target
                continue
            elif isinstance(op, te.ScanOp):
                from .scan_kernel import scan_kernel, scan_tag  # (it builds on this module)

                kernel = scan_kernel(op, self.kernel_name(scan_tag(op)))
            elif isinstance(op, te.DenseLinalgOp):
                self.dense_linalg(b, op, buffers, target, symbols, temporaries)
                buffers[op.result] = target
                continue
            elif isinstance(op, te.SortOp):
                self.sort(b, op, buffers, target, symbols, temporaries)
                buffers[op.result] = target
                continue
            else:
                kernel = outline_kernel(op, self.kernel_name(_tag(op)), carriers)
            self.kernels.append(kernel)
            arguments = [buffers[v] for v in (*op.inputs, *carriers)] + [target]
            b.insert(func.CallOp(kernel.sym_name.data, arguments, []))
            buffers[op.result] = target
        for value, out in zip(ret.arguments, outputs):
            if written_to.get(value) is not out:
                kernel = copy_kernel(out.type, self.kernel_name("copy"))
                self.kernels.append(kernel)
                b.insert(func.CallOp(kernel.sym_name.data, [buffers[value], out], []))
        for t in temporaries:
            b.insert(loop.FreeOp(t))
        b.insert(func.ReturnOp())

        new_function = func.FuncOp(f.sym_name.data, (entry.arg_types, []), Region(entry))
        loop.set_entry(new_function, n_in, n_out, [c.value for c in constants])
        Rewriter.replace_op(f, [new_function, *self.kernels])

    @staticmethod
    def carriers(op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
        """Function inputs a kernel of ``op`` is passed for their sizes (one for each
        symbol its own tensors do not give; every symbol is some input's size)."""
        dims = (d for v in inputs if isinstance(v.type, TensorType) for d in shape_of(v.type))
        symbolic = any(isinstance(d, str) for d in dims)
        if not symbolic or not isinstance(op, te.ComputeOp | FusedOp):
            return []  # (static shapes: nothing to look for)
        carriers: list[SSAValue] = []
        for symbol in sorted(unsized_symbols(op, [*op.inputs, op.result])):
            if any(_sizes_symbol(c.type, symbol) for c in carriers):
                continue
            carriers += [v for v in inputs if _sizes_symbol(v.type, symbol)][:1]
        return carriers

    def scatter(self, b: Builder, op: te.ScatterOp, buffers: dict[SSAValue, SSAValue], target: SSAValue) -> None:
        """Two kernels: the input copied into ``target`` (row-major), then the updates
        applied to it in place, line by line (``scatter_kernel.py``)."""
        from .scatter_kernel import TAG, scatter_kernel  # (it builds on this module)

        copy = copy_kernel(target.type, self.kernel_name("copy"))
        update = scatter_kernel(op, self.kernel_name(TAG))
        self.kernels += [copy, update]
        b.insert(func.CallOp(copy.sym_name.data, [buffers[op.input], target], []))
        b.insert(func.CallOp(update.sym_name.data, [buffers[op.indices], buffers[op.updates], target], []))

    def dense_linalg(
        self,
        b: Builder,
        op: te.DenseLinalgOp,
        buffers: dict[SSAValue, SSAValue],
        target: SSAValue,
        symbols: SymbolSizes,
        temporaries: list[SSAValue],
    ) -> None:
        """One kernel running the routine per matrix (``dense_linalg/``), given a
        workspace (a temporary: one matrix per matrix of the batch) when it factors a copy."""
        from .dense_linalg import dense_linalg_kernel, workspace_type  # (it builds on this module)

        kernel = dense_linalg_kernel(op, self.kernel_name(op.routine.data))
        arguments = [buffers[v] for v in op.inputs] + [target]
        self.call_with_workspace(b, kernel, arguments, workspace_type(op), symbols, temporaries)

    def sort(
        self,
        b: Builder,
        op: te.SortOp,
        buffers: dict[SSAValue, SSAValue],
        target: SSAValue,
        symbols: SymbolSizes,
        temporaries: list[SSAValue],
    ) -> None:
        """One kernel merge-sorting each line's indices in a workspace (a temporary: two
        index buffers of the result's shape), or keeping the best ``k`` in the output as
        each line is read (``sort_kernel.py``)."""
        from .sort_kernel import TAG, TOP_K_TAG, sort_kernel, top_k_kernel, workspace_type  # (it builds on this module)

        if op.k is not None:
            kernel, workspace = top_k_kernel(op, self.kernel_name(TOP_K_TAG)), None
        else:
            kernel, workspace = sort_kernel(op, self.kernel_name(TAG)), workspace_type(op)
        self.call_with_workspace(b, kernel, [buffers[op.input], target], workspace, symbols, temporaries)

    def call_with_workspace(
        self,
        b: Builder,
        kernel: func.FuncOp,
        arguments: list[SSAValue],
        workspace: TensorType | None,
        symbols: SymbolSizes,
        temporaries: list[SSAValue],
    ) -> None:
        """Call ``kernel`` on ``arguments`` and, where it needs one, a ``workspace`` the host
        allocates (a temporary, freed with the others)."""
        if workspace is not None:
            sizes = self.dynamic_sizes(b, workspace, symbols)
            arguments = [*arguments, b.insert(loop.AllocOp(buffer_type(workspace), sizes)).result]
            temporaries.append(arguments[-1])
        self.kernels.append(kernel)
        b.insert(func.CallOp(kernel.sym_name.data, arguments, []))

    @staticmethod
    def dynamic_sizes(b: Builder, t: TensorType, symbols: SymbolSizes) -> list[SSAValue]:
        return [symbols.size(b, d, t) for d in shape_of(t) if isinstance(d, str)]


@dataclass(frozen=True)
class TEToLoopPass(ModulePass):
    """Outline each te.compute into a loop-nest kernel; turn functions into buffer code.
    ``stash_rows`` (the CPU pipeline's): a row kernel stores an expensive producer its
    stages and output both read in the output row (:func:`stashed_producer`); off by
    default, for the GPU, whose row schedules expect the stages and the element loop only."""

    name = "te-to-loop"
    stash_rows: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            signature = (*function.function_type.inputs.data, *function.function_type.outputs.data)
            # a function of no inputs whose outputs fold to constants is an entry too, as
            # is one of no inputs and no outputs (a model that computes nothing)
            if not signature or any(isinstance(t, TensorType) for t in signature) or any(
                isinstance(o, te.ComputeOp | te.ScatterOp | te.ScanOp | te.SortOp | te.DenseLinalgOp) for o in function.body.walk()
            ):
                _HostLowering(function, self.stash_rows).lower()


__all__ = ["TEToLoopPass", "buffer_type", "emit_loop_nest", "entry_layout"]

"""``fuse-ops``: group graph ops into ``graph.fused`` regions, each compiled to ONE kernel.

TVM's FuseOps in spirit: ops are grouped by their pattern kind (``GraphOp.PATTERN_KIND``)
walking from each group's output back to its producers. A producer joins its consumers'
group when every one of its uses is in that group (so no intermediate escapes) and:

* it is elementwise, broadcast or injective, and no consumer in the group re-reads its
  elements many times (conv/dense/matmul inputs stay outside: they are read once per
  output, recomputing them would cost a factor of the contraction size);
* or it is the group's one *anchor* -- a reduction (COMM_REDUCE) or an op with an
  elementwise-fusable output (OUT_ELEMWISE_FUSABLE: conv2d, dense, matmul) -- and each of
  its elements is computed once in the fused kernel (the ops between it and the group's
  output read each element at most once); an OUT_ELEMWISE_FUSABLE anchor only takes
  elementwise/broadcast consumers.

* or it holds one value per row of the group's output -- its shape is the output's
  leading (row) dims then 1s (``row_depths``): layer norm's mean and variance, an RMS
  norm's mean square, ``rsqrt(var + eps)`` -- and it is read only by elementwise or
  broadcast ops of the group, and no injective op stands between it and the output.
  te-to-loop computes such a *row member* once per row, before the row's elements
  (``lowering/row_stages.py``), so it may be a reduction read at broadcast indices,
  and any number of them join (they are not the anchor). All row members of a group
  share a row depth; a group with a conv/dense/matmul anchor takes none.

OPAQUE ops (softmax, whose rule emits several computes; graph-to-te groups them into
one row kernel itself) and constants never join. The lowering (te-to-loop) inlines
every other producer of a group into the group's output compute, so intermediates
live in registers.

Two bounds keep a kernel in check. At most ``max_group_size`` (1024) ops in a group:
LLVM's code generation grows faster than linearly in a kernel's size (measured on one
elementwise chain: 0.8 s at 1000 ops, 4 s at 2000, 19 s at 4000). And few *recomputed*
ops: those whose elements the kernel computes again for each element of a consumer that
broadcasts them (a (1, C) producer of an (N, C) output runs N times), and their
producers. The other members -- read by elementwise ops of their own shape, by
reductions, reshapes, transposes and slices -- are computed once per element (reads
of one element at the same indices are computed once). A group takes at most as many
recomputed ops as it has of the others (so its kernel does at most twice the work of
computing the broadcast ops apart, whatever the broadcast), or ``max_recomputed_ops``
(64) where that is more. So a long elementwise DAG -- a special function's rule is
hundreds of such ops -- stays one kernel, with its few broadcast operands.

A concatenation computes each of its inputs for every element of its result (and
selects one): an op read through concatenations of ``k`` inputs is computed ``k`` times
per element (nested ones multiply). A group takes such ops while the repeated work --
the sum over its computing members of (times computed - 1) -- stays within
``max_copied_work`` (16); ops that only move elements (slices, transposes, gathers) are
free. So ``cat([-x2, x1])`` (rotary embeddings) stays one kernel, and a long chain of
arithmetic before a concatenation is computed once, in a kernel of its own.

A view -- a reshape, slice or transpose, which only moves elements -- read by several
groups and nothing else is copied for each of them (XLA's fusion duplicates cheap
producers the same way): each copy joins its readers' group, so the kernels read the
view's source directly instead of one kernel materializing the view for the others (the
real and imaginary halves of an FFT's result, sliced once and read by two products).
When one group cannot take its copy (a dense reading the view), none does: the view
stays a kernel of its own, as before, rather than being computed both ways.

Example: ``relu(add(conv2d(x, w), r))`` becomes one ``graph.fused "conv2d_add_relu"``;
layer norm (mean, x - mean, its square's mean, rsqrt, scale, shift) becomes one
``graph.fused "reduce_mean_sub_mul_reduce_mean_add_rsqrt_mul_mul_add"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ..dialects.graph import ConstantOp, FusedOp, GraphOp, OpPatternKind, YieldOp
from ..dialects.graph.fusion import fused_body
from ..dialects.graph.shape import BroadcastToOp, ConcatOp, ReshapeOp, SliceOp, TransposeOp
from ..dialects.graph.types import row_depths, shape_of

_CHEAP = (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST, OpPatternKind.INJECTIVE)
_ANCHORS = (OpPatternKind.COMM_REDUCE, OpPatternKind.OUT_ELEMWISE_FUSABLE)


@dataclass
class _Group:
    root: GraphOp
    members: list[GraphOp] = field(default_factory=list)
    anchor: GraphOp | None = None
    #: members whose every element is computed at most once in the fused kernel
    single_read: set[GraphOp] = field(default_factory=set)
    #: members computed once per row (see the module docstring)
    row_members: set[GraphOp] = field(default_factory=set)
    #: the row depths every reducing row member allows (None: no reducing row member yet)
    row_depths: set[int] | None = None
    #: members computed once for each of their elements (row members: once per row)
    per_element: set[GraphOp] = field(default_factory=set)
    #: how many members are not (see the module docstring)
    recomputed: int = 0
    #: per member, how many times the kernel evaluates each of its elements because
    #: concatenations compute every input for each element (the root: once)
    copies: dict[GraphOp, int] = field(default_factory=dict)
    #: the work of computing ops again for concatenations: sum of (copies - 1)
    copied_work: int = 0


@dataclass
class _Admission:
    """How an op joins a group (see :meth:`_Fuser.try_join`)."""

    group: _Group
    copies: int
    copied_work: int
    once: bool
    row_depths: set[int]
    per_element: bool


def _reads_each_element_once(consumer: GraphOp, producer_value: SSAValue) -> bool:
    """Does ``consumer`` read each element of ``producer_value`` at most once?"""
    kind = consumer.PATTERN_KIND
    if kind == OpPatternKind.COMM_REDUCE:
        return True
    if kind == OpPatternKind.ELEMWISE:
        return True
    if kind == OpPatternKind.BROADCAST:
        return not isinstance(consumer, BroadcastToOp) and producer_value.type == consumer.results[0].type
    # Of the injective ops, these read each source element at most once; others (concat,
    # gather, pad) evaluate clamped reads of every input for each element.
    return isinstance(consumer, ReshapeOp | TransposeOp | SliceOp)


def _users(op: Operation) -> set[Operation]:
    return {use.operation for use in op.results[0].uses}


_ROW_READERS = (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST)


def _row_depths(op: GraphOp, group: _Group, users: set[Operation]) -> set[int]:
    """The row depths at which ``op`` may join ``group`` as a row member (empty: it may
    not): an elementwise, broadcast or reducing op holding one value per row of the
    group's output, read only by elementwise/broadcast members that are row members
    themselves or have the output's shape, in a group without injective members (which
    would read rows at other indices) or a conv/dense/matmul anchor."""
    kind = op.PATTERN_KIND
    if kind not in (*_ROW_READERS, OpPatternKind.COMM_REDUCE):
        return set()
    if group.anchor is not None and group.anchor.PATTERN_KIND == OpPatternKind.OUT_ELEMWISE_FUSABLE:
        return set()
    output = group.root.results[0].type
    depths = row_depths(shape_of(op.results[0].type), shape_of(output))
    if kind == OpPatternKind.COMM_REDUCE and group.row_depths is not None:
        depths &= group.row_depths
    if not depths:
        return set()
    if any(m.PATTERN_KIND == OpPatternKind.INJECTIVE or isinstance(m, BroadcastToOp) for m in group.members):
        return set()
    for u in users:
        if u.PATTERN_KIND not in _ROW_READERS or isinstance(u, BroadcastToOp):
            return set()
        if u not in group.row_members and u.results[0].type != output:
            return set()
    return depths


def _reads_in_step(consumer: GraphOp, value: SSAValue) -> bool:
    """Does ``consumer`` read each element of ``value`` for one element of its own (so
    never one element for several: no broadcast)? Unlike :func:`_reads_each_element_once`,
    a type change at the same shape (compare, cast) counts."""
    if consumer.PATTERN_KIND in (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST):
        if isinstance(consumer, BroadcastToOp):
            return False
        t, result = value.type, consumer.results[0].type
        return isinstance(t, TensorType) and isinstance(result, TensorType) and shape_of(t) == shape_of(result)
    return consumer.PATTERN_KIND == OpPatternKind.COMM_REDUCE or isinstance(consumer, ReshapeOp | TransposeOp | SliceOp)


def _computed_per_element(op: GraphOp, group: _Group, users: set[Operation]) -> bool:
    """Would ``op`` be computed once for each of its elements in ``group``?"""
    return all(u in group.per_element and _reads_in_step(u, op.results[0]) for u in users)


def _computes(op: GraphOp) -> bool:
    """Does ``op`` do arithmetic (not only move or pick elements)?"""
    return op.PATTERN_KIND != OpPatternKind.INJECTIVE and not isinstance(op, BroadcastToOp)


#: ops that only move elements: copied into each group that reads them
_VIEWS = (ReshapeOp, SliceOp, TransposeOp)


class _Fuser:
    def __init__(self, block_ops: list[Operation], max_group_size: int, max_recomputed_ops: int, max_copied_work: int):
        self.ops = block_ops
        # positions taken once: per group, the block's walk made fusion quadratic in
        # the number of groups (a view's copies take the view's position)
        self.order = {o: k for k, o in enumerate(block_ops)}
        self.max_group_size = max_group_size
        self.max_recomputed_ops = max_recomputed_ops
        self.max_copied_work = max_copied_work
        self.group_of: dict[Operation, _Group] = {}

    def try_join(self, op: GraphOp) -> bool:
        admission = self._admission(op)
        if admission is not None:
            self._admit(op, admission)
        return admission is not None

    def _admission(self, op: GraphOp) -> _Admission | None:
        """How ``op`` would join its users' group, or None where it may not; changes nothing."""
        users = _users(op)
        groups = {id(self.group_of.get(u)) for u in users}
        if not users or len(groups) != 1 or any(u not in self.group_of for u in users):
            return None
        group = self.group_of[next(iter(users))]
        if len(group.members) >= self.max_group_size:
            return None
        kind = op.PATTERN_KIND
        if any(u.PATTERN_KIND in (OpPatternKind.OUT_ELEMWISE_FUSABLE, OpPatternKind.OPAQUE) for u in users):
            return None
        copies = max(group.copies.get(u, 1) * (len(u.operands) if isinstance(u, ConcatOp) else 1) for u in users)
        copied_work = copies - 1 if _computes(op) else 0
        if group.copied_work + copied_work > self.max_copied_work:
            return None
        once = len(list(op.results[0].uses)) == 1 and all(
            u in group.single_read and _reads_each_element_once(u, op.results[0]) for u in users
        )
        depths = _row_depths(op, group, users)
        per_element = bool(depths) or _computed_per_element(op, group, users)
        if not per_element and group.recomputed >= max(self.max_recomputed_ops, len(group.per_element)):
            return None
        if not depths and kind in _ANCHORS:
            if group.anchor is not None or not once:
                return None
            # as in TVM, conv/dense/matmul take elementwise epilogues only: after an
            # injective op (transpose, reshape) the kernel's loops would be that op's,
            # not the product's, and the product's schedule could not apply
            if kind == OpPatternKind.OUT_ELEMWISE_FUSABLE and any(
                m.PATTERN_KIND not in (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST) for m in group.members
            ):
                return None
        elif not depths and kind not in _CHEAP:
            return None
        return _Admission(group, copies, copied_work, once or bool(depths), depths, per_element)

    def _admit(self, op: GraphOp, admission: _Admission) -> None:
        group = admission.group
        if admission.row_depths:
            if op.PATTERN_KIND == OpPatternKind.COMM_REDUCE:
                depths = admission.row_depths
                group.row_depths = depths if group.row_depths is None else group.row_depths & depths
            group.row_members.add(op)  # computed once per row: each element once
        elif op.PATTERN_KIND in _ANCHORS:
            group.anchor = op
        group.members.append(op)
        group.copies[op] = admission.copies
        group.copied_work += admission.copied_work
        if admission.per_element:
            group.per_element.add(op)
        else:
            group.recomputed += 1
        if admission.once:
            group.single_read.add(op)
        self.group_of[op] = group

    def join_copies(self, op: GraphOp) -> bool:
        """A view read by several groups and nothing else: a copy of it joins each of them
        (see the module docstring), or none does. True when the copies replaced it."""
        if not isinstance(op, _VIEWS):
            return False
        users = _users(op)
        readers: dict[int, list[Operation]] = {}
        for user in users:
            if user in self.group_of:
                readers.setdefault(id(self.group_of[user]), []).append(user)
        if len(readers) < 2 or sum(map(len, readers.values())) != len(users):
            return False
        copies = []
        for group_users in readers.values():
            copy = op.clone()
            op.parent_block().insert_op_before(copy, op)
            op.results[0].replace_uses_with_if(copy.results[0], lambda use: use.operation in group_users)
            copies.append(copy)
        admissions = [self._admission(copy) for copy in copies]
        if None in admissions:
            for copy in copies:
                copy.results[0].replace_all_uses_with(op.results[0])
                copy.parent_block().erase_op(copy)
            return False
        for copy, admission in zip(copies, admissions):
            self.order[copy] = self.order[op]
            self._admit(copy, admission)
        op.parent_block().erase_op(op)
        return True

    def groups(self) -> list[_Group]:
        found: list[_Group] = []
        for op in reversed(self.ops):
            if not isinstance(op, GraphOp) or isinstance(op, ConstantOp):
                continue
            if op.PATTERN_KIND != OpPatternKind.OPAQUE and (self.try_join(op) or self.join_copies(op)):
                continue
            group = _Group(root=op, members=[op], single_read={op}, per_element={op}, copies={op: 1})
            if op.PATTERN_KIND in _ANCHORS:
                group.anchor = op
            self.group_of[op] = group
            found.append(group)
        return [g for g in found if len(g.members) > 1]


def _external_inputs(members: Iterable[Operation]) -> list[SSAValue]:
    inside = set(members)
    inputs: list[SSAValue] = []
    for op in members:
        for v in op.operands:
            if v.owner not in inside and v not in inputs:
                inputs.append(v)
    return inputs


def _group_name(members: list[Operation]) -> str:
    return "_".join(op.name.removeprefix("graph.") for op in members)


def _materialize(group: _Group, order: dict[Operation, int]) -> None:
    """Move the group's ops into a graph.fused op standing where the root stood
    (``order``: each op's position in the block, for the members' order)."""
    members = sorted(group.members, key=order.__getitem__)
    external = _external_inputs(members)
    # single-element constants go inside the group: the lowering turns them into literals
    scalars = [v for v in external if isinstance(v.owner, ConstantOp) and v.owner.array().size == 1]
    inputs = [v for v in external if v not in scalars]
    body = fused_body([v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    for value in scalars:
        body.add_op(constant := value.owner.clone())
        mapping[value] = constant.result
    for op in members:
        clone = op.clone(value_mapper=mapping)
        body.add_op(clone)
    body.add_op(YieldOp(mapping[group.root.results[0]]))
    fused = FusedOp(_group_name(members), inputs, group.root.results[0].type, Region(body))
    block = group.root.parent_block()
    block.insert_op_before(fused, group.root)
    group.root.results[0].replace_all_uses_with(fused.result)
    for op in reversed(members):
        op.detach()
        op.erase()


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Group ops into graph.fused regions by pattern kind (see module docstring)."""

    name = "fuse-ops"

    #: the most ops in one group (like TVM's max_fuse_depth): bounds kernel size
    max_group_size: int = 1024
    #: the recomputed ops a group takes however few its other ops (see the module
    #: docstring): bounds the work a kernel repeats
    max_recomputed_ops: int = 64
    #: the most ops a group computes again for its concatenations, each counted as
    #: many times as it is computed again (see the module docstring)
    max_copied_work: int = 16

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            block = function.body.block
            fuser = _Fuser(list(block.ops), self.max_group_size, self.max_recomputed_ops, self.max_copied_work)
            for group in fuser.groups():
                _materialize(group, fuser.order)

"""Buffer primitives: cache_write (register tiles), cache_read (packing), and
compute_at / compute_inline of the copy stages cache_read makes.

**cache_write(kernel, at_loop)** turns the per-element accumulators of the output
loops nested in ``at_loop`` (the one loop nest in its body that writes the kernel's
output; cache_read copies beside it stay) into one local tile. For a matmul tiled as
``i0.outer, i1.outer, i0.inner, i1.inner`` with the default reduction::

    for i0.inner, i1.inner { acc = alloc; acc[] = 0; for k0 { acc[] += A*B }; C[i,j] = acc[] }

``cache_write(kernel, "i1.outer")`` gives::

    tile = loop.alloc() {scope = "local"} : memref<4x16xf32>
    for i0.inner.init, i1.inner.init { tile[ii, jj] = 0 }
    for k0 { for i0.inner, i1.inner { tile[ii, jj] += A*B } }
    for i0.inner.write, i1.inner.write { C[i, j] = tile[ii, jj] }

The element's code is cut into parts at each top-level loop (the reductions); each
part gets its own copy of the output loops (``.init`` before the first reduction,
``.write`` after the last, ``.s<k>`` for parts between, the first reduction keeps
the names), with the reduction loops outside the copies. Values a part needs from
another (index arithmetic, loads of inputs, the final loads of accumulators) are
recomputed. Without an accumulator (an elementwise kernel) the element is stored to
the tile and a ``.write`` nest copies the tile out. The tiled loops need trip counts
bounded at compile time (constants, or split inner loops): they size the tile.

**cache_read(kernel, buffer, at_loop)** copies the box of kernel argument ``buffer``
that the loops inside ``at_loop`` read into a local buffer at the top of
``at_loop``'s body (copy loops ``arg<n>.local.c<d>``), and the reads read the copy.
The box comes from interval arithmetic on the read indices (sums, differences and
constant multiples of loop variables, min/max clamps, division and remainder by
constants), clamped to the buffer so the copy never reads out of bounds; its static
size comes from compile-time trip bounds of the loops inside ``at_loop``.
With ``pad=True`` the reads must be bounds-checked window taps (a padded convolution's
or pooling's input, ``padding.py``): the box is the *padded* window, the copy stores
the fill value everywhere first and the part inside the input over it, and the taps
read the copy without their checks (TVM's ``data_pad`` stage computed at a loop).

**compute_at(kernel, stage, at_loop)** moves the copy stage ``arg<n>.local`` made by
cache_read to ``at_loop`` (the copy is rebuilt there, for what that loop reads);
**compute_inline(kernel, stage)** removes it (the reads go back to the buffer). They
apply to cache_read stages only: the other producers of a kernel are separate
kernels, and inlining elementwise producers into their consumers is done before,
at the te level (fuse-ops).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue

from ..dialects import loop
from ..dialects.walk import walk_ops
from .nest import (
    Dependence,
    IndexBuilder,
    ScheduleError,
    all_loops,
    band,
    body_ops,
    check_new_names,
    defined_inside,
    describe_buffer,
    erase_dead_code,
    find_loop,
    is_movable,
    new_loop,
    operand_closure,
    static_trip_bound,
    static_value,
    transformation,
    written_buffers,
)
from .padding import PaddedRead, emit_padded_read, erase_padded_read, match_padded_read

#: the largest local buffer (tile or packed copy) a primitive makes, in bytes: local
#: buffers live on the stack (worker threads have small stacks)
LOCAL_BUFFER_LIMIT = 1 << 20


def _element_bytes(t: MemRefType) -> int:
    element = t.element_type
    bits = getattr(element, "bitwidth", None) or getattr(getattr(element, "width", None), "data", 32)
    return max(1, bits // 8)


def _check_size(primitive: str, t: MemRefType, where: str) -> None:
    count = 1
    for d in t.get_shape():
        count *= d
    size = count * _element_bytes(t)
    if size > LOCAL_BUFFER_LIMIT:
        raise ScheduleError(
            primitive,
            f"the local buffer {t} for {where} takes {size} bytes (limit {LOCAL_BUFFER_LIMIT}); split with smaller factors",
        )


def _erase_subtree(root: Operation) -> None:
    """Detach and erase ``root``; nothing outside may still use a value defined in it."""
    for op in walk_ops(root):
        for result in op.results:
            for use in result.uses:
                if not root.is_ancestor(use.operation):
                    raise ValueError(f"{op.name} in the removed nest is still used by {use.operation.name}")
        for block in (b for r in op.regions for b in r.blocks):
            for arg in block.args:
                for use in arg.uses:
                    if not root.is_ancestor(use.operation):
                        raise ValueError(
                            f"an induction variable of the removed nest is still used by {use.operation.name}"
                        )
    root.detach()
    root.erase(safe_erase=False)


# ---------------------------------------------------------------------------
# recomputing values in a restructured nest


class _Remat:
    """Makes the values of the old nest ``root`` available at new places: mapped
    values (new induction variables, values already recomputed here) are reused,
    movable ops are cloned with their operands recomputed, loads of tiled buffers
    read the tile at ``tile_index``."""

    def __init__(
        self,
        primitive: str,
        root: Operation,
        movable: Callable[[Operation], bool],
        mapping: dict[SSAValue, SSAValue] | None = None,
        tiles: dict[SSAValue, SSAValue] | None = None,
        context: str = "",
    ):
        self.primitive = primitive
        self.root = root
        self.movable = movable
        self.mapping = dict(mapping or {})
        self.tiles = tiles or {}
        self.tile_index: list[SSAValue] | None = None
        self.context = context

    def get(self, value: SSAValue, ip: InsertPoint) -> SSAValue:
        if value in self.mapping:
            return self.mapping[value]
        if not defined_inside(value, self.root):
            return value
        owner = value.owner
        if isinstance(owner, Block) or not self.movable(owner):
            what = "an induction variable" if isinstance(owner, Block) else f"the result of {owner.name}"
            raise ScheduleError(self.primitive, f"{self.context} needs {what} that cannot be recomputed there")
        if isinstance(owner, loop.LoadOp) and owner.buffer in self.tiles:
            if self.tile_index is None:
                raise ScheduleError(self.primitive, f"{self.context} reads an accumulator outside the tile loops")
            indices = [self.get(v, ip) for v in owner.indices]
            new = loop.LoadOp(self.tiles[owner.buffer], [*self.tile_index, *indices])
        else:
            operands = [self.get(v, ip) for v in owner.operands]
            new = owner.clone()
            for k, v in enumerate(operands):
                new.operands[k] = v
        Builder(ip).insert(new)
        for old, result in zip(owner.results, new.results):
            self.mapping[old] = result
        return self.mapping[value]

    def remap(self, ops: Sequence[Operation], ip: InsertPoint, available: Sequence[Operation], nested: bool = True):
        """Point the operands of ``ops`` (and of the ops inside them) at values valid
        here; values defined in ``available`` stay as they are."""
        for top in ops:
            for op in top.walk() if nested else [top]:
                for k, v in enumerate(op.operands):
                    if v in self.tiles:
                        continue  # (retarget_tiles)
                    if v in self.mapping:
                        op.operands[k] = self.mapping[v]
                    elif defined_inside(v, self.root) and not any(defined_inside(v, a) for a in available):
                        op.operands[k] = self.get(v, ip)

    def retarget_tiles(self, ops: Sequence[Operation]) -> None:
        """Accesses of the tiled accumulators inside ``ops`` access the tile."""
        for top in ops:
            for op in walk_ops(top):
                if isinstance(op, loop.LoadOp) and op.buffer in self.tiles:
                    new = loop.LoadOp(self.tiles[op.buffer], [*self.tile_index, *op.indices])
                    op.parent_block().insert_op_before(new, op)
                    op.result.replace_all_uses_with(new.result)
                    op.detach()
                    op.erase()
                elif isinstance(op, loop.StoreOp) and op.buffer in self.tiles:
                    new = loop.StoreOp(op.value, self.tiles[op.buffer], [*self.tile_index, *op.indices])
                    op.parent_block().insert_op_before(new, op)
                    op.detach()
                    op.erase()


def _copy_nest(
    kernel: func.FuncOp, chain: Sequence[loop.ForOp], suffix: str, remat: _Remat, ip: InsertPoint
) -> loop.ForOp:
    """A copy of the loops ``chain`` (names + ``suffix``) at ``ip``, bounds recomputed;
    maps the old induction variables to the new ones and sets ``remat.tile_index``.
    Returns the innermost new loop."""
    copies = []
    for old in chain:
        lb, ub, step = (remat.get(v, ip) for v in (old.lb, old.ub, old.step))
        new = new_loop(old, lb, ub, step, old.loop_name.data + suffix)
        Builder(ip).insert(new)
        remat.mapping[old.induction_var] = new.induction_var
        copies.append(new)
        ip = InsertPoint.before(new.body.block.last_op)
    index = IndexBuilder(kernel, ip)
    remat.tile_index = [index.position(c, c.induction_var) for c in copies]
    return copies[-1]


# ---------------------------------------------------------------------------
# cache_write


@transformation("cache_write")
def cache_write(kernel: func.FuncOp, at_loop: str) -> None:
    """Accumulate the output elements of the loops nested in ``at_loop`` in a local
    tile, written back once (see the module docstring)."""
    P = "cache_write"
    at = find_loop(kernel, at_loop, P)
    nests = [
        op
        for op in body_ops(at)
        if isinstance(op, loop.ForOp) and any(not defined_inside(b, at) for b in written_buffers(op))
    ]
    if len(nests) != 1:
        raise ScheduleError(
            P, f"the body of loop '{at_loop}' must hold one nest of output loops (it holds {len(nests)})"
        )
    root = nests[0]
    written = written_buffers(root)
    chain, _ = band(root, written)
    names = [f.loop_name.data for f in chain]
    for for_op in chain:
        if for_op.kind.data not in ("serial", "vectorized", "unrolled"):
            raise ScheduleError(
                P, f"loop '{for_op.loop_name.data}' is {for_op.kind.data}; a tile loop must run on one thread"
            )
    trips = []
    for for_op in chain:
        trip = static_trip_bound(for_op)
        if trip is None:
            raise ScheduleError(
                P, f"loop '{for_op.loop_name.data}' has no trip count bounded at compile time (split it first)"
            )
        trips.append(max(trip, 1))

    cell_ops = body_ops(chain[-1])
    accumulators = [op for op in cell_ops if isinstance(op, loop.AllocOp) and op.scope.data == "local"]
    acc_values = {a.result for a in accumulators}
    for a in accumulators:
        for use in a.result.uses:
            user = use.operation
            if not (isinstance(user, loop.LoadOp | loop.StoreOp) and user.buffer == a.result):
                raise ScheduleError(P, f"an accumulator of loop '{names[-1]}' is used by {user.name}")

    position = {op: k for k, op in enumerate(cell_ops)}
    last_store = {}
    for k, op in enumerate(cell_ops):
        for inner in walk_ops(op):
            if isinstance(inner, loop.StoreOp) and inner.buffer in acc_values:
                last_store[inner.buffer] = k

    def movable(op: Operation) -> bool:
        if isinstance(op, loop.LoadOp) and op.buffer in acc_values:
            return position.get(op, -1) > last_store.get(op.buffer, len(cell_ops))
        return is_movable(op, written)

    parts: list[list[Operation]] = []
    for op in cell_ops:
        if op in accumulators or movable(op):
            continue
        if isinstance(op, loop.ForOp) or not parts or isinstance(parts[-1][0], loop.ForOp):
            parts.append([op])
        else:
            parts[-1].append(op)

    if not accumulators:
        stores = [op for op in cell_ops if isinstance(op, loop.StoreOp)]
        if len(parts) != 1 or parts[0] != stores or len(stores) != 1 or defined_inside(stores[0].buffer, root):
            listed = ", ".join(sorted({op.name for part in parts for op in part}))
            raise ScheduleError(
                P, f"the element code of loop '{names[-1]}' has no accumulator and is not one store (it has {listed})"
            )
        _cache_output(kernel, at_loop, root, chain, trips, stores[0], written)
        return

    reductions = [k for k, part in enumerate(parts) if isinstance(part[0], loop.ForOp)]
    main = reductions[0] if reductions else 0

    def suffix(k: int) -> str:
        if k == main:
            return ""
        if k < main:
            return ".init"
        return ".write" if k == len(parts) - 1 and not isinstance(parts[k][0], loop.ForOp) else f".s{k}"

    check_new_names(kernel, [n + suffix(k) for k in range(len(parts)) for n in names], P, replaced=names)

    tiles: dict[SSAValue, SSAValue] = {}
    where = InsertPoint.before(root)
    for a in accumulators:
        t = a.result.type
        tile_type = MemRefType(t.element_type, [*trips, *t.get_shape()])
        _check_size(P, tile_type, f"the tile of loop '{at_loop}'")
        tile = loop.AllocOp(tile_type, scope="local")
        Builder(where).insert(tile)
        tiles[a.result] = tile.result

    output_ivs = Dependence([f.induction_var for f in chain])
    for k, part in enumerate(parts):
        context = f"part {k} of the element code of loop '{names[-1]}'"
        if isinstance(part[0], loop.ForOp):
            _tile_reduction(
                kernel, part[0], chain, suffix(k), root, movable, tiles, output_ivs, written, where, context
            )
        else:
            remat = _Remat(P, root, movable, tiles=tiles, context=context)
            innermost = _copy_nest(kernel, chain, suffix(k), remat, where)
            block = innermost.body.block
            for op in part:
                op.detach()
                block.insert_op_before(op, block.last_op)
            remat.remap(part, InsertPoint.before(part[0]), part)
            remat.retarget_tiles(part)
    _erase_subtree(root)


def _tile_reduction(
    kernel: func.FuncOp,
    reduction: loop.ForOp,
    chain: Sequence[loop.ForOp],
    suffix: str,
    root: loop.ForOp,
    movable: Callable[[Operation], bool],
    tiles: dict[SSAValue, SSAValue],
    output_ivs: Dependence,
    written: set[SSAValue],
    where: InsertPoint,
    context: str,
) -> None:
    """Move the reduction nest out of the output loops, and a copy of the output loops
    into its innermost body."""
    P = "cache_write"
    rchain, rbetween = band(reduction, written)
    bounds = [v for f in rchain for v in (f.lb, f.ub, f.step)]
    for f in rchain:
        for v in (f.lb, f.ub, f.step):
            if output_ivs(v):
                raise ScheduleError(
                    P,
                    f"the bounds of reduction loop '{f.loop_name.data}' depend on the output loops (not a rectangular nest)",
                )
    bound_ops = operand_closure(bounds, rbetween)
    innermost = rchain[-1]
    anchor = innermost.body.block.first_op
    for op in rbetween:
        if op not in bound_ops:
            op.detach()
            innermost.body.block.insert_op_before(op, anchor)
    reduction.detach()
    Builder(where).insert(reduction)
    outside = _Remat(
        P, root, movable, tiles=tiles, context=f"the bounds of reduction loop '{reduction.loop_name.data}'"
    )
    outside.remap(
        [*rchain, *[op for op in rbetween if op in bound_ops]], InsertPoint.before(reduction), [reduction], nested=False
    )

    body = body_ops(innermost)
    for op in body:
        op.detach()
    remat = _Remat(P, root, movable, outside.mapping, tiles, context)
    copy = _copy_nest(kernel, chain, suffix, remat, InsertPoint.before(innermost.body.block.last_op))
    block = copy.body.block
    for op in body:
        block.insert_op_before(op, block.last_op)
    if body:
        remat.remap(body, InsertPoint.before(body[0]), [reduction])
        remat.retarget_tiles(body)


def _cache_output(
    kernel: func.FuncOp,
    at_loop: str,
    root: loop.ForOp,
    chain: Sequence[loop.ForOp],
    trips: Sequence[int],
    store: loop.StoreOp,
    written: set[SSAValue],
) -> None:
    """No accumulator: compute into a tile, then copy the tile to the output."""
    P = "cache_write"
    names = [f.loop_name.data for f in chain]
    check_new_names(kernel, [n + ".write" for n in names], P, replaced=names)
    tile_type = MemRefType(store.value.type, list(trips))
    _check_size(P, tile_type, f"the tile of loop '{at_loop}'")
    where = InsertPoint.before(root)
    tile = loop.AllocOp(tile_type, scope="local")
    Builder(where).insert(tile)

    def movable(op: Operation) -> bool:
        return is_movable(op, written)

    compute = _Remat(P, root, movable, context=f"the element code of loop '{names[-1]}'")
    innermost = _copy_nest(kernel, chain, "", compute, where)
    value = compute.get(store.value, InsertPoint.before(innermost.body.block.last_op))
    Builder(InsertPoint.before(innermost.body.block.last_op)).insert(
        loop.StoreOp(value, tile.result, compute.tile_index)
    )
    write = _Remat(P, root, movable, context=f"the write-back of loop '{names[-1]}'")
    innermost = _copy_nest(kernel, chain, ".write", write, where)
    ip = InsertPoint.before(innermost.body.block.last_op)
    element = Builder(ip).insert(loop.LoadOp(tile.result, write.tile_index)).result
    indices = [write.get(i, ip) for i in store.indices]
    Builder(ip).insert(loop.StoreOp(element, store.buffer, indices))
    _erase_subtree(root)


# ---------------------------------------------------------------------------
# cache_read: interval arithmetic on index expressions


class _Affine:
    """``const + sum(coeff * atom)``; an atom is an SSA value (invariant in the nest)
    or a tuple for a non-affine function of affine forms (min, max, division)."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: dict | None = None):
        self.const = const
        self.terms = {a: c for a, c in (terms or {}).items() if c}

    @staticmethod
    def atom(a) -> _Affine:
        return _Affine(0, {a: 1})

    def key(self):
        return (self.const, frozenset(self.terms.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Affine) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __add__(self, other: _Affine) -> _Affine:
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + c
        return _Affine(self.const + other.const, terms)

    def scale(self, factor: int) -> _Affine:
        return _Affine(self.const * factor, {a: c * factor for a, c in self.terms.items()})

    def __sub__(self, other: _Affine) -> _Affine:
        return self + other.scale(-1)


_DIVISIONS = (arith.FloorDivSIOp, arith.DivSIOp, arith.DivUIOp)
_REMAINDERS = (arith.RemSIOp, arith.RemUIOp)


class _Intervals:
    """Bounds ``[lo, hi]`` (affine forms) and a static bound on ``hi - lo`` of index
    values over the iterations of the loops inside ``at``."""

    def __init__(self, primitive: str, at: loop.ForOp, what: str):
        self.primitive = primitive
        self.at = at
        self.what = what
        self.memo: dict[SSAValue, tuple[_Affine, _Affine, int]] = {}

    def fail(self, why: str):
        raise ScheduleError(
            self.primitive, f"cannot bound the reads of {self.what} inside loop '{self.at.loop_name.data}': {why}"
        )

    def __call__(self, value: SSAValue) -> tuple[_Affine, _Affine, int]:
        if value not in self.memo:
            self.memo[value] = self.compute(value)
        return self.memo[value]

    def compute(self, value: SSAValue) -> tuple[_Affine, _Affine, int]:
        c = static_value(value)
        if c is not None:
            point = _Affine(c)
            return point, point, 0
        if value is self.at.induction_var or not defined_inside(value, self.at):
            point = _Affine.atom(value)
            return point, point, 0
        owner = value.owner
        if isinstance(owner, Block):
            for_op = owner.parent_op()
            trips, step = static_trip_bound(for_op), static_value(for_op.step)
            if trips is None:
                self.fail(f"loop '{for_op.loop_name.data}' has no trip count bounded at compile time (split it first)")
            lo, hi, width = self(for_op.lb)
            span = max(trips - 1, 0) * step
            return lo, hi + _Affine(span), width + span
        operands = list(owner.operands)
        if isinstance(owner, arith.AddiOp | arith.SubiOp):
            (alo, ahi, aw), (blo, bhi, bw) = self(operands[0]), self(operands[1])
            if isinstance(owner, arith.AddiOp):
                return alo + blo, ahi + bhi, aw + bw
            return alo - bhi, ahi - blo, aw + bw
        if isinstance(owner, arith.MuliOp):
            factors = [static_value(v) for v in operands]
            if factors[0] is None and factors[1] is None:
                self.fail("a product of two loop-dependent values")
            factor, other = (factors[1], operands[0]) if factors[1] is not None else (factors[0], operands[1])
            lo, hi, width = self(other)
            if factor >= 0:
                return lo.scale(factor), hi.scale(factor), width * factor
            return hi.scale(factor), lo.scale(factor), -width * factor
        if isinstance(owner, arith.MaxSIOp | arith.MinSIOp):
            (alo, ahi, aw), (blo, bhi, bw) = self(operands[0]), self(operands[1])
            kind = "maxsi" if isinstance(owner, arith.MaxSIOp) else "minsi"
            lo = _Affine.atom((kind, alo, blo))
            hi = lo if (alo, blo) == (ahi, bhi) else _Affine.atom((kind, ahi, bhi))
            return lo, hi, max(aw, bw)
        if isinstance(owner, _DIVISIONS + _REMAINDERS):
            divisor = static_value(operands[1])
            if divisor is None or divisor <= 0:
                self.fail(f"{owner.name} by a value that is not a positive constant")
            alo, ahi, aw = self(operands[0])
            if isinstance(owner, _REMAINDERS):
                if alo == ahi:  # one value per iteration of `at` (a fused loop's index): so is its remainder
                    point = _Affine.atom(("div", type(owner), alo, divisor))
                    return point, point, 0
                return _Affine(0), _Affine(divisor - 1), divisor - 1
            lo = _Affine.atom(("div", type(owner), alo, divisor))
            if alo == ahi:
                return lo, lo, 0
            return lo, _Affine.atom(("div", type(owner), ahi, divisor)), aw // divisor + 1
        self.fail(f"an index computed by {owner.name}")


class _AffineEmitter:
    """Builds the SSA value of affine forms at one insertion point."""

    def __init__(self, index: IndexBuilder):
        self.index = index
        self.memo: dict = {}

    def form(self, a: _Affine) -> SSAValue:
        ib = self.index
        total = None
        for atom, coeff in a.terms.items():
            term = ib.mul(self.atom(atom), ib.const(coeff))
            total = term if total is None else ib.add(total, term)
        constant = ib.const(a.const)
        return constant if total is None else ib.add(total, constant)

    def atom(self, atom) -> SSAValue:
        if isinstance(atom, SSAValue):
            return atom
        if atom not in self.memo:
            ib = self.index
            if atom[0] == "maxsi":
                value = ib.max(self.form(atom[1]), self.form(atom[2]))
            elif atom[0] == "minsi":
                value = ib.min(self.form(atom[1]), self.form(atom[2]))
            else:
                _, cls, inner, divisor = atom
                value = ib.insert(cls(self.form(inner), ib.const(divisor)))
            self.memo[atom] = value
        return self.memo[atom]


def _nonnegative(form: _Affine) -> bool:
    """Whether an affine form is >= 0 for sure (sizes, loop variables from >= 0, ...)."""

    def atom_ok(atom) -> bool:
        if isinstance(atom, SSAValue):
            owner = atom.owner
            if isinstance(owner, Block):
                for_op = owner.parent_op()
                lb = static_value(for_op.lb) if isinstance(for_op, loop.ForOp) else None
                return lb is not None and lb >= 0
            return isinstance(owner, loop.DimOp)
        if atom[0] == "maxsi":
            return _nonnegative(atom[1]) or _nonnegative(atom[2])
        if atom[0] == "minsi":
            return _nonnegative(atom[1]) and _nonnegative(atom[2])
        return _nonnegative(atom[2])

    return form.const >= 0 and all(c > 0 and atom_ok(a) for a, c in form.terms.items())


def _stage_name(buffer: int) -> str:
    return f"arg{buffer}.local"


def _stage_buffer(primitive: str, kernel: func.FuncOp, stage: object) -> tuple[loop.AllocOp, int]:
    stages = {loop.stage_of(op): op for op in kernel.walk() if isinstance(op, loop.AllocOp) and loop.stage_of(op) is not None}
    if stage not in stages:
        listed = ", ".join(sorted(stages)) or "none"
        raise ScheduleError(
            primitive, f"no cache_read stage named {stage!r} in kernel '{kernel.sym_name.data}' (stages: {listed})"
        )
    return stages[stage], int(stage[len("arg") : -len(".local")])


@transformation("cache_read")
def cache_read(kernel: func.FuncOp, buffer: int, at_loop: str, pad: bool = False) -> str:
    """Copy what the loops inside ``at_loop`` read of kernel argument number
    ``buffer`` into a local buffer at the top of ``at_loop``'s body, and read the copy;
    returns the stage name ``arg<buffer>.local`` (see the module docstring).
    ``pad``: the reads are bounds-checked window taps (``padding.py``); copy their
    padded box, the fill value outside the buffer, and read it without the checks."""
    P = "cache_read"
    args = list(kernel.body.block.args)
    if isinstance(buffer, bool) or not isinstance(buffer, int) or not 0 <= buffer < len(args):
        raise ScheduleError(
            P,
            f"buffer must be an argument number of kernel '{kernel.sym_name.data}' (0..{len(args) - 1}), got {buffer!r}",
        )
    source = args[buffer]
    if not isinstance(source.type, MemRefType):
        raise ScheduleError(P, f"argument {buffer} is not a buffer ({source.type})")
    if not isinstance(pad, bool):
        raise ScheduleError(P, f"pad must be true or false, got {pad!r}")
    at = find_loop(kernel, at_loop, P)
    if any(isinstance(op, loop.StoreOp) and op.buffer == source for op in kernel.walk()):
        raise ScheduleError(P, f"{describe_buffer(kernel, source)} is written by the kernel; only inputs can be cached")
    if source in written_buffers(kernel):
        raise ScheduleError(
            P,
            f"{describe_buffer(kernel, source)} is passed to a micro-kernel call; cache_read must come before tensorize",
        )
    stage = _stage_name(buffer)
    if any(isinstance(op, loop.AllocOp) and loop.stage_of(op) == stage for op in kernel.walk()):
        raise ScheduleError(
            P, f"{describe_buffer(kernel, source)} is already cached (stage '{stage}'); use compute_at to move it"
        )
    reads = [op for op in at.walk() if isinstance(op, loop.LoadOp) and op.buffer == source]
    if not reads:
        raise ScheduleError(P, f"the loops inside '{at_loop}' do not read {describe_buffer(kernel, source)}")
    rank = len(source.type.get_shape())
    copy_names = [f"{stage}.c{d}" for d in range(rank)]
    check_new_names(kernel, copy_names + [f"{n}.fill" for n in copy_names], P)
    padded_reads, pad_dims, fill = [], (), None
    if pad:
        padded_reads, pad_dims, fill = _padded_reads(P, reads, describe_buffer(kernel, source), at_loop)
    read_indices = [p.indices for p in padded_reads] if pad else [tuple(read.indices) for read in reads]

    intervals = _Intervals(P, at, describe_buffer(kernel, source))
    bases: list[_Affine] = []
    widths: list[int] = []
    for d in range(rank):
        ranges = [intervals(indices[d]) for indices in read_indices]
        base = min((lo for lo, _, _ in ranges), key=lambda a: a.const)
        if any(lo.terms != base.terms for lo, _, _ in ranges):
            intervals.fail(f"the reads along dim {d} do not lie at constant offsets from each other")
        bases.append(base)
        widths.append(max(lo.const - base.const + w for lo, _, w in ranges))
    local_type = MemRefType(source.type.element_type, [w + 1 for w in widths])
    _check_size(P, local_type, f"the reads of {describe_buffer(kernel, source)} in loop '{at_loop}'")

    first = at.body.block.first_op
    ip = InsertPoint.before(first)
    ib = IndexBuilder(kernel, ip)
    emit = _AffineEmitter(ib)
    # the copy reads the box clamped to the buffer; reads of the local buffer are
    # relative to the box's start (the unclamped start on padded dims)
    lows, extents, box_lows = [], [], []
    shape = source.type.get_shape()
    for d in range(rank):
        lo = emit.form(bases[d])
        last = ib.const(shape[d] - 1) if shape[d] >= 0 else ib.sub(ib.insert(loop.DimOp(source, d)), ib.const(1))
        lo_clamped = lo if _nonnegative(bases[d]) else ib.max(lo, ib.const(0))
        hi_clamped = ib.min(ib.add(lo, ib.const(widths[d])), last)
        lows.append(lo_clamped)
        extents.append(ib.add(ib.sub(hi_clamped, lo_clamped), ib.const(1)))
        box_lows.append(lo if d in pad_dims else lo_clamped)
    local = loop.AllocOp(local_type, scope="local")
    loop.set_stage(local, stage)
    Builder(ip).insert(local)
    if pad:
        loop.set_padding(local, pad_dims, fill.owner.value)
        # the fill value everywhere first (the part inside the buffer is copied over it)
        fill_ip, counters = _nest(ib, ip, [ib.const(w + 1) for w in widths], [f"{n}.fill" for n in copy_names])
        Builder(fill_ip).insert(loop.StoreOp(fill, local.result, counters))

    copy_ip, counters = _nest(ib, ip, extents, copy_names)
    inner = IndexBuilder(kernel, copy_ip)
    element = inner.insert(loop.LoadOp(source, [inner.add(lo, c) for lo, c in zip(lows, counters)]))
    at_local = [c if box is lo else inner.add(c, inner.sub(lo, box)) for c, lo, box in zip(counters, lows, box_lows)]
    inner.builder.insert(loop.StoreOp(element, local.result, at_local))

    for k, read in enumerate(reads):
        builder = Builder(InsertPoint.before(padded_reads[k].select if pad else read))
        indices = [builder.insert(arith.SubiOp(i, lo)).result for i, lo in zip(read_indices[k], box_lows)]
        new = builder.insert(loop.LoadOp(local.result, indices))
        if pad:
            erase_padded_read(padded_reads[k], new.result)
            continue
        read.result.replace_all_uses_with(new.result)
        read.detach()
        read.erase()
    return stage


def _nest(ib: IndexBuilder, ip: InsertPoint, extents: Sequence[SSAValue], names: Sequence[str]):
    """Loops ``0 <= c_d < extents[d]`` (named ``names``) inserted at ``ip``; returns
    the insertion point inside the innermost and the counters."""
    counters = []
    for extent, name in zip(extents, names):
        body = Block(arg_types=[ib.const(0).type])
        body.add_op(loop.YieldOp())
        Builder(ip).insert(loop.ForOp(ib.const(0), extent, ib.const(1), body, name=name))
        counters.append(body.args[0])
        ip = InsertPoint.before(body.last_op)
    return ip, counters


def _padded_reads(
    primitive: str, reads: Sequence[loop.LoadOp], what: str, at_loop: str
) -> tuple[list[PaddedRead], tuple[int, ...], SSAValue]:
    """Each read in its padded form, the dims padded in any, and their one fill value."""
    matched = [match_padded_read(read) for read in reads]
    if any(m is None for m in matched):
        raise ScheduleError(
            primitive,
            f"pad=True: a read of {what} inside loop '{at_loop}' is not a bounds-checked window tap "
            "(select(in bounds, load(clamped indices), fill)); cache it without pad",
        )
    fills = {m.fill for m in matched}
    if len(fills) != 1:
        raise ScheduleError(primitive, f"pad=True: the reads of {what} inside loop '{at_loop}' fill with different values")
    dims = tuple(sorted({d for m in matched for d in m.padded}))
    return matched, dims, fills.pop()


@transformation("compute_inline")
def compute_inline(kernel: func.FuncOp, stage: str) -> None:
    """Remove the cache_read stage ``stage``: its copy goes, the reads read the buffer."""
    P = "compute_inline"
    local, buffer = _stage_buffer(P, kernel, stage)
    source = kernel.body.block.args[buffer]
    padding = loop.padding_of(local)
    padded, fill = None, None
    if padding is not None:
        padded = tuple(padding[0])
        fill_op = arith.ConstantOp(padding[1])
        kernel.body.block.insert_op_before(fill_op, kernel.body.block.first_op)
        fill = fill_op.result
    copies = [f for f in all_loops(kernel) if f.loop_name.data.startswith(f"{stage}.c")]
    outermost = [f for f in copies if not any(o is not f and o.is_ancestor(f) for o in copies)]
    for use in list(local.result.uses):
        user = use.operation
        if any(c.is_ancestor(user) for c in copies):
            continue
        if isinstance(user, loop.StoreOp):  # the copy of a rank-0 buffer (no loops)
            continue
        if not isinstance(user, loop.LoadOp):
            raise ScheduleError(P, f"stage '{stage}' is used by {user.name}; it cannot be removed")
        originals = []
        for index in user.indices:
            if not isinstance(index.owner, arith.SubiOp):
                raise ScheduleError(P, f"a read of stage '{stage}' has lost the form cache_read gave it")
            originals.append(index.owner.lhs)
        if padded is not None:  # the bounds-checked read again
            value = emit_padded_read(IndexBuilder(kernel, InsertPoint.before(user)), source, originals, padded, fill)
        else:
            new = loop.LoadOp(source, originals)
            user.parent_block().insert_op_before(new, user)
            value = new.result
        user.result.replace_all_uses_with(value)
        user.detach()
        user.erase()
    for copy in outermost:
        _erase_subtree(copy)
    for use in list(local.result.uses):
        store = use.operation
        store.detach()
        store.erase()
    local.detach()
    local.erase()
    erase_dead_code(kernel)


@transformation("compute_at")
def compute_at(kernel: func.FuncOp, stage: str, at_loop: str) -> None:
    """Move the cache_read stage ``stage`` to the top of ``at_loop``'s body (rebuilt
    there for what the loops inside ``at_loop`` read); schedules applied to the old
    copy loops are dropped."""
    P = "compute_at"
    local, buffer = _stage_buffer(P, kernel, stage)
    find_loop(kernel, at_loop, P)
    padded = loop.padding_of(local) is not None
    compute_inline(kernel, stage)
    cache_read(kernel, buffer, at_loop, pad=padded)


__all__ = ["LOCAL_BUFFER_LIMIT", "cache_read", "cache_write", "compute_at", "compute_inline"]

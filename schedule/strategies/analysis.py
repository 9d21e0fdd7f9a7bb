"""What a strategy needs to know about a kernel before scheduling it.

te-to-loop records what each kernel computes (``tk.ops``, ``tk.anchor``,
``tk.epilogue``: ``dialects/loop.py``'s ``KernelAnchor``) and each loop's role
(``spatial`` output loops ``i0, i1, ...``, ``reduction`` loops ``k0, ...``, ``scan``,
``update`` and ``init`` loops). :func:`kernel_info` reads them into a
:class:`KernelInfo`: the ops, the anchor op (the one of highest fusion pattern kind:
``dense`` in ``dense_add_relu``, ``reduce_mean`` in ``mul_reduce_mean``), the structural
family (``injective`` / ``reduce`` / ``rows``), static extents, and which arguments are
constant weights at every call (those a strategy may re-layout at compile time). Loop
names only identify loops (the schedule primitives take them); no fact is read off one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import SSAValue

from ...dialects import loop
from ..nest import all_loops, band, body_ops, static_trip_bound, written_buffers

@dataclass
class KernelInfo:
    """Facts about one kernel (see the module docstring)."""

    kernel: func.FuncOp
    tag: str
    #: SIMD lanes of the kernel's element type on the target
    lanes: int
    #: the graph ops it computes (``tk.ops``), or None for a kernel not made of graph ops
    ops: list[str] | None
    anchor: str | None
    #: the output loops i0, i1, ... (role ``spatial``) and the loops of its first
    #: reduction k0, ... (role ``reduction``), outermost first
    output_loops: list[str]
    reduction_loops: list[str]
    #: loop name -> most iterations, if known at compile time
    extents: dict[str, int | None]
    #: structural family: "injective", "reduce", "rows" or "" (none of them)
    family: str
    #: kernel argument indices bound to a constant weight at every call
    constant_args: frozenset[int] = frozenset()
    #: op names and families the registry matches strategies against
    kinds: frozenset[str] = field(default_factory=frozenset)
    #: scan loops (a serial loop per output line: a scan's, a scatter's updates; roles
    #: ``scan`` and ``update``)
    scan_loops: list[str] = field(default_factory=list)
    #: the target's ISA extensions, as LLVM's ``+`` features (``"+avx512vnni"``,
    #: ``"+avx512bf16"``...): what a strategy needing an instruction checks
    features: frozenset[str] = frozenset()
    #: the ops after the anchor when they are an elementwise epilogue (the kernel's output
    #: loops are then the anchor's), else None
    epilogue: tuple[str, ...] | None = None
    #: loops writing elements before later loops update them (role ``init``: a scatter
    #: resetting its targets)
    init_loops: list[str] = field(default_factory=list)

    @property
    def vector_registers(self) -> int:
        """SIMD registers of the target (x86: 32 with AVX-512, whose f32 vectors have 16
        lanes; 16 with AVX/AVX2 or SSE): what bounds a register tile."""
        return 32 if self.lanes >= 16 else 16

    @property
    def work(self) -> int | None:
        """Iterations of the innermost body (output x reduction x scan), None if not static."""
        total = 1
        for name in self.output_loops + self.reduction_loops + self.scan_loops:
            extent = self.extents.get(name)
            if extent is None:
                return None
            total *= extent
        return total

    def loop(self, name: str) -> loop.ForOp:
        return next(f for f in all_loops(self.kernel) if f.loop_name.data == name)

    def with_output_loops(self, loops: list[str], extent: Callable[[str], int | None]) -> KernelInfo:
        """This info after a schedule fused output loops into ``loops``, with the new
        loops' trip counts (``extent``, e.g. ``Schedule.extent``), so that :attr:`work`
        stays known: unknown work counts as large, and 8x8-pixel convolutions of a small
        ResNet ran in parallel, slower at 2 threads than at 1."""
        extents = {**self.extents, **{name: extent(name) for name in loops if name not in self.extents}}
        return dataclasses.replace(self, output_loops=loops, extents=extents)


@dataclass(frozen=True)
class RowNest:
    """A kernel of row stages (te-to-loop, ``lowering/row_stages.py``): the row loops,
    then in the row's body the stages' reduction nests and the element nest."""

    #: the row loops i0 .. i{r-1}, outermost first
    rows: list[str]
    #: the outermost loop of each stage's reduction nest, in order
    stages: list[str]
    #: the element loops i{r} .., outermost first
    elements: list[str]


def output_loops(kernel: func.FuncOp) -> list[str]:
    """The names of the kernel's output loops (role ``spatial``), outermost first."""
    return [f.loop_name.data for f in loop.loops_with_role(kernel, "spatial")]


def first_reduction(kernel: func.FuncOp, loops: list[loop.ForOp] | None = None) -> list[str]:
    """The names of the loops of the kernel's first reduction (in program order): the
    perfect nest of ``reduction`` loops from the first one down (a later reduction, such
    as a second row stage's or one inlined inside it, is not part of it). ``loops``: the
    kernel's loops in program order, if at hand."""
    first = next((f for f in (loops if loops is not None else all_loops(kernel)) if f.loop_role == "reduction"), None)
    if first is None:
        return []
    nest = [first]
    while len(inner := body_ops(nest[-1])) == 1 and isinstance(inner[0], loop.ForOp) and inner[0].loop_role == "reduction":
        nest.append(inner[0])
    return [f.loop_name.data for f in nest]


def row_nest(kernel: func.FuncOp, outputs: list[str] | None = None) -> RowNest | None:
    """The :class:`RowNest` of ``kernel`` (output loops ``outputs``, default: its
    ``spatial`` loops), or None when it is not a kernel of row stages."""
    if outputs is None:
        outputs = output_loops(kernel)
    tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    if len(tops) != 1 or not outputs:
        return None
    chain, _ = band(tops[0], written_buffers(tops[0]))
    rows = [f.loop_name.data for f in chain]
    if not rows or rows != outputs[: len(rows)] or len(rows) == len(outputs):
        return None
    inner = [op for op in body_ops(chain[-1]) if isinstance(op, loop.ForOp)]
    if len(inner) < 2 or inner[-1].loop_name.data != outputs[len(rows)]:
        return None
    elements, _ = band(inner[-1], written_buffers(inner[-1]))
    if [f.loop_name.data for f in elements] != outputs[len(rows) :]:
        return None
    # a stage is a reduction nest, or the loop storing a stashed producer in the row (init)
    if not all(f.loop_role in ("reduction", "init") for f in inner[:-1]):
        return None
    stages = [f.loop_name.data for f in inner[:-1]]
    return RowNest(rows, stages, outputs[len(rows) :])


def _family(kernel: func.FuncOp, outputs: list[str], reductions: list[str]) -> str:
    """``injective``: one perfect nest of the output loops storing one element per
    innermost iteration; ``reduce``: that nest around a local accumulator and one band
    of reduction loops; ``rows``: row loops around stages and an element nest
    (:func:`row_nest`); else ``""``."""
    tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    if len(tops) != 1 or not outputs:
        return ""
    chain, _ = band(tops[0], written_buffers(tops[0]))
    if [f.loop_name.data for f in chain] != outputs:
        return "rows" if row_nest(kernel, outputs) else ""
    cell = body_ops(chain[-1])
    inner = [op for op in cell if isinstance(op, loop.ForOp)]
    stores = [op for op in cell if isinstance(op, loop.StoreOp)]
    args = set(kernel.body.block.args)
    if not inner:
        if not reductions and len(stores) == 1 and stores[0].buffer in args:
            return "injective"
        return ""
    if len(inner) != 1 or inner[0].loop_name.data != (reductions[0] if reductions else None):
        return ""
    rchain, _ = band(inner[0], written_buffers(inner[0]))
    if [f.loop_name.data for f in rchain] != reductions:
        return ""
    locals_ = [op for op in cell if isinstance(op, loop.AllocOp) and op.scope.data == "local"]
    return "reduce" if locals_ and any(s.buffer in args for s in stores) else ""


def kernel_info(
    kernel: func.FuncOp, lanes: int, constant_args: frozenset[int] = frozenset(), features: frozenset[str] = frozenset()
) -> KernelInfo:
    """The facts strategies check, for ``kernel`` on a target with ``lanes`` f32 lanes and
    the ISA extensions ``features`` (``{"+avx512vnni", ...}``)."""
    tag = loop.kernel_tag(kernel)
    what = loop.kernel_anchor(kernel)
    ops, anchor = (list(what.ops), what.op) if what is not None else (None, None)
    loops = all_loops(kernel)
    outputs = [f.loop_name.data for f in loops if f.loop_role == "spatial"]
    reductions = first_reduction(kernel, loops)
    extents = {f.loop_name.data: static_trip_bound(f) for f in loops}
    family = _family(kernel, outputs, reductions)
    kinds = {"any"} | ({anchor} if anchor else set()) | ({family} if family else set())
    scans = [f.loop_name.data for f in loops if f.loop_role in ("scan", "update")]
    inits = [f.loop_name.data for f in loops if f.loop_role == "init"]
    return KernelInfo(
        kernel, tag, lanes, ops, anchor, outputs, reductions, extents, family, constant_args, frozenset(kinds), scans,
        frozenset(features), what.epilogue if what is not None else None, inits,
    )


def constant_arguments(module: ModuleOp) -> dict[str, frozenset[int]]:
    """Kernel name -> indices of its arguments that are a constant weight at every call."""
    weights: set[SSAValue] = set()
    for f in module.ops:
        if isinstance(f, func.FuncOp):
            weights |= set(loop.weight_arguments(f))
    found: dict[str, set[int] | None] = {}
    for call in module.walk():
        if not isinstance(call, func.CallOp):
            continue
        name = call.callee.string_value()
        here = {k for k, v in enumerate(call.arguments) if v in weights and isinstance(v.type, MemRefType)}
        found[name] = here if found.get(name) is None else found[name] & here
    return {name: frozenset(v or ()) for name, v in found.items()}


def reads_contiguously(info: KernelInfo, loop_name: str) -> bool:
    """Some kernel argument is read at ``[..., iv]`` of ``loop_name`` in its body."""
    for_op = info.loop(loop_name)
    args = set(info.kernel.body.block.args)
    return any(
        isinstance(op, loop.LoadOp) and op.buffer in args and op.indices and op.indices[-1] == for_op.induction_var
        for op in for_op.walk()
    )


def tile_factor(extent: int | None, want: int) -> tuple[int, str]:
    """(factor, tail) to split a loop of ``extent`` iterations by about ``want``: the
    whole loop when shorter, shifted full tiles when the extent is known and larger."""
    if extent is None:
        return want, "guard"
    if extent <= want:
        return max(extent, 1), "guard"
    return want, ("shift" if extent % want else "guard")


__all__ = [
    "KernelInfo",
    "RowNest",
    "constant_arguments",
    "first_reduction",
    "kernel_info",
    "output_loops",
    "reads_contiguously",
    "row_nest",
    "tile_factor",
]

"""int8 products (qdense, qconv2d in their packed form: ``lowering/graph_to_te/quant_products.py``)
on VNNI: the float32 GEMM's register tile, each accumulator a vector of 16 int32 sums.

The packed form's reduction is ``acc + dot4_u8s8(0, a, w)``: each step a dot product of
4 activation bytes (one word, broadcast across the tile's columns) with a word of
weight bytes per output channel (a vector load from the packed weight). The strategies
give these kernels the fp32 register tile (``gemm.py`` / ``conv.py``: 6 rows x 4 vectors
of 16 channels on AVX-512, the weight's rows of blocks contiguous; column tiles start at
multiples of the tile, the last one guarded: a tile shifted back over a channel count that
is no multiple of 16 (a 1000-class head) straddles the packed blocks and reads them lane
by lane, 1x2048 -> 1000 at one thread: 430 -> 54 us), then
:func:`accumulate_dots` makes each step ``dot4_u8s8(acc, a, w)`` -- one ``vpdpbusd``
on a register accumulator where the target has VNNI (``+avx512vnni``), the widened
arithmetic of ``lowering/lowp_to_llvm.py`` elsewhere. No int32 sum is stored to memory:
the requantize epilogue reads the accumulators in the tile's write-back loop.

The bfloat16 products (``lowp.dot2_bf16``) take the same path with ``+avx512bf16``.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import StringAttr

from ...dialects.lowp import BF16, VNNI, Dot2BF16Op, Dot4U8S8Op
from ..nest import ScheduleError, transformation
from ..schedule import PRIMITIVES, Schedule
from .analysis import KernelInfo
from .conv import conv2d_register_tile
from .gemm import MAX_ROWS, column_vectors, gemm, is_gemm, tile_accumulators
from .registry import register_strategy

#: the ISA extension each dot product's instruction needs (LLVM's feature name)
_FEATURES = {Dot4U8S8Op: ("+avx512vnni", VNNI), Dot2BF16Op: ("+avx512bf16", BF16)}
_DOTS = tuple(_FEATURES)


def _is_zero(value) -> bool:
    owner = value.owner
    return isinstance(owner, arith.ConstantOp) and owner.value.value.data == 0


@transformation("accumulate_dots")
def accumulate_dots(kernel: func.FuncOp, isa: str = "") -> int:
    """Each ``acc + dot(0, a, w)`` (a reduction step) becomes ``dot(acc, a, w)``, the dot
    product accumulating in place (integer sums are exact in any order; a float
    reduction may reassociate); ``isa`` (``"avx512_vnni"``, ``"avx512_bf16"``, or "" for
    the widened form) is set on every dot product of the kernel whose kind it names.
    Returns how many steps were rewritten."""
    if isa not in ("", VNNI, BF16):
        raise ScheduleError("accumulate_dots", f"isa must be '', '{VNNI}' or '{BF16}', got {isa!r}")
    rewritten = 0
    for dot in [op for op in kernel.walk() if isinstance(op, _DOTS)]:
        if isa and _FEATURES[type(dot)][1] == isa:
            dot.properties["isa"] = StringAttr(isa)
        uses = list(dot.result.uses)
        if not _is_zero(dot.acc) or len(uses) != 1:
            continue
        add = uses[0].operation
        if not isinstance(add, arith.AddiOp | arith.AddfOp):
            continue
        other = add.operands[1 - uses[0].index]
        fused = type(dot)(other, dot.a, dot.b, dot.isa.data if dot.isa is not None else None)
        add.parent_block().insert_op_before(fused, add)
        add.result.replace_all_uses_with(fused.result)
        add.detach()
        add.erase()
        dot.detach()
        dot.erase()
        rewritten += 1
    return rewritten


PRIMITIVES["accumulate_dots"] = accumulate_dots


def _dot_kind(info: KernelInfo) -> type | None:
    kinds = {type(op) for op in info.kernel.walk() if isinstance(op, _DOTS)}
    return kinds.pop() if len(kinds) == 1 else None


def target_isa(info: KernelInfo) -> str:
    """The instruction the kernel's dot products can use on this target, or "" (widened)."""
    kind = _dot_kind(info)
    if kind is None:
        return ""
    feature, isa = _FEATURES[kind]
    return isa if feature in info.features else ""


def _packed_product(info: KernelInfo) -> bool:
    return is_gemm(info) and _dot_kind(info) is not None


def _finish(s: Schedule, info: KernelInfo) -> None:
    s.apply("accumulate_dots", {"isa": target_isa(info)})


@register_strategy(
    "qdense_register_tile",
    ops=("qdense",),
    plevel=20,
    applies=_packed_product,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "panel_first": (False, True)},
)
def qdense_register_tile(
    s: Schedule, info: KernelInfo, rows: int | None = None, vectors: int | None = None, panel_first: bool | None = None
) -> None:
    """The GEMM register tile on the packed words (no run-time panel copy: the weight's
    blocks of 16 channels are contiguous already), then :func:`accumulate_dots`."""
    gemm(s, info, rows=rows, vectors=vectors, panel_first=panel_first, pack_panel=False, aligned_columns=True)
    _finish(s, info)


def conv_tile_rows(s: Schedule, info: KernelInfo, vectors: int | None) -> int | None:
    """Rows of an int8 conv's register tile for an image row that stays one loop (at
    least two tiles wide): of the full tile's rows and two fewer, the one that computes
    the fewest pixels (the larger on a tie), where ``conv_rows`` weighs one fewer only.
    56 and 28 wide take 4 rows, not 6 (60 and 30 pixels computed): ResNet-50's int8
    convs at one thread on a Zen 4 EPYC, 56x56 and 28x28, 6-7% less time. None: the
    fp32 rule (narrow images fuse their pixels)."""
    if len(info.output_loops) < 3:
        return None
    vectors = vectors or column_vectors(s.extent(info.output_loops[-1]), info)
    most = max(1, min(MAX_ROWS, tile_accumulators(info, vectors) // vectors))
    width = s.extent(info.output_loops[-2])
    if width is None or most <= 3 or width < 2 * most:
        return None
    return min(range(most, most - 3, -1), key=lambda rows: (-(-width // rows) * rows, -rows))


@register_strategy(
    "qconv2d_register_tile",
    ops=("qconv2d",),
    plevel=15,
    applies=_packed_product,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "fuse_pixels": (False, True), "pad": (True, False)},
)
def qconv2d_register_tile(
    s: Schedule,
    info: KernelInfo,
    rows: int | None = None,
    vectors: int | None = None,
    fuse_pixels: bool | None = None,
    pad: bool = True,
) -> None:
    """conv2d's implicit-GEMM register tile (pixels x output channels, the padded input
    window copied when that pays) on the packed words, then :func:`accumulate_dots`."""
    rows = rows or conv_tile_rows(s, info, vectors)
    conv2d_register_tile(
        s, info, rows=rows, vectors=vectors, fuse_pixels=fuse_pixels, pad=pad, pack_panel=False, aligned_columns=True
    )
    _finish(s, info)


@register_strategy(
    "bf16_dense_register_tile",
    ops=("bf16_dense",),
    plevel=20,
    applies=_packed_product,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "panel_first": (False, True)},
)
def bf16_dense_register_tile(
    s: Schedule, info: KernelInfo, rows: int | None = None, vectors: int | None = None, panel_first: bool | None = None
) -> None:
    """The GEMM register tile on bfloat16 pair words, then :func:`accumulate_dots`
    (``vdpbf16ps`` on AVX512_BF16)."""
    gemm(s, info, rows=rows, vectors=vectors, panel_first=panel_first, pack_panel=False, aligned_columns=True)
    _finish(s, info)


__all__ = [
    "accumulate_dots",
    "bf16_dense_register_tile",
    "conv_tile_rows",
    "qconv2d_register_tile",
    "qdense_register_tile",
    "target_isa",
]

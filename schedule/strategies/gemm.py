"""Matrix products (matmul, batch_matmul, dense) and their elementwise epilogues.

``gemm_register_tile``: a register tile of ``rows`` output rows by ``vectors`` SIMD
vectors of columns, accumulated over k in registers (cache_write), rows unrolled and
columns vectorized -- on AVX-512 a 6 x 64 tile in 24 zmm accumulators; on AVX2 (16
ymm registers) 4 x 3 or 6 x 2 vectors, so that the accumulators, one row of B's
vectors and A's broadcast all stay in registers (4 x 4 spilled: GEMM 1024^3 at one
thread on a znver2 ran at 35 GFLOP/s, 4 x 3 at 98, torch 73). Sizes that the
tile does not divide get shifted full tiles (``split(..., tail="shift")``: the last
tile overlaps the one before) rather than a slow partial tile, and the column tile is
chosen among 1-4 vectors to waste the fewest columns (129 columns: 3 vectors of 16,
not 4). Row blocks (and batch, and column blocks when there are few rows) run in
parallel. Column panels of B (k x tile columns) are copied into a contiguous buffer
first when B is large (``pack_panel``).

``dense_packed``: ``dense`` reads its weight as ``W[n, k]``; when W is a constant the
kernel takes it re-laid out (``transform_layout``; done once at compile time by
:func:`~tensorkiln.schedule.strategies.packing.pack_constant_arguments`) and is then a
matmul with the same register tile: as contiguous column panels ``P[n/tile, k, tile]``
when the tile divides n (no run-time copy, for any row count: dense 768->3072 at a
symbolic batch of 64/8/1, one thread on a znver2: 11.7/2.6/1.5 -> 3.9/0.9/0.4 ms with
``overcompute``), else transposed, its panels copied at run time when several row
blocks read them.

``dense_matvec``: a dense layer on at most ``MATVEC_ROWS`` rows known at compile time
(batch-1 inference, decoding) keeps its weight as it is and computes dot products
along the weight's contiguous rows, output features in parallel.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from xdsl.ir import BlockArgument, SSAValue

from ...dialects import loop
from ..nest import ScheduleError, transaction
from ..schedule import Schedule
from .analysis import KernelInfo, tile_factor
from .parallel import MATVEC_NS, PRODUCT_NS, parallelize_outer
from .registry import register_strategy

#: the most rows of a register tile
MAX_ROWS = 8
#: per-core L2 cache when the machine does not say (Zen 4: 1 MiB)
DEFAULT_L2_BYTES = 1 << 20
#: column-tile candidates, in SIMD vectors (the first of equal waste wins), with 32
#: vector registers and with 16
GEMM_VECTOR_CHOICES = (4, 3, 2, 1)
NARROW_VECTOR_CHOICES = (3, 2, 1)


@functools.lru_cache(maxsize=1)
def l2_cache_bytes() -> int:
    """This machine's per-core L2 cache (Linux sysfs; else ``DEFAULT_L2_BYTES``), for
    the loop-order choice: it varies 2-4x between CPUs (znver2 512 KiB, Sapphire
    Rapids 2 MiB), and with 1 MiB assumed on a znver2, dense 128x256->1024 and GEMM
    512^3 kept row blocks outside and ran at 54-66 GFLOP/s instead of 87-95."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "2" and (index / "type").read_text().strip() != "Instruction":
                return _parse_size((index / "size").read_text().strip())
        except (OSError, ValueError):
            break
    return DEFAULT_L2_BYTES


def _parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def is_gemm(info: KernelInfo) -> bool:
    """The anchor's loops are the kernel's (elementwise epilogue only) and the nest is
    output loops (at least rows and columns) around a reduction."""
    return (
        info.anchor is not None
        and info.epilogue is not None
        and info.family == "reduce"
        and len(info.output_loops) >= 2
    )


def column_vectors(columns: int | None, info: KernelInfo) -> int:
    """SIMD vectors per column tile that compute the fewest columns for ``columns``."""
    choices = GEMM_VECTOR_CHOICES if info.vector_registers >= 32 else NARROW_VECTOR_CHOICES
    if columns is None:
        return choices[0]
    return min(choices, key=lambda v: math.ceil(columns / (v * info.lanes)) * v * info.lanes)


def tile_accumulators(info: KernelInfo, vectors: int) -> int:
    """How many vector accumulators a register tile of ``vectors`` column vectors may
    hold: 24 of 32 registers (AVX-512: a 6 x 64 tile reads B's 4 vectors once per 24
    FMAs; 4 x 64 read B from L2 too often, dense 197x768->3072 at one thread on a
    Sapphire Rapids Xeon: 146 -> 185 GFLOP/s, torch 194); with 16 registers, all but one
    row of B's vectors and A's broadcast."""
    if info.vector_registers >= 32:
        return 24
    return max(vectors, info.vector_registers - vectors - 1)


def tile_rows(info: KernelInfo, vectors: int, rows: int | None = None) -> int:
    """Rows of the default GEMM register tile for ``vectors`` column vectors. For a
    product of fewer ``rows`` than two such tiles (known at compile time), the tile
    down to half that height computing the fewest rows: 8 rows in two tiles of 4, not
    of 6 (12 rows computed; an MLP at batch 8, 784->512, one thread: 84 us)."""
    most = max(1, min(MAX_ROWS, tile_accumulators(info, vectors) // vectors))
    if rows is None or rows >= 2 * most:
        return most
    return min(range(most, (most - 1) // 2, -1), key=lambda r: -(-rows // r) * r)


def static_rows(s: Schedule, info: KernelInfo) -> int | None:
    """Rows of a dense layer (every output loop but the columns), if known."""
    rows = 1
    for name in info.output_loops[:-1]:
        extent = s.extent(name)
        if extent is None:
            return None
        rows *= extent
    return rows


@register_strategy(
    "gemm_register_tile",
    ops=("matmul", "batch_matmul"),
    plevel=15,
    applies=is_gemm,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "panel_first": (False, True),
               "pack_panel": (True, False)},
)
def gemm(
    s: Schedule,
    info: KernelInfo,
    rows: int | None = None,
    vectors: int | None = None,
    panel_first: bool | None = None,
    pack_panel: bool = True,
    fuse_rows: bool = True,
    aligned_columns: bool = False,
) -> None:
    """Register-tile the rows x columns of a matrix product: the columns are the last
    output loop, the rows the last one before it that has more than one iteration
    (a dense layer on (tokens, 1, features) has rows outside a loop of one).
    ``pack_panel``: with column panels outside the row blocks, copy each panel of B
    (k x tile columns) into a contiguous local buffer first (BLIS's packed B): rows of
    a run-time B lie its width apart, and 1024 floats apart they alias in the L1
    cache (GEMM 1024^3 on Sapphire Rapids, one thread: 40 -> 108-132 GFLOP/s).
    ``fuse_rows``: fuse the row loops B does not depend on into one (convolutions
    choose their pixel loops themselves). ``aligned_columns``: every column tile starts at
    a multiple of the tile (the last one guarded, not shifted back): a packed weight's
    blocks of 16 channels (``lowp_gemm.py``) are whole vectors only there."""
    panel = column_operand(info) if pack_panel else None  # before the loops are split
    if fuse_rows:
        info = _row_loops_fused(s, info)
    *outer, c = info.output_loops
    r = row_loop(s, info)
    batch = [name for name in outer if name != r]
    indexing_b = _loops_indexing_columns(info) if info.reduction_loops else set()
    m, n = s.extent(r), s.extent(c)
    vectors = vectors or column_vectors(n, info)
    rows = rows or tile_rows(info, vectors, m)
    row_factor, row_tail = tile_factor(m, rows)
    col_factor, col_tail = tile_factor(n, vectors * info.lanes)
    if aligned_columns:
        col_tail = "guard"
    ro, ri = s.split(r, row_factor, tail=row_tail)
    co, ci = s.split(c, col_factor, tail=col_tail)
    if panel_first is None:
        panel_first = _panel_first(info, m, n)
    outer = [co, ro] if panel_first else [ro, co]
    if panel_first and not (pack_panel and panel is not None):  # (no run-time panel copy)
        # B's panels already contiguous (packed at compile time): the batch loops B does
        # not depend on (a conv's image rows) go inside the panel loop, so that a panel is
        # read from memory once, not once per image row (3x3 256->256 on 14x14: 2.4 MB of
        # weight streamed 14 times from L3)
        free = [name for name in batch if name not in indexing_b]
        outer = [*[name for name in batch if name in indexing_b], co, *free, ro]
        batch = []
    s.reorder(*batch, *outer, ri, ci)
    s.cache_write(outer[-1])
    if m is None:  # a symbolic row count: full register tiles, the last one's extra rows dropped
        s.overcompute(ri)
        s.overcompute(f"{ri}.init")
    s.unroll(ri)
    for name in (ci, f"{ci}.init", f"{ci}.write"):
        s.vectorize(name)
    flush_denormals_if_linear(s, info)
    copies_panels = panel_first and pack_panel and panel is not None
    # (a panel copied per iteration of the panel loop: not fused further in for balance)
    parallel = parallelize_outer(s, [*batch, *outer], info, PRODUCT_NS, balance=not copies_panels)
    if copies_panels:
        # at the panel loop, or at the parallel loop fused from loops around it (an
        # iteration is still one panel); not when the panels were fused with the row blocks
        at = co if co in s.loops() else parallel if parallel and parallel.endswith(f".{co}.fused") else None
        if at is not None:
            try:
                with transaction():
                    s.cache_read(panel, at)
            except ScheduleError:  # a panel too big for a local buffer
                pass


@register_strategy(
    "grouped_gemm_register_tile",
    ops=("grouped_matmul",),
    plevel=15,
    applies=is_gemm,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "panel_first": (False, True)},
)
def grouped_gemm(
    s: Schedule, info: KernelInfo, rows: int | None = None, vectors: int | None = None, panel_first: bool | None = None
) -> None:
    """The GEMM register tile on rows that each read their group's matrix ``B[g, k, j]``:
    B's vectors are loaded per row of the tile (rows of one tile may belong to
    different groups), so no panel is copied at run time. Constant weights (a model's
    experts) whose columns the tile divides are re-laid out at compile time into each
    group's contiguous column panels ``P[g, j / width, k, width]``: rows of B lie
    ``width`` floats apart instead of N (512 rows x 512 -> 2048, 8 groups, 2 threads,
    AVX2: 18.6 -> 11.9 ms). Blocks of rows sharing a group (a 3-d lhs) get a tile whose
    rows divide the block, and read each vector of B once for the tile's rows."""
    n = s.extent(info.output_loops[-1])
    block = s.extent(info.output_loops[-2]) if len(info.output_loops) == 3 else None
    if block is not None and rows is None and vectors is None:
        rows, vectors = _block_tile(info, block, n)
    vectors = vectors or column_vectors(n, info)
    rows = rows or tile_rows(info, vectors)
    weight = argument_read_as(
        info, lambda arg, indices, j, k: arg in info.constant_args and len(indices) == 3 and indices[1:] == (k, j)
    )
    if weight is not None and n is not None and n % (vectors * info.lanes) == 0 and panel_first is None:
        gemm_on_packed_panels(s, info, weight, [0, 2, 1, 3], 2, rows, vectors, fuse_rows=False)
        return
    gemm(s, info, rows=rows, vectors=vectors, panel_first=panel_first, pack_panel=False, fuse_rows=False)


def _block_tile(info: KernelInfo, block: int, columns: int | None) -> tuple[int | None, int | None]:
    """(rows, vectors) of a register tile for blocks of ``block`` rows sharing a matrix:
    rows dividing the block (a tile never spans two blocks, none computed twice), then
    the most FMAs per load (A broadcasts + B vectors) among the tiles that fit the
    registers and divide the columns. (None, None) if none does."""
    choices = GEMM_VECTOR_CHOICES if info.vector_registers >= 32 else NARROW_VECTOR_CHOICES
    best, best_score = (None, None), 0.0
    for rows in range(min(block, MAX_ROWS), 0, -1):
        if block % rows:
            continue
        for vectors in choices:
            width = vectors * info.lanes
            if rows * vectors > tile_accumulators(info, vectors):
                continue
            if columns is not None and columns % width and vectors > 1:
                continue  # columns in whole tiles: a constant B packs into panels of the tile's width
            score = rows * vectors / (rows + vectors)
            if score > best_score:
                best, best_score = (rows, vectors), score
    return best


def _row_loops_fused(s: Schedule, info: KernelInfo) -> KernelInfo:
    """The output loops just before the columns that B (the operand read along the
    columns) does not depend on, fused into one row loop: a dense layer on (1, 7, 7, 768)
    tokens tiles 49 rows by 6 instead of 7 rows by 6 (12 computed for 7) in a loop of 7
    (ConvNeXt's last stage, 768->3072, one thread on a Sapphire Rapids Xeon: 5.2 -> 1.6 ms).
    Batched products keep their batch loop: B changes with it."""
    *outer, columns = info.output_loops
    if not info.reduction_loops:
        return info
    indexing_b = _loops_indexing_columns(info)
    run: list[str] = []
    for name in reversed(outer):
        if name in indexing_b:
            break
        run.insert(0, name)
    extents = [s.extent(name) for name in run]
    if None in extents or sum(e != 1 for e in extents) < 2:
        return info
    fused = run[0]
    for name in run[1:]:
        fused = s.fuse(fused, name)
    return info.with_output_loops([*outer[: len(outer) - len(run)], fused, columns], s.extent)


def _loops_indexing_columns(info: KernelInfo) -> set[str]:
    """Output loops whose variables index an operand the innermost reduction loop reads
    along the columns (B, or a panel layout of it)."""
    variables = {info.loop(name).induction_var: name for name in info.output_loops}
    column = info.loop(info.output_loops[-1]).induction_var
    found: set[str] = set()
    for op in info.loop(info.reduction_loops[-1]).walk():
        if isinstance(op, loop.LoadOp):
            sources = index_sources(op.indices)
            if column in sources:
                found |= {variables[v] for v in sources if v in variables}
    return found


def index_sources(values) -> set[SSAValue]:
    """The block arguments (loop variables) that index values are computed from."""
    sources: set[SSAValue] = set()
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, BlockArgument):
            sources.add(value)
        else:
            pending.extend(value.owner.operands)
    return sources


#: graph ops that do not turn normal values into denormals in practice: products and
#: (piecewise-)linear epilogues
FLUSH_SAFE_OPS = frozenset(
    {"matmul", "batch_matmul", "grouped_matmul", "dense", "conv2d", "add", "sub", "mul", "neg", "relu", "max", "min", "reshape",
     "transpose", "broadcast_to"}
)  # fmt: skip


def flush_denormals_if_linear(s: Schedule, info: KernelInfo) -> None:
    """Run a product with denormals flushed (an FMA on a denormal operand costs ~100x:
    ``lowering/denormals.py``) when the kernel holds nothing else than
    ``FLUSH_SAFE_OPS``: an epilogue like exp, sigmoid or GELU makes denormals from
    normal values (sigmoid(-100)), and those stay exact."""
    if info.ops is not None and set(info.ops) <= FLUSH_SAFE_OPS:
        s.flush_denormals()


def row_loop(s: Schedule, info: KernelInfo) -> str:
    """The rows of a matrix product: the last output loop before the columns that has
    more than one iteration (a dense layer on (tokens, 1, features) has rows outside a
    loop of one)."""
    *outer, _ = info.output_loops
    return next((name for name in reversed(outer) if s.extent(name) != 1), outer[-1])


def column_operand(info: KernelInfo) -> int | None:
    """The kernel argument read as ``B[..., k, j]`` (j the column loop, k the innermost
    reduction loop) in the unscheduled nest, or None."""
    return argument_read_as(info, lambda arg, indices, j, k: indices[-2:] == (k, j))


def _panel_first(info: KernelInfo, m: int | None, n: int | None) -> bool:
    """Column blocks outside row blocks when B (k x n) would not stay in the L2 cache
    between row blocks, and there are column blocks enough to share among threads: each
    column panel of B (k x tile) is then read from L2 by every row block, instead of all
    of B from L3 for every row block."""
    k = 1
    for name in info.reduction_loops:
        extent = info.extents.get(name)
        k = k * extent if extent is not None and k is not None else None
    if k is None or n is None:
        return False
    return k * n * 4 > l2_cache_bytes() and n >= 4 * GEMM_VECTOR_CHOICES[0] * info.lanes


def packable_weight(info: KernelInfo) -> int | None:
    """The constant argument a dense kernel reads as ``W[j, k]`` (j the column loop, k
    the innermost reduction loop), or None."""
    return argument_read_as(info, lambda arg, indices, j, k: arg in info.constant_args and indices == (j, k))


def argument_read_as(info: KernelInfo, matches) -> int | None:
    """The first kernel argument that the innermost reduction loop reads with
    ``matches(argument number, indices, j, k)`` true (j: the column loop's variable,
    k: the innermost reduction loop's), or None."""
    if not info.reduction_loops or len(info.output_loops) < 2:
        return None
    j = info.loop(info.output_loops[-1]).induction_var
    k_loop = info.loop(info.reduction_loops[-1])
    args = list(info.kernel.body.block.args)
    for op in k_loop.walk():
        if (
            isinstance(op, loop.LoadOp)
            and op.buffer in args
            and matches(args.index(op.buffer), tuple(op.indices), j, k_loop.induction_var)
        ):
            return args.index(op.buffer)
    return None


def _dense_applies(info: KernelInfo) -> bool:
    return is_gemm(info) and packable_weight(info) is not None


@register_strategy(
    "dense_packed",
    ops=("dense",),
    plevel=20,
    applies=_dense_applies,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "pack_panel": (True, False)},
)
def dense_packed(
    s: Schedule, info: KernelInfo, rows: int | None = None, vectors: int | None = None, pack_panel: bool | None = None
) -> None:
    """The constant weight re-laid out at compile time, then the GEMM tile. When the
    column tile divides the features, as the tile's contiguous column panels (any row
    count, no run-time copy). Else transposed to [k, n], its column panels copied at
    run time when several row blocks read each one (a row count known at compile
    time): the weight's rows lie n floats apart, and 768 or 3072 floats apart they
    alias in the L1 cache (dense 128x768->3072 at one thread on a znver2: 47 -> 88
    GFLOP/s)."""
    n = s.extent(info.output_loops[-1])
    vectors = vectors or column_vectors(n, info)
    rows = rows or tile_rows(info, vectors, static_rows(s, info))
    weight, width = packable_weight(info), vectors * info.lanes
    if pack_panel is None and n is not None and n % width == 0:
        # the panels packed once, at compile time: P[n / width, k, width]
        gemm_on_packed_panels(s, info, weight, [0, 2, 1], 0, rows, vectors)
        return
    if pack_panel is None:
        # not for a symbolic row count: run at batch 1, the copy of every panel costs
        # more than the product (768->3072: 2.6 ms packed, 1.0 ms not)
        m = s.extent(row_loop(s, info))
        pack_panel = m is not None and m > rows
    s.transform_layout(weight, [1, 0])
    gemm(s, info, rows=rows, vectors=vectors, pack_panel=pack_panel)


def gemm_on_packed_panels(
    s: Schedule,
    info: KernelInfo,
    weight: int,
    permutation: list[int],
    axis: int,
    rows: int,
    vectors: int,
    fuse_rows: bool = True,
) -> None:
    """The GEMM tile on a constant ``weight`` re-laid out at compile time into the tile's
    contiguous column panels: its column axis ``axis`` split into blocks of the tile's
    width, then ``permutation`` (block index first, width last); no run-time copy."""
    s.transform_layout(weight, permutation, block=(axis, vectors * info.lanes))
    gemm(s, info, rows=rows, vectors=vectors, pack_panel=False, fuse_rows=fuse_rows)
    s.simplify_indices()  # P[(co*width + ci) / width, ..., (co*width + ci) % width] = P[co, ..., ci]


#: rows (tokens) up to which a dense layer is a few matrix-vector products
MATVEC_ROWS = 4


def _matvec_applies(info: KernelInfo) -> bool:
    """A dense layer with a constant weight ``W[j, k]`` read along k, and at most
    ``MATVEC_ROWS`` rows known at compile time."""
    if not is_gemm(info) or len(info.reduction_loops) != 1:
        return False
    rows = 1
    for name in info.output_loops[:-1]:
        extent = info.extents.get(name)
        if extent is None:
            return False
        rows *= extent
    return rows <= MATVEC_ROWS and packable_weight(info) is not None


@register_strategy("dense_matvec", ops=("dense",), plevel=25, applies=_matvec_applies)
def dense_matvec(s: Schedule, info: KernelInfo) -> None:
    """A dense layer on a few rows (batch-1 inference, decoding) streams its weight:
    per output feature j, the rows' dot products with ``W[j, :]`` (contiguous; read
    once, then from L1 for the next rows), each a vectorized reduction over k with
    independent accumulators (vectorize.py's interleave); features in parallel. The
    GEMM tile there read the transposed weight 3 vectors per row, 3072 floats apart:
    dense 1x768->3072 at one thread on a znver2 took 1.27 ms, this 0.20 ms (torch 0.26-0.35)."""
    *rows, features = info.output_loops
    s.reorder(features, *rows)
    for name in rows:
        s.unroll(name)
    s.vectorize(info.reduction_loops[0])
    flush_denormals_if_linear(s, info)
    parallelize_outer(s, [features], info, MATVEC_NS)


__all__ = [
    "MATVEC_ROWS",
    "column_vectors",
    "dense_matvec",
    "dense_packed",
    "gemm",
    "index_sources",
    "is_gemm",
    "l2_cache_bytes",
    "packable_weight",
    "flush_denormals_if_linear",
    "tile_accumulators",
    "tile_rows",
]

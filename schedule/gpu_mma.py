"""The GEMM template on the tensor cores, with TF32 inputs (opt-in: ``target="cuda -tf32"``,
as torch's ``allow_tf32``): A and B are rounded to 10-bit mantissas, products summed in
f32, so results differ from fp32 in about the fourth significant digit.

Everything but the compute is ``gpu_gemm``'s template (GEMM form, a 128 x 128 tile per
block, register double-buffered copies of 16-deep boxes into shared memory, the
epilogue). The compute gives each of the 8 warps a 64 x 32 part of the tile (warps 2 x
4) as 4 x 4 tiles of ``loop.mma_tf32`` (16 x 8 x 8, PTX ``mma.sync`` m16n8k8): per 8
steps of k, a warp loads 4 A fragments and 4 B fragments from shared memory, each lane
its elements at the places ``loop.mma_tf32_position`` gives, and runs 16 products into
its accumulators. A thread's 64 outputs are the 8 x 8 grid of rows ``mi*16 + g + 8h``
and columns ``ni*8 + 2t + e`` of its warp's part (``g = lane / 4``, ``t = lane % 4``).
Shared rows are padded by 8, so the 32 lanes' fragment reads (4 k-rows x 8 positions)
fall in 32 different banks.

Example::

    s = Schedule(matmul_kernel)
    gemm_tf32(s)            # loop.mma_tf32 ops in the compute phase
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import SSAValue

from ..dialects import loop
from .gpu_gemm import THREADS, GemmTiles, _Gemm, gemm_nest
from .gpu_reduction import Emitter, reduction_nest
from .nest import ScheduleError

P = "gemm_tf32"
#: the block's tile and k step; warps along the rows and the columns of the tile
TILES = GemmTiles(128, 128, 16)
WARP_ROWS, WARP_COLS = 2, 4
MMA_M, MMA_N, MMA_K = loop.MMA_SHAPE
#: per warp: mma tiles along its rows and columns
TILES_M = TILES.rows // WARP_ROWS // MMA_M
TILES_N = TILES.cols // WARP_COLS // MMA_N


class _MmaGemm(_Gemm):
    pad = 8

    def __init__(self, kernel: func.FuncOp, nest):
        super().__init__(kernel, nest, TILES)
        if not isinstance(self.element, Float32Type):
            raise ScheduleError(P, f"the tensor cores take f32 (as TF32) here, not {self.element}")
        factors = {self.a.owner, self.b.owner}
        if len([op for op in self.product_ops if op not in factors]) != 3:  # acc load, mulf, addf
            raise ScheduleError(P, "the reduction does more than accumulate the product")
        assert TILES.per_row == 2 * TILES_M and TILES.per_col == 2 * TILES_N  # a thread's 8 x 8 outputs

    def _lane(self, e: Emitter, ty: SSAValue, tx: SSAValue):
        """(first row, first column of its warp's part, g, t) of thread (ty, tx): a warp is
        2 rows of 16 threads."""
        warp = e.add(arith.DivUIOp(ty, e.const(2)))
        lane = e.add(arith.AddiOp(e.add(arith.MuliOp(e.add(arith.RemUIOp(ty, e.const(2))), e.const(THREADS))), tx))
        rows0 = e.add(arith.MuliOp(e.add(arith.DivUIOp(warp, e.const(WARP_COLS))), e.const(TILES_M * MMA_M)))
        cols0 = e.add(arith.MuliOp(e.add(arith.RemUIOp(warp, e.const(WARP_COLS))), e.const(TILES_N * MMA_N)))
        return rows0, cols0, e.add(arith.DivUIOp(lane, e.const(4))), e.add(arith.RemUIOp(lane, e.const(4)))

    def _row_offset(self, e: Emitter, i: SSAValue, ty: SSAValue, tx: SSAValue) -> SSAValue:
        rows0, _, g, _ = self._lane(e, ty, tx)  # row mi*16 + g + 8h of i = 2 mi + h
        tile = e.add(arith.MuliOp(e.add(arith.DivUIOp(i, e.const(2))), e.const(MMA_M)))
        half = e.add(arith.MuliOp(e.add(arith.RemUIOp(i, e.const(2))), e.const(MMA_M // 2)))
        return e.add(arith.AddiOp(e.add(arith.AddiOp(rows0, tile)), e.add(arith.AddiOp(g, half))))

    def _col_offset(self, e: Emitter, j: SSAValue, ty: SSAValue, tx: SSAValue) -> SSAValue:
        _, cols0, _, t = self._lane(e, ty, tx)  # column ni*8 + 2t + e of j = 2 ni + e
        tile = e.add(arith.MuliOp(e.add(arith.DivUIOp(j, e.const(2))), e.const(MMA_N)))
        pair = e.add(arith.AddiOp(e.add(arith.MuliOp(t, e.const(2))), e.add(arith.RemUIOp(j, e.const(2)))))
        return e.add(arith.AddiOp(e.add(arith.AddiOp(cols0, tile)), pair))

    def _compute(self, kb: Emitter, a_s, b_s, acc, k0, row0, col0, mapping_outer) -> None:
        pe, ty, tx = self._threads(kb, "compute")
        rows0, cols0, g, t = self._lane(pe, ty, tx)
        for ks in range(0, TILES.bk, MMA_K):
            a_frags = []
            for mi in range(TILES_M):
                base = pe.add(arith.AddiOp(rows0, pe.const(mi * MMA_M)))
                frag = []
                for q in range(4):  # A[row g + .., k t + ..] at As[k][row]
                    row_off, k_off = loop.mma_tf32_position("a", q, 0)
                    row = pe.add(arith.AddiOp(base, pe.add(arith.AddiOp(g, pe.const(row_off)))))
                    k = pe.add(arith.AddiOp(t, pe.const(ks + k_off)))
                    frag.append(pe.add(loop.LoadOp(a_s, [k, row])))
                a_frags.append(frag)
            b_frags = []
            for ni in range(TILES_N):
                base = pe.add(arith.AddiOp(cols0, pe.const(ni * MMA_N)))
                frag = []
                for q in range(2):  # B[k t + .., column g] at Bs[k][column]
                    k_off, col_off = loop.mma_tf32_position("b", q, 0)
                    col = pe.add(arith.AddiOp(base, pe.add(arith.AddiOp(g, pe.const(col_off)))))
                    k = pe.add(arith.AddiOp(t, pe.const(ks + k_off)))
                    frag.append(pe.add(loop.LoadOp(b_s, [k, col])))
                b_frags.append(frag)
            for mi in range(TILES_M):
                for ni in range(TILES_N):
                    # C's register q at (8 (q / 2), q % 2) from (g, 2t): acc[2 mi + q / 2][2 ni + q % 2]
                    places = [loop.mma_tf32_position("c", q, 0) for q in range(4)]
                    spots = [[pe.const(2 * mi + r // (MMA_M // 2)), pe.const(2 * ni + col)] for r, col in places]
                    old = [pe.add(loop.LoadOp(acc, spot)) for spot in spots]
                    mma = loop.MmaTf32Op(a_frags[mi], b_frags[ni], old)
                    pe.add(mma)
                    for value, spot in zip(mma.results, spots):
                        pe.add(loop.StoreOp(value, acc, spot))


def gemm_tf32(schedule) -> None:
    """Rebuild a matrix-product or convolution kernel as a GEMM on the tensor cores with
    TF32 inputs (module docstring)."""
    gemm_nest(schedule)
    _MmaGemm(schedule.kernel, reduction_nest(schedule.kernel)).build()


__all__ = ["TILES", "gemm_tf32"]

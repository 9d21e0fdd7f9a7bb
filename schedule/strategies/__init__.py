"""Default schedules per kernel kind (TVM's op strategies), applied after te-to-loop by
the ``default-schedule`` pass.

Each kernel gets the highest-priority registered strategy that serves its kind (its
anchor op, as te-to-loop records it, or its structural family) and applies to its shapes (``registry.py``); a
strategy whose primitives fail (ScheduleError) hands over to the next one, and a
kernel no strategy fits keeps its plain loop nest: correct, slower. Strategies are
plain functions over the Schedule API whose decisions (tile sizes...) are keyword
parameters, so a tuner can call them with other values and store their traces.

Registered here (plevel in brackets):

* ``dense_matvec`` [25]: dense with a constant weight on at most 4 static rows: dot
  products along the weight's rows, features in parallel (``gemm.py``);
* ``dense_packed`` [20]: dense with a constant weight, the weight packed at compile
  time into the tile's column panels (or transposed), then the GEMM register tile
  (``gemm.py``);
* ``gemm_register_tile`` [15]: matmul / batch_matmul with elementwise epilogues;
* ``grouped_conv2d_by_group`` [12]: NHWC grouped conv2d whose groups are wider than a
  vector but no whole number of vectors: a group loop outside each group's register
  tile of full vectors (``grouped_conv.py``);
* ``conv2d_register_tile`` [10]: NHWC conv2d as an implicit GEMM (``conv.py``);
* ``reduce_rows`` [10] / ``reduce_columns`` [5]: reductions along / across the
  contiguous axis (softmax, layer norm, reduce_*, pooling; ``reduce.py``);
* ``row_stages`` [10]: kernels of row stages (softmax, log_softmax, layer norm: row
  loops around reduction stages and an element loop): rows parallel, each stage's and
  the element loop vectorized (``rows.py``);
* ``injective_vectorized`` [10]: elementwise/injective groups, transposes in blocks
  (``elementwise.py``);
* ``scatter_line_blocks`` [10]: scatter kernels along a leading axis: blocks of
  neighbouring lines apply each update together (``scatter.py``);
* ``qdense_register_tile`` [20], ``qconv2d_register_tile`` [15],
  ``bf16_dense_register_tile`` [20]: int8 and bfloat16 products on the target's dot
  product instructions (``lowp_gemm.py``);
* ``rnn_row_blocks`` [20]: recurrent layers (``graph.rnn``): the constant weights packed in
  column panels, the blocks of batch rows in parallel (``recurrent.py``);
* ``parallel_outer`` [0]: any other kernel: its outer loops in parallel.

Parallel loops run on ``TK_NUM_THREADS`` threads (default: every core) with dynamic
scheduling; kernels with little work stay serial (``parallel.py``).

Example: register a strategy for a new op kind::

    from tensorkiln.schedule.strategies import register_strategy

    @register_strategy("conv2d_direct", ops=("conv2d",), plevel=15, applies=lambda info: info.lanes >= 8)
    def conv2d_direct(s, info, block: int = 32):
        ...
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ...dialects import loop
from ..schedule import ScheduleError, kernels, schedule_on_clone
from . import conv, elementwise, gemm, grouped_conv, lowp_gemm, recurrent, reduce, rows, scatter  # noqa: F401  (registers the strategies)
from .analysis import KernelInfo, constant_arguments, kernel_info
from .packing import pack_constant_arguments
from .registry import STRATEGIES, Strategy, register_strategy, strategies_for

log = logging.getLogger("tensorkiln.schedule")

def strategy_for(what: func.FuncOp | loop.KernelAnchor | None, lanes: int = 16) -> Strategy | None:
    """The strategy that would schedule a kernel: the first that serves and applies to
    ``what`` when it is the kernel; when it is only what a kernel computes (its
    :class:`~tensorkiln.dialects.loop.KernelAnchor`), the highest one registered for
    the anchor op, if the kernel's loops are the anchor's (an elementwise epilogue).

    Example: ``strategy_for(loop.kernel_anchor(kernel))``."""
    if isinstance(what, func.FuncOp):
        found = strategies_for(kernel_info(what, lanes))
        return found[0] if found else None
    if what is None or what.epilogue is None:
        return None
    named = [s for s in STRATEGIES.values() if what.op in s.ops]
    return max(named, key=lambda s: s.plevel) if named else None


def apply_default_schedule(
    kernel: func.FuncOp,
    lanes: int,
    constant_args: frozenset[int] = frozenset(),
    features: frozenset[str] = frozenset(),
) -> Strategy | None:
    """Schedule ``kernel`` in place with the first strategy (by plevel) that applies and
    succeeds; returns it, or None (kernel untouched). ``features``: the target's ISA
    extensions (``{"+avx512vnni", ...}``, see :func:`target_features`)."""
    info = kernel_info(kernel, lanes, constant_args, features)
    for strategy in strategies_for(info):
        try:
            trial = schedule_on_clone(
                kernel, lambda s: strategy.schedule(s, kernel_info(s.kernel, lanes, constant_args, features))
            )
        except ScheduleError as e:
            log.debug("strategy %s does not fit %s: %s", strategy.name, kernel.sym_name.data, e)
            continue
        loop.set_kernel_strategy(trial, strategy.name)
        Rewriter.replace_op(kernel, trial)
        return strategy
    return None


def target_features(features: str) -> frozenset[str]:
    """The ISA extensions a target has, from its LLVM feature string: its ``+`` entries
    (``"+avx512f,-avx512vnni,+avx512bf16"`` -> ``{"+avx512f", "+avx512bf16"}``)."""
    return frozenset(f for f in (part.strip() for part in features.split(",")) if f.startswith("+"))


@dataclass(frozen=True)
class DefaultSchedulePass(ModulePass):
    """Apply each kernel's default strategy (``vector_bits``: the target's SIMD width;
    ``features``: its LLVM feature string, for strategies that need an ISA extension),
    then pack the constant weights that strategies re-laid out."""

    name = "default-schedule"

    vector_bits: int = 512
    features: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        constants = constant_arguments(op)
        element_bits = 32
        lanes = max(1, self.vector_bits // element_bits)
        features = target_features(self.features)
        for kernel in kernels(op):
            apply_default_schedule(kernel, lanes, constants.get(kernel.sym_name.data, frozenset()), features)
        pack_constant_arguments(op)


__all__ = [
    "STRATEGIES",
    "DefaultSchedulePass",
    "KernelInfo",
    "Strategy",
    "apply_default_schedule",
    "kernel_info",
    "pack_constant_arguments",
    "register_strategy",
    "strategies_for",
    "strategy_for",
    "target_features",
]

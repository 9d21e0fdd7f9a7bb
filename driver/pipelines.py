"""Every pass list of the compiler, in one place.

A build runs, in order (``tk.build(..., dump_ir="dir")`` writes the IR after each pass)::

    checks-to-outputs                              COMPILABLE      (each function straight-line)
    bf16-products                                  PRECISIONS      (CPU builds)
    legalize-16bit-floats, <graph passes of O0-O3> graph_pipeline  (GRAPH_PIPELINES)
    legalize-unsigned, graph-to-te, te-to-loop     TO_LOOPS
    default-schedule{vector_bits, features}        schedule_pipeline(cpu)
    dedupe-kernels                                 DEDUPE          (the graph executor's program is read)
    hoist-temporaries                              HOIST           (then the disk cache is looked up)
    partition-loops, bf16-storage, expand-math, loop-to-llvm        to_llvm(cpu)

The CUDA target runs ``split-reductions`` first (GPU_GRAPH_PASSES), the graph pipeline
in the model's layout, TO_LOOPS without softmax's row stash, then GPU_LOWERING.

Pipelines are also passes, for ``tensorkiln-opt``: ``-p graph-opt`` (the O2 pipeline),
``-p 'graph-opt{opt_level=1}'`` or ``-p graph-opt-O1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ..backends.llvm.jit import CPUTarget
from ..passes.pipeline import PassContext, PipelineReport, run_pipeline

#: the fusion pass; optional in :data:`GRAPH_PIPELINES` (``run_pipeline`` skips it while
#: it is not registered: ``passes.pipeline.OPTIONAL_PASSES``)
FUSE_OPS = "fuse-ops"

#: runs first at every level, O0 too, and only there: float16/bfloat16 ops computed in
#: float32 (passes/legalize_16bit_floats.py), before fold-constants (which then folds the
#: casts of 16-bit weights) and fusion (which fuses the casts into the kernels)
LEGALIZE_16BIT_FLOATS = "legalize-16bit-floats"

#: ``tk.build(precision=...)`` -> the pass that runs first in a CPU build's graph pipeline:
#: a bfloat16 model's dense layers as bfloat16 products (graph.bf16_dense: vdpbf16ps on
#: AVX512_BF16), and with ``"bf16"`` also float32 ones with constant weights (float32 sums,
#: like torch.autocast; ~1e-2 relative error: passes/bf16_products.py)
PRECISIONS = {"fp32": "bf16-products", "bf16": "bf16-products{autocast=true}"}

#: the layout pass; its ``layout`` option is the target's (:func:`graph_pipeline`)
CONVERT_LAYOUT = "convert-layout"

#: a graph module made compilable: each function's run-time checks become outputs
COMPILABLE = ("checks-to-outputs",)

#: graph-level passes per optimization level. ``fold-qdq`` runs first: fold-constants
#: would fold the weights' dequantize into float32 constants, and the int8 weights be
#: lost (one walk for models without graph.quantize/dequantize). ``cse`` runs before ``fold-constants``
#: so that a repeated constant computation is folded once (folded constants are new
#: arrays, which cse cannot merge), and again after ``simplify``, which can make ops
#: equal; ``fold-batch-norm`` needs the scale/shift folded to constants first and runs
#: before ``convert-layout`` (and ``conv-transpose-to-conv``, which makes transposed
#: convolutions plain ones), whose weight transposes ``fold-constants`` then folds and
#: whose transposes of 1-sized axes ``simplify`` turns into reshapes; ``conv1x1-to-dense``
#: and ``explicit-conv-padding`` need the channels-last layout ``convert-layout`` makes.
_O2 = (
    "fold-qdq", "cse", "fold-constants", "simplify", "cse", "fold-batch-norm", "conv-transpose-to-conv",
    CONVERT_LAYOUT, "conv1x1-to-dense", "explicit-conv-padding", "fold-constants", "simplify", "dce", FUSE_OPS,
)  # fmt: skip
#: O3 is O2: no graph pass is known to pay off only with more compile time (it is kept
#: so that ``opt_level=3``, TVM's default, is accepted and means the most we do)
GRAPH_PIPELINES: dict[int, tuple[str, ...]] = {
    0: (),
    1: ("fold-qdq", "fold-constants", "simplify", "dce"),
    2: _O2,
    3: _O2,
}

#: graph -> loops (after the graph pipeline, which legalized 16-bit floats); row kernels
#: store softmax's exp in the output row (``stash_rows``: CPU only)
TO_LOOPS = ("legalize-unsigned", "graph-to-te", "te-to-loop{stash_rows=true}")

#: identical kernels merged (the disk cache then keys kernels by their structural hash)
DEDUPE = ("dedupe-kernels",)

#: the entry's temporaries become arguments (the runtime passes the memory plan's storages)
HOIST = ("hoist-temporaries",)

#: graph rewrites for the GPU's shape of parallelism, before the graph pipeline
GPU_GRAPH_PASSES = ("split-reductions",)

#: loop-level kernels -> gpu dialect
GPU_LOWERING = ("gpu-default-schedule", "bf16-storage", "loop-to-gpu")


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    return precision


def graph_pipeline(opt_level: int, layout: str | None = None, precision: str | None = None) -> tuple[str, ...]:
    """The graph-level passes of an optimization level (``legalize-16bit-floats`` first,
    at every level); ``layout`` is the data layout the target wants convolutions in
    (None: the pass's default, NHWC; ``"NCHW"``: keep the model's own, no
    ``convert-layout``); ``precision`` (CPU builds: :data:`PRECISIONS`) puts its
    products pass before everything."""
    try:
        passes = (LEGALIZE_16BIT_FLOATS, *GRAPH_PIPELINES[opt_level])
    except KeyError:
        raise ValueError(f"opt_level must be one of {sorted(GRAPH_PIPELINES)}, got {opt_level!r}") from None
    if precision is not None:
        passes = (PRECISIONS[check_precision(precision)], *passes)
    if layout is None:
        return passes
    if layout == "NCHW":
        return tuple(p for p in passes if p != CONVERT_LAYOUT)
    return tuple(f"{CONVERT_LAYOUT}{{layout={layout}}}" if p == CONVERT_LAYOUT else p for p in passes)


def optimize_graph(
    module: ModuleOp,
    ctx: PassContext | None = None,
    layout: str | None = None,
    verify_input: bool = True,
    precision: str | None = None,
) -> PipelineReport:
    """Run the graph pipeline of ``ctx.opt_level`` (default: the current context's) on
    ``module`` in place, converting convolutions to ``layout`` (see :func:`graph_pipeline`;
    ``verify_input``: see :func:`~tensorkiln.passes.pipeline.run_pipeline`).

    Example: ``optimize_graph(module, PassContext(opt_level=1))``"""
    ctx = ctx if ctx is not None else PassContext.current()
    return run_pipeline(module, graph_pipeline(ctx.opt_level, layout, precision), ctx, verify_input)


#: the ISA extensions scheduling is told of (``KernelInfo.features``): the vector
#: extensions a strategy may need beyond the SIMD width (int8 dot products need
#: ``+avx512vnni``, bfloat16 ones ``+avx512bf16``); the rest of the feature string (sse,
#: bmi, aes...) would only lengthen the pass's name in timings and dumps
SCHEDULE_FEATURES = ("+avx512", "+avxvnni", "+amx")


def schedule_pipeline(cpu: CPUTarget) -> tuple[str, ...]:
    """The default schedules of every kernel, for ``cpu``'s SIMD width and vector ISA
    extensions (:data:`SCHEDULE_FEATURES`)."""
    told = ",".join(sorted(f for f in cpu.enabled_features if f.startswith(SCHEDULE_FEATURES)))
    return (f'default-schedule{{vector_bits={cpu.vector_bits} features="{told}"}}',)


def to_llvm(cpu: CPUTarget) -> tuple[str, ...]:
    """The loop -> llvm pipeline for ``cpu`` (vectorized loops use its SIMD width)."""
    return ("partition-loops", "bf16-storage", "expand-math", f"loop-to-llvm{{vector_bits={cpu.vector_bits}}}")


def gpu_to_loops() -> tuple[str, ...]:
    """TO_LOOPS for the GPU: no softmax row stash (a CPU schedule's trick)."""
    return tuple("te-to-loop" if name.startswith("te-to-loop") else name for name in TO_LOOPS)


def gpu_lowering(tf32: bool = False) -> tuple[str, ...]:
    """The passes from loops to the gpu dialect (``tf32``: matrix products on the tensor
    cores, inputs rounded to TF32)."""
    schedule, *rest = GPU_LOWERING
    return (f"{schedule}{{tf32=true}}" if tf32 else schedule, *rest)


# ---------------------------------------------------------------------------
# pipelines as passes (tensorkiln-opt -p graph-opt-O2)


@dataclass(frozen=True)
class GraphOptPass(ModulePass):
    """The graph pipeline of an optimization level, as one pass (``-p 'graph-opt{opt_level=1}'``).

    Runs the passes under the current :class:`PassContext` (its own ``opt_level`` is
    not consulted: the pass's option chooses the pipeline).
    """

    name = "graph-opt"

    opt_level: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(op, graph_pipeline(self.opt_level), PassContext.current())


@dataclass(frozen=True)
class GraphOptO0Pass(GraphOptPass):
    """``graph-opt-O0``: no graph optimization (16-bit floats legalized)."""

    name = "graph-opt-O0"
    opt_level: int = 0


@dataclass(frozen=True)
class GraphOptO1Pass(GraphOptPass):
    """``graph-opt-O1``: the O1 graph pipeline."""

    name = "graph-opt-O1"
    opt_level: int = 1


@dataclass(frozen=True)
class GraphOptO2Pass(GraphOptPass):
    """``graph-opt-O2``: the O2 graph pipeline (``tk.build``'s default)."""

    name = "graph-opt-O2"
    opt_level: int = 2


@dataclass(frozen=True)
class GraphOptO3Pass(GraphOptPass):
    """``graph-opt-O3``: the O3 graph pipeline (the same as O2)."""

    name = "graph-opt-O3"
    opt_level: int = 3


__all__ = [
    "COMPILABLE",
    "CONVERT_LAYOUT",
    "DEDUPE",
    "FUSE_OPS",
    "GPU_GRAPH_PASSES",
    "GPU_LOWERING",
    "GRAPH_PIPELINES",
    "HOIST",
    "LEGALIZE_16BIT_FLOATS",
    "PRECISIONS",
    "TO_LOOPS",
    "check_precision",
    "gpu_lowering",
    "gpu_to_loops",
    "graph_pipeline",
    "optimize_graph",
    "schedule_pipeline",
    "to_llvm",
]

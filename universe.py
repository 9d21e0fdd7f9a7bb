"""Every tensorkiln dialect and pass, for xdsl-opt and tensorkiln-opt (entry point ``xdsl.universe``).

``DIALECTS`` and ``PASSES`` are the one list of what tensorkiln adds to xDSL. The stock
``xdsl-opt`` finds them through the ``xdsl.universe`` entry point (``TENSORKILN_UNIVERSE``);
``tensorkiln-opt``, the test fixtures and the Python API take them from
:func:`full_universe`, which also holds xDSL's own dialects and passes and those of any
other installed plugin.
"""

import importlib
from functools import lru_cache

from xdsl.context import Context
from xdsl.universe import Universe


def _load(module: str, name: str):
    """A factory of ``tensorkiln.<module>.<name>``, imported on first use (as xDSL's
    universe loads dialects and passes): this registry names every layer's code and
    imports none of it."""

    def load():
        return getattr(importlib.import_module(f"tensorkiln.{module}"), name)

    return load


#: dialect name -> (module, class)
DIALECTS = {
    "graph": ("dialects.graph", "Graph"),
    "te": ("dialects.te", "TE"),
    "loop": ("dialects.loop", "Loop"),
    "scalar": ("dialects.scalar", "Scalar"),
    "lowp": ("dialects.lowp", "LowP"),
    "byoc": ("dialects.byoc", "BYOC"),
}

#: pass name -> (module, class); the one list of our passes
PASSES = {
    # graph-level optimization (cse and dce are xDSL's own, which handle graph ops)
    "fold-constants": ("passes.fold_constants", "FoldConstantsPass"),
    "simplify": ("passes.simplify", "SimplifyPass"),
    "fold-batch-norm": ("passes.fold_batch_norm", "FoldBatchNormPass"),
    "convert-layout": ("passes.convert_layout", "ConvertLayoutPass"),
    "conv-transpose-to-conv": ("passes.conv_transpose_to_conv", "ConvTransposeToConvPass"),
    "conv1x1-to-dense": ("passes.conv1x1_to_dense", "Conv1x1ToDensePass"),
    "explicit-conv-padding": ("passes.explicit_conv_padding", "ExplicitConvPaddingPass"),
    "split-reductions": ("passes.split_reductions", "SplitReductionsPass"),
    "legalize-16bit-floats": ("passes.legalize_16bit_floats", "Legalize16BitFloatsPass"),
    "legalize-unsigned": ("passes.legalize_unsigned", "LegalizeUnsignedPass"),
    "checks-to-outputs": ("passes.checks_to_outputs", "ChecksToOutputsPass"),
    "fold-qdq": ("passes.fold_qdq", "FoldQDQPass"),
    "bf16-products": ("passes.bf16_products", "BF16ProductsPass"),
    # graph pipelines of each optimization level (driver/pipelines.py)
    "graph-opt": ("driver.pipelines", "GraphOptPass"),
    "graph-opt-O0": ("driver.pipelines", "GraphOptO0Pass"),
    "graph-opt-O1": ("driver.pipelines", "GraphOptO1Pass"),
    "graph-opt-O2": ("driver.pipelines", "GraphOptO2Pass"),
    "graph-opt-O3": ("driver.pipelines", "GraphOptO3Pass"),
    # lowering
    "graph-to-te": ("lowering.graph_to_te", "GraphToTEPass"),
    "te-to-loop": ("lowering.te_to_loop", "TEToLoopPass"),
    "expand-math": ("lowering.expand_math", "ExpandMathPass"),
    "bf16-storage": ("lowering.bf16_storage", "Bf16StoragePass"),
    "loop-to-llvm": ("lowering.loop_to_llvm", "LoopToLLVMPass"),
    "dedupe-kernels": ("passes.dedupe_kernels", "DedupeKernelsPass"),
    "hoist-temporaries": ("lowering.hoist_temporaries", "HoistTemporariesPass"),
    "fuse-ops": ("passes.fuse_ops", "FuseOpsPass"),
    "default-schedule": ("schedule.strategies", "DefaultSchedulePass"),
    "apply-schedule": ("schedule.apply_pass", "ApplySchedulePass"),
    "partition-loops": ("schedule.partition", "PartitionLoopsPass"),
    # bring your own codegen (byoc/): partition_for runs these in this order
    "partition": ("byoc.partition", "PartitionPass"),
    "merge-composites": ("byoc.merge", "MergeCompositesPass"),
    "annotate-codegen": ("byoc.annotate", "AnnotateCodegenPass"),
    "run-codegen": ("byoc.codegen", "RunCodegenPass"),
    # GPU path (lowering/loop_to_gpu.py, backends/cuda)
    "gpu-default-schedule": ("schedule.gpu_strategies", "GPUDefaultSchedulePass"),
    "loop-to-gpu": ("lowering.loop_to_gpu", "LoopToGPUPass"),
    "emulate-gpu": ("lowering.emulate_gpu", "EmulateGPUPass"),
}

#: output targets (``tensorkiln-opt -t NAME``): name -> (module, class)
TARGETS = {"cuda": ("backends.cuda.printer", "CudaTarget")}

TENSORKILN_UNIVERSE = Universe(
    all_dialects={name: _load(*where) for name, where in DIALECTS.items()},
    all_passes={name: _load(*where) for name, where in PASSES.items()},
    all_targets={name: _load(*where) for name, where in TARGETS.items()},
)


@lru_cache(maxsize=1)
def full_universe() -> Universe:
    """xDSL's dialects, passes and targets, every installed ``xdsl.universe`` plugin's, and ours.

    Ours are added even when the package's entry point is not installed (running from a
    source tree), so tensorkiln-opt never depends on packaging metadata to know itself.
    Read once per process: scanning the installed packages' entry points took 4-8 ms,
    and every pipeline run looks passes up here.
    """
    found = Universe.get_multiverse()
    return Universe(
        all_dialects={**found.all_dialects, **TENSORKILN_UNIVERSE.all_dialects},
        all_passes={**found.all_passes, **TENSORKILN_UNIVERSE.all_passes},
        all_targets={**found.all_targets, **TENSORKILN_UNIVERSE.all_targets},
    )


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A Context that loads, on first use, every dialect ``tensorkiln-opt`` knows."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in full_universe().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx

"""convert-layout: the same numbers before and after (interpreter vs interpreter, and
compiled vs the interpreter), few transposes on real CNNs, target choice in the pipeline."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph.nn import Conv2dOp
from tensorkiln.dialects.graph.shape import TransposeOp
from tensorkiln.driver.pipelines import graph_pipeline
from tensorkiln.passes.pipeline import PassContext, run_pipeline

torch = pytest.importorskip("torch", reason="the zoo models come from torch")

from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

CNNS = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet", "shufflenet_v2", "efficientnet", "padding", "upsample"]
UP_TO_LAYOUT = ("fold-constants", "simplify", "fold-batch-norm", "convert-layout", "fold-constants", "simplify", "dce")


@cache
def _imported(name: str):
    entry = ZOO[name]
    inputs = random_inputs(entry, seed=7)
    ep = torch.export.export(entry.make().eval(), inputs)
    return from_exported_program(ep), [t.numpy() for t in inputs]


def _converted(module):
    work = module.clone()
    run_pipeline(work, UP_TO_LAYOUT, PassContext(dump_ir=False))
    return work


def _ops(module, kind):
    return [op for op in module.walk() if isinstance(op, kind)]


def _data_transposes(module) -> list[TransposeOp]:
    """Transposes left at run time (those of constants were folded)."""
    return _ops(module, TransposeOp)


@pytest.mark.parametrize("name", CNNS)
def test_cnn_same_numbers_after_conversion(name):
    module, inputs = _imported(name)
    converted = _converted(module)
    convs = _ops(converted, Conv2dOp)
    assert convs and all(op.data_layout() == "NHWC" for op in convs)
    before = tk.create_executor("interpreter", module).evaluate()(*inputs)
    after = tk.create_executor("interpreter", converted).evaluate()(*inputs)
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name, most", [("resnet18", 1), ("resnet50", 1), ("mobilenet_v2", 1), ("squeezenet", 1)])
def test_cnn_transposes_in_and_out_only(name, most):
    """The input is transposed once; the head (global pooling, flatten) needs no
    transpose back. ShuffleNet's channel shuffle (reshape/transpose) needs NCHW inside,
    so it is not listed."""
    converted = _converted(_imported(name)[0])
    transposes = _data_transposes(converted)
    assert len(transposes) <= most, [str(t) for t in transposes]


def test_compiled_cnn_matches_interpreter_with_and_without_layout(rng, no_disk_cache):
    """(Uncached: the passes must run to be seen; a build-cache hit runs none.)"""
    module, inputs = _imported("resnet18")
    expected = tk.create_executor("interpreter", module).evaluate()(*inputs)
    nhwc = tk.build(module)
    with PassContext(disabled_passes=("convert-layout",)):
        nchw = tk.build(module)
    np.testing.assert_allclose(nhwc(*inputs), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(nchw(*inputs), expected, rtol=1e-4, atol=1e-5)
    assert any(name.startswith("convert-layout") for name, _ in nhwc.pass_timings)
    assert not any(name.startswith("convert-layout") for name, _ in nchw.pass_timings)


def test_symbolic_batch_keeps_its_name(rng):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 3, 9, 7))
    w = rng.standard_normal((5, 3, 3, 3)).astype("f4")
    module = b.finish(b.relu(b.conv2d(x, w, padding=1)))
    converted = _converted(module)
    assert "tensor<?x9x7x5xf32, #graph.dims<n, _, _, _>>" in str(converted)
    lib = tk.build(module)
    for batch in (1, 4):
        data = rng.standard_normal((batch, 3, 9, 7)).astype("f4")
        expected = tk.create_executor("interpreter", module).evaluate()(data)
        np.testing.assert_allclose(lib(data), expected, rtol=1e-4, atol=1e-5)


def test_batch_norm_folds_before_and_into_nhwc_conv(rng):
    """fold-batch-norm also folds into a conv already in NHWC (channel axis 3, weight HWIO)."""
    b = tk.GraphBuilder()
    x = b.input("x", (2, 6, 5, 4))
    w = rng.standard_normal((3, 3, 4, 7)).astype("f4")
    scale = rng.standard_normal(7).astype("f4")
    shift = rng.standard_normal(7).astype("f4")
    module = b.finish(b.add(b.mul(b.conv2d(x, w, padding=1, layout="NHWC"), scale), shift))
    folded = module.clone()
    run_pipeline(folded, ("fold-batch-norm", "dce"), PassContext(dump_ir=False))
    assert "graph.mul" not in str(folded) and "graph.add" not in str(folded)
    data = rng.standard_normal((2, 6, 5, 4)).astype("f4")
    before = tk.create_executor("interpreter", module).evaluate()(data)
    np.testing.assert_allclose(tk.create_executor("interpreter", folded).evaluate()(data), before, rtol=1e-4, atol=1e-5)


def test_pipeline_layout_is_the_targets_choice():
    assert "convert-layout" in graph_pipeline(2)
    assert "convert-layout{layout=NHWC}" in graph_pipeline(2, "NHWC")
    assert not any(p.startswith("convert-layout") for p in graph_pipeline(2, "NCHW"))
    assert not any(p.startswith("convert-layout") for p in graph_pipeline(1))


def test_target_chooses_the_layout(rng, no_disk_cache):
    """(Uncached: the passes must run to be seen; a build-cache hit runs none.)"""
    weight = rng.standard_normal((4, 3, 3, 3)).astype("f4")
    b = tk.GraphBuilder()
    module = b.finish(b.conv2d(b.input("x", (1, 3, 7, 6)), weight, padding=1))
    data = rng.standard_normal((1, 3, 7, 6)).astype("f4")
    expected = tk.create_executor("interpreter", module).evaluate()(data)
    for target, converted in (("llvm", True), ("llvm -layout=NHWC", True), ("llvm -layout=NCHW", False)):
        lib = tk.build(module, target=target)
        assert any(name.startswith("convert-layout") for name, _ in lib.pass_timings) == converted
        np.testing.assert_allclose(lib(data), expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="-layout=NHWC|NCHW"):
        tk.build(module, target="llvm -layout=NCWH")

"""torch.export programs with quantized_decomposed ops (PT2E: torchao's prepare_pt2e /
convert_pt2e with the X86 quantizer): imported, folded into int8 kernels, compared with
torch running the converted model; unsupported schemes refused naming the node."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph import quant  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.passes.fold_qdq import SKIPPED_ATTR, fold_qdq  # noqa: E402


def pt2e(model, example, samples):
    """The model quantized by torchao's PT2E flow (X86InductorQuantizer's defaults: uint8
    activations per tensor, int8 weights per channel), exported again."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            captured = torch.export.export(model.eval(), (example,)).module()
            quantizer = X86InductorQuantizer()
            quantizer.set_global(get_default_x86_inductor_quantization_config())
            prepared = prepare_pt2e(captured, quantizer)
            for sample in samples:
                prepared(sample)
            converted = convert_pt2e(prepared)
            return converted, torch.export.export(converted, (example,))
        finally:
            logging.disable(logging.NOTSET)


def test_pt2e_cnn(rng):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(8 * 5 * 5, 6),
    )  # fmt: skip
    example = torch.randn(2, 3, 9, 9)
    converted, program = pt2e(model, example, [torch.randn(2, 3, 9, 9) for _ in range(4)])
    module = from_exported_program(program)
    folded = module.clone()
    skipped = fold_qdq(folded)
    assert len([op for op in folded.walk() if isinstance(op, quant.QConv2dOp)]) == 2
    # the classifier's output is not quantized by the X86 quantizer: it stays float32, visibly
    assert skipped == [("graph.dense", pytest.approx(skipped[0][1]))] if skipped else True
    assert all(SKIPPED_ATTR in op.attributes for op in folded.walk() if op.name == "graph.dense")
    lib = tk.build(folded)
    for _ in range(3):
        x = torch.randn(2, 3, 9, 9)
        want = converted(x).detach().numpy()
        got = lib(x.numpy())
        # the int8 kernels requantize with one multiplier where torch rounds a float32
        # product: a step of the last quantized layer at most
        assert np.abs(got - want).max() <= 0.05 * np.abs(want).max()


class NarrowRange(torch.nn.Module):
    def forward(self, x):
        q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.1, 0, 0, 127, torch.uint8)
        return torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.1, 0, 0, 127, torch.uint8)


def test_narrow_range_refused_naming_node():
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)

    program = torch.export.export(NarrowRange(), (torch.randn(3),))
    # (the importer names the node and where the model calls it)
    with pytest.raises(Exception, match=r"node 'quantize_per_tensor'.*range \[0, 127\] narrower than torch.uint8's \[0, 255\]"):
        from_exported_program(program)

"""Survey of torchvision's model registry: every classification, segmentation, video and
optical-flow model at full size with random weights, exported, imported, built and compared
with torch eager.

    pip install torch==2.14.1 torchvision==0.29.1   # a matching pair; not a dependency
    python -m tensorkiln.tools.tv_sweep [--models resnet50,raft_small] [--max-params 150] > tv.txt

One line per model: ``name STATUS detail`` with STATUS ``ok`` (every output within a
relative L2 error of 1e-4), ``mismatch``, ``export_fail`` (torch.export itself failed: not
ours), ``error`` (the stage and the message) or ``skipped`` (more parameters than
``--max-params`` millions, or a detection model: torch.export fails on their data-dependent
box filtering, a guard on the number of boxes left). A summary by status ends the run.
Weights are random; zero-initialised ones are redrawn so that every output depends on
every layer.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from tensorkiln.tools.model_check import check_model, randomize_zeros, survey

#: torchvision module -> the input of its models (batch 1)
INPUTS = {
    "classification": (1, 3, 224, 224),
    "segmentation": (1, 3, 224, 224),
    "video": (1, 3, 16, 112, 112),
    "optical_flow": (1, 3, 128, 160),  # two frames
}
#: video models whose patch embeddings fix the frame size
VIDEO_224 = ("mvit_v1_b", "mvit_v2_s", "s3d", "swin3d_t", "swin3d_s", "swin3d_b")


def _registry(torchvision: Any) -> dict[str, str]:
    """model name -> family (a key of INPUTS, or ``detection``)."""
    families = {}
    for family in (*INPUTS, "detection"):
        module = torchvision.models if family == "classification" else getattr(torchvision.models, family)
        for name in torchvision.models.list_models(module=module):
            families.setdefault(name, family)
    return families


def _model(torchvision: Any, name: str, family: str) -> Any:
    # segmentation models load a pretrained backbone unless told not to (no network here)
    backbone = {"weights_backbone": None} if family == "segmentation" else {}
    return randomize_zeros(torchvision.models.get_model(name, weights=None, **backbone).eval())


def _inputs(torch: Any, name: str, family: str) -> tuple[Any, ...]:
    generator = torch.Generator().manual_seed(1)
    shape = INPUTS[family]
    if name in VIDEO_224:
        shape = (*shape[:3], 224, 224)
    count = 2 if family == "optical_flow" else 1
    return tuple(torch.randn(shape, generator=generator) for _ in range(count))


def check(torchvision: Any, name: str, family: str, max_params: float) -> tuple[str, str]:
    """(status, detail) of one model."""
    import torch

    if family == "detection":
        return "skipped", "detection model: torch.export fails on its data-dependent box filtering"
    try:
        model = _model(torchvision, name, family)
    except Exception as error:
        return "error", f"make: {type(error).__name__}: {str(error)[:200]}"
    millions = sum(p.numel() for p in model.parameters()) / 1e6
    if millions > max_params:
        return "skipped", f"{millions:.0f}M parameters"
    status, detail = check_model(model, _inputs(torch, name, family))
    return status, f"{millions:.1f}M parameters, {detail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--max-params", type=float, default=150.0, help="skip larger models (millions)")
    args = parser.parse_args()
    try:
        import torchvision
    except ImportError as error:
        raise SystemExit(f"tv_sweep needs torchvision ({error}): pip install torch==2.14.1 torchvision==0.29.1") from error
    families = _registry(torchvision)
    names = args.models.split(",") if args.models else list(families)
    unknown = sorted(set(names) - set(families))
    if unknown:
        raise SystemExit(f"unknown models {unknown}; known: {', '.join(families)}")
    survey((name, functools.partial(check, torchvision, name, families[name], args.max_params)) for name in names)


if __name__ == "__main__":
    main()

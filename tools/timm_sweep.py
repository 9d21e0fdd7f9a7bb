"""Survey of timm: the smallest model of each of timm's architecture modules (ResNets,
ViTs, ConvNeXts, MaxViT, NFNets, ... ~100 of them) with random weights at its own input
size, exported, imported, built and compared with torch eager.

    pip install timm   # not a dependency (it needs torchvision: torch==2.14.1 torchvision==0.29.1 here)
    python -m tensorkiln.tools.timm_sweep [--models resnet18,vit_tiny_patch16_224] [--max-params 100] > timm.txt

One line per model: ``module/name STATUS detail`` (statuses as ``model_check``;
``skipped`` when a module's smallest model has more than ``--max-params`` millions, or
timm cannot make it). A summary by status ends the run. Models are picked by counting
their parameters on the meta device (no weights are made for the others).
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from tensorkiln.tools.model_check import check_model, randomize_zeros, survey


def _smallest_per_module(timm: Any, torch: Any) -> dict[str, tuple[str, float]]:
    """timm module -> (its model with the fewest parameters, millions)."""
    from timm.models import _registry

    best: dict[str, tuple[str, float]] = {}
    for name in timm.list_models():
        module = _registry._model_to_module[name]
        try:
            with torch.device("meta"):
                millions = sum(p.numel() for p in timm.create_model(name).parameters()) / 1e6
        except Exception:  # noqa: BLE001 - a model timm cannot make here is not a candidate
            continue
        if module not in best or millions < best[module][1]:
            best[module] = (name, millions)
    return best


def check(timm: Any, name: str, millions: float, max_params: float) -> tuple[str, str]:
    import torch

    if millions > max_params:
        return "skipped", f"{millions:.0f}M parameters"
    try:
        model = randomize_zeros(timm.create_model(name).eval())
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
    except Exception as error:
        return "skipped", f"timm cannot make it: {type(error).__name__}: {str(error)[:150]}"
    x = torch.randn((1, *size), generator=torch.Generator().manual_seed(1))
    status, detail = check_model(model, (x,))
    return status, f"{millions:.1f}M parameters, input {tuple(size)}, {detail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated timm model names (default: the smallest of each module)")
    parser.add_argument("--max-params", type=float, default=100.0, help="skip larger models (millions)")
    args = parser.parse_args()
    try:
        import timm
        import torch
    except ImportError as error:
        raise SystemExit(f"timm_sweep needs timm ({error}): pip install timm") from error
    if args.models:
        from timm.models import _registry

        chosen = {}
        for name in args.models.split(","):
            with torch.device("meta"):
                chosen[_registry._model_to_module[name]] = (name, sum(p.numel() for p in timm.create_model(name).parameters()) / 1e6)
    else:
        chosen = _smallest_per_module(timm, torch)
    survey(
        (f"{module}/{name}", functools.partial(check, timm, name, millions, args.max_params))
        for module, (name, millions) in sorted(chosen.items())
    )


if __name__ == "__main__":
    main()

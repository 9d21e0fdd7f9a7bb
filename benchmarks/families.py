"""Model families the peers table covers beyond the CNN zoo and transformers (issue #36):
recurrent layers and a diffusion-style group-norm UNet, with random weights, at batch 1.

Each maker returns ``(name, model in eval(), inputs)``::

    name, model, inputs = lstm_small()
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ResBlock(nn.Module):
    """A diffusion UNet's residual block: GroupNorm -> SiLU -> conv3x3, twice, plus the
    input (through a 1x1 conv when the width changes)."""

    def __init__(self, cin: int, cout: int, groups: int = 32):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(groups, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(groups, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class SmallUNet(nn.Module):
    """32x32 -> 16x16 -> 8x8 and back, GroupNorm(32) + SiLU + conv everywhere (a small
    DDPM-style denoiser without the time embedding), 64/128 channels."""

    def __init__(self, width: int = 64):
        super().__init__()
        w = width
        self.stem = nn.Conv2d(3, w, 3, padding=1)
        self.down1, self.pool1 = ResBlock(w, w), nn.Conv2d(w, w, 3, stride=2, padding=1)
        self.down2, self.pool2 = ResBlock(w, 2 * w), nn.Conv2d(2 * w, 2 * w, 3, stride=2, padding=1)
        self.mid = ResBlock(2 * w, 2 * w)
        self.up2 = ResBlock(4 * w, 2 * w)
        self.up1 = ResBlock(3 * w, w)
        self.head_norm, self.head = nn.GroupNorm(32, w), nn.Conv2d(w, 3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s1 = self.down1(self.stem(x))
        s2 = self.down2(self.pool1(s1))
        h = self.mid(self.pool2(s2))
        h = self.up2(torch.cat([F.interpolate(h, scale_factor=2.0, mode="nearest"), s2], 1))
        h = self.up1(torch.cat([F.interpolate(h, scale_factor=2.0, mode="nearest"), s1], 1))
        return self.head(F.silu(self.head_norm(h)))


def unet() -> tuple[str, nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return "group-norm UNet (64/128 ch, 1x3x32x32)", SmallUNet().eval(), (torch.randn(1, 3, 32, 32),)


def lstm_small() -> tuple[str, nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return "LSTM(32, 64), 16 steps", nn.LSTM(32, 64).eval(), (torch.randn(16, 1, 32),)


def lstm_large() -> tuple[str, nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return "LSTM(128, 256) x2 layers, 100 steps", nn.LSTM(128, 256, num_layers=2).eval(), (torch.randn(100, 1, 128),)


def gru_bidirectional() -> tuple[str, nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = nn.GRU(64, 128, bidirectional=True, batch_first=True).eval()
    return "GRU(64, 128) bidirectional, batch 8, 50 steps", model, (torch.randn(8, 50, 64),)


#: the makers, in table order
FAMILIES = (lstm_small, lstm_large, gru_bidirectional, unet)

__all__ = ["FAMILIES", "ResBlock", "SmallUNet", "gru_bidirectional", "lstm_large", "lstm_small", "unet"]

"""A zoo of small PyTorch models, one per model family the torch frontend must handle.

Plain ``torch.nn`` code (no torchvision): structurally faithful to the real families
(ResNet, MobileNetV2, SqueezeNet, ShuffleNet, EfficientNet, transformers, ...) but
narrow and shallow, so that exporting, importing, compiling and comparing each one
takes seconds. Every model has fixed-seed weights, batch-norm layers get random
non-trivial running statistics (so that a batch-norm folding bug shows), and every
entry describes its inputs, so the tests and ``benchmarks/models.py`` can draw fresh
ones::

    from tensorkiln.examples.torch_zoo import ZOO, random_inputs

    entry = ZOO["resnet18"]
    model = entry.build()                       # eval mode, fixed weights
    args = random_inputs(entry, seed=1)         # torch tensors
    ep = torch.export.export(model, args)

Needs torch (the rest of ``tensorkiln.examples`` does not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------------------
# entries and inputs


@dataclass(frozen=True)
class InputSpec:
    """One model input: its shape (dim 0 is the batch), dtype, and for integer inputs
    the exclusive upper bound of the values (indices into an embedding, say)."""

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    high: int | None = None


@dataclass(frozen=True)
class ZooEntry:
    """A zoo model: how to build it (eval mode, fixed weights) and what it takes."""

    name: str
    family: str
    make: Callable[[], nn.Module]
    inputs: tuple[InputSpec, ...]
    description: str = ""
    tags: frozenset[str] = field(default_factory=frozenset)

    def build(self) -> nn.Module:
        return self.make().eval()


def random_inputs(entry: ZooEntry, seed: int, batch: int | None = None) -> tuple[torch.Tensor, ...]:
    """Fresh random inputs for ``entry`` (``batch`` replaces the batch dim when given)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in entry.inputs:
        shape = (batch, *spec.shape[1:]) if batch is not None else spec.shape
        if spec.dtype == torch.bool:
            out.append(torch.rand(shape, generator=gen) < 0.5)
        elif spec.dtype.is_floating_point:
            out.append(torch.randn(shape, generator=gen, dtype=spec.dtype))
        else:
            out.append(torch.randint(0, spec.high or 10, shape, generator=gen, dtype=spec.dtype))
    return tuple(out)


def _seeded(seed: int, build: Callable[[], nn.Module]) -> nn.Module:
    """``build()`` under a fixed torch seed, then random BN statistics; eval mode."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = build()
        randomize_batch_norm(model, seed)
    return model.eval()


def randomize_batch_norm(model: nn.Module, seed: int) -> None:
    """Give every batch-norm layer random running statistics and affine parameters, far
    from the (0, 1, 1, 0) defaults that would hide a folding bug."""
    gen = torch.Generator().manual_seed(seed + 7919)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                m.running_mean.copy_(0.5 * torch.randn(n, generator=gen))
                m.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=gen))
                if m.affine:
                    m.weight.copy_(0.5 + torch.rand(n, generator=gen))
                    m.bias.copy_(0.3 * torch.randn(n, generator=gen))


# ---------------------------------------------------------------------------
# MLP


class MLP(nn.Module):
    def __init__(self, sizes: Sequence[int] = (64, 128, 64, 10)):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for k, layer in enumerate(self.layers):
            x = layer(x)
            if k < len(self.layers) - 1:
                x = F.relu(x)
        return x


# ---------------------------------------------------------------------------
# ResNet (torchvision's structure: stem conv7x7/2 + maxpool, four stages, avgpool, fc)


def _conv3x3(cin: int, cout: int, stride: int = 1, groups: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride, 1, groups=groups, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = _conv3x3(cin, width, stride)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers: Sequence[int], widths: Sequence[int] = (8, 16, 32, 64), classes: int = 10):
        super().__init__()
        self.cin = widths[0]
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.stages = nn.Sequential(
            *(self._stage(block, w, n, 1 if k == 0 else 2) for k, (w, n) in enumerate(zip(widths, layers)))
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[-1] * block.expansion, classes)

    def _stage(self, block, width: int, blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.cin != width * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.cin, width * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(width * block.expansion),
            )
        layers = [block(self.cin, width, stride, downsample)]
        self.cin = width * block.expansion
        layers += [block(self.cin, width) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.stages(x)
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def resnet18(widths: Sequence[int] = (8, 16, 32, 64), layers: Sequence[int] = (2, 1, 1, 1)) -> ResNet:
    """ResNet-18 structure (BasicBlock); the real one is widths (64, 128, 256, 512), layers (2, 2, 2, 2)."""
    return ResNet(BasicBlock, layers, widths)


def resnet50(widths: Sequence[int] = (8, 16, 32, 64), layers: Sequence[int] = (2, 1, 1, 1)) -> ResNet:
    """ResNet-50 structure (Bottleneck); the real one is widths (64, 128, 256, 512), layers (3, 4, 6, 3)."""
    return ResNet(Bottleneck, layers, widths)


# ---------------------------------------------------------------------------
# MobileNetV2


class ConvBNReLU6(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    """Pointwise expand (ReLU6) -> depthwise 3x3 (ReLU6) -> linear pointwise bottleneck, plus
    the input when the shapes allow."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_residual = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(ConvBNReLU6(cin, hidden, kernel=1))
        layers += [
            ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_residual else self.conv(x)


class MobileNetV2(nn.Module):
    # (expand t, channels c, repeats n, stride s) as in the paper, narrowed
    SETTINGS = ((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 24, 1, 1))

    def __init__(self, classes: int = 10):
        super().__init__()
        layers: list[nn.Module] = [ConvBNReLU6(3, 8, stride=2)]
        cin = 8
        for t, c, n, s in self.SETTINGS:
            for k in range(n):
                layers.append(InvertedResidual(cin, c, s if k == 0 else 1, t))
                cin = c
        layers.append(ConvBNReLU6(cin, 64, kernel=1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---------------------------------------------------------------------------
# SqueezeNet


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand1x1: int, expand3x3: int):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """SqueezeNet 1.1 layout (ceil-mode max pools, classifier conv + global average)."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 4, 8, 8),
            Fire(16, 4, 8, 8),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 8, 16, 16),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Conv2d(32, classes, 1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1))
        )

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


# ---------------------------------------------------------------------------
# ShuffleNetV2


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, -1, h, w)


class ShuffleUnit(nn.Module):
    """ShuffleNetV2 unit: stride 1 splits the channels in two (chunk) and transforms one
    half; stride 2 transforms both copies of the input; then concat and channel shuffle."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.stride = stride
        half = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                nn.BatchNorm2d(cin),
                nn.Conv2d(cin, half, 1, bias=False),
                nn.BatchNorm2d(half),
                nn.ReLU(inplace=True),
            )
        b2_in = cin if stride > 1 else half
        self.branch2 = nn.Sequential(
            nn.Conv2d(b2_in, half, 1, bias=False),
            nn.BatchNorm2d(half),
            nn.ReLU(inplace=True),
            nn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False),
            nn.BatchNorm2d(half),
            nn.Conv2d(half, half, 1, bias=False),
            nn.BatchNorm2d(half),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.stage2 = nn.Sequential(ShuffleUnit(8, 16, 2), ShuffleUnit(16, 16, 1))
        self.stage3 = nn.Sequential(ShuffleUnit(16, 32, 2), ShuffleUnit(32, 32, 1))
        self.conv5 = nn.Sequential(nn.Conv2d(32, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        x = self.stage3(self.stage2(x))
        x = self.conv5(x)
        # split (rather than chunk) once, into uneven pieces, to cover aten.split_with_sizes
        a, b = torch.split(x, [40, 24], dim=1)
        x = torch.cat([b, a], dim=1)
        return self.fc(x.mean([2, 3]))


# ---------------------------------------------------------------------------
# EfficientNet


class StochasticDepth(nn.Module):
    """torchvision's row-mode stochastic depth: identity in eval mode."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = torch.empty([x.shape[0]] + [1] * (x.ndim - 1), dtype=x.dtype, device=x.device).bernoulli_(1 - self.p)
        return x * keep / (1 - self.p)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeeze: int):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = torch.sigmoid(self.fc2(F.silu(self.fc1(scale))))
        return x * scale


class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int, drop: float):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.SiLU(inplace=True)]
        layers += [
            nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.SiLU(inplace=True),
            SqueezeExcitation(hidden, max(1, cin // 4)),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.block = nn.Sequential(*layers)
        self.use_residual = stride == 1 and cin == cout
        self.stochastic_depth = StochasticDepth(drop)

    def forward(self, x):
        out = self.block(x)
        if self.use_residual:
            out = self.stochastic_depth(out) + x
        return out


class EfficientNet(nn.Module):
    # (expand, kernel, stride, cin, cout, repeats), EfficientNet-B0's first stages, narrowed
    SETTINGS = ((1, 3, 1, 8, 8, 1), (6, 3, 2, 8, 12, 2), (6, 5, 2, 12, 16, 2))

    def __init__(self, classes: int = 10):
        super().__init__()
        layers: list[nn.Module] = [nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.SiLU())]
        total = sum(s[-1] for s in self.SETTINGS)
        k = 0
        for expand, kernel, stride, cin, cout, n in self.SETTINGS:
            for r in range(n):
                layers.append(MBConv(cin if r == 0 else cout, cout, kernel, stride if r == 0 else 1, expand, 0.2 * k / total))
                k += 1
        layers.append(nn.Sequential(nn.Conv2d(16, 64, 1, bias=False), nn.BatchNorm2d(64), nn.SiLU()))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# ---------------------------------------------------------------------------
# transformers


class TransformerEncoder(nn.Module):
    """Two ``nn.TransformerEncoderLayer``: post-norm with ReLU, pre-norm with GELU (erf)."""

    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.post = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.1, batch_first=True)
        self.pre = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.1, activation="gelu", batch_first=True, norm_first=True)

    def forward(self, x):
        return self.pre(self.post(x))


class MultiheadSelfAttention(nn.Module):
    """``nn.MultiheadAttention``: self-attention returning the head-averaged weights too,
    and cross-attention with a key padding mask."""

    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x, memory):
        y, weights = self.self_attn(x, x, x, need_weights=True)
        padding = torch.zeros(memory.shape[:2], dtype=torch.bool, device=memory.device)
        padding[:, -2:] = True  # the last two memory positions are padding
        z, _ = self.cross_attn(y, memory, memory, key_padding_mask=padding, need_weights=False)
        return z, weights


class ScaledDotProductAttention(nn.Module):
    """``F.scaled_dot_product_attention`` without a mask, with ``is_causal``, and with a
    boolean attention mask."""

    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(3 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        plain = F.scaled_dot_product_attention(q, k, v)
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        band = torch.ones(t, t, dtype=torch.bool, device=x.device).tril(1).triu(-1)  # attend to neighbours only
        banded = F.scaled_dot_product_attention(q, k, v, attn_mask=band)
        y = torch.cat([plain, causal, banded], dim=-1).transpose(1, 2).reshape(b, t, 3 * d)
        return self.out(y)


class EmbeddingModel(nn.Module):
    """Token embedding + learned positional embedding (added), LayerNorm, both GELU forms."""

    def __init__(self, vocab: int = 50, d: int = 32, max_len: int = 16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.norm(self.tok(ids) + self.pos(positions))
        h = F.gelu(self.fc1(h))  # erf form
        return F.gelu(self.fc2(h), approximate="tanh")


class GPTBlock(nn.Module):
    """A GPT-2 decoder block: pre-LayerNorm, causal self-attention (fused qkv, heads split
    by view/transpose, scaled_dot_product_attention), MLP with tanh GELU, residuals."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.attn(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, layers: int = 2, max_len: int = 16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_len, d)
        self.blocks = nn.Sequential(*(GPTBlock(d, heads) for _ in range(layers)))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, ids):
        pos = torch.arange(0, ids.shape[1], dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        return self.lm_head(self.ln_f(self.blocks(x)))


# ---------------------------------------------------------------------------
# 1-D convolutions, transposed convolutions, upsampling, padding


class Conv1dNet(nn.Module):
    def __init__(self, channels: int = 4, classes: int = 5):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(channels, 16, 5, padding=2),
            nn.BatchNorm1d(16),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(16, 16, 3, stride=2, dilation=2, padding=2, groups=4),
            nn.BatchNorm1d(16),
            nn.ReLU(),
            nn.Conv1d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.body(x), 1))


class ConvTransposeDecoder(nn.Module):
    """A DCGAN-style decoder: linear -> view -> ConvTranspose2d x3 (stride 2, output
    padding, groups) with batch norm, ReLU, sigmoid."""

    def __init__(self, latent: int = 16):
        super().__init__()
        self.fc = nn.Linear(latent, 16 * 4 * 4)
        self.up = nn.Sequential(
            nn.ConvTranspose2d(16, 16, 4, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1, groups=2),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.ConvTranspose2d(8, 3, 3, stride=1, padding=1),
            nn.Sigmoid(),
        )

    def forward(self, z):
        return self.up(self.fc(z).view(-1, 16, 4, 4))


class Upsampling(nn.Module):
    """Nearest (scale 2), bilinear (align_corners False and True, to a given size)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)

    def forward(self, x):
        h = self.conv(x)
        a = self.nearest(h)
        b = self.bilinear(h)
        c = F.interpolate(h, size=(2 * h.shape[2], 2 * h.shape[3]), mode="bilinear", align_corners=True)
        return a + b * c


class Padding(nn.Module):
    """Constant (zero and non-zero, asymmetric), reflect and replicate padding."""

    def __init__(self):
        super().__init__()
        self.zero = nn.ZeroPad2d((1, 2, 0, 1))
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        a = self.conv(self.zero(x))  # 3x(H+1)x(W+3) -> 4x(H-1)x(W+1)
        b = F.pad(a, (1, 0, 2, 1), mode="constant", value=0.5)
        c = F.pad(a, (1, 0, 2, 1), mode="reflect")
        d = F.pad(a, (1, 0, 2, 1), mode="replicate")
        return b + c * d


# ---------------------------------------------------------------------------
# common tensor ops, in a few small models so a missing op names itself


class TensorShapeOps(nn.Module):
    """cat, stack, split, chunk, slicing with steps and negative bounds."""

    def forward(self, x):  # x: (b, 8, 12)
        a, b = torch.chunk(x, 2, dim=1)
        c, d, e = torch.split(x, [3, 4, 5], dim=2)
        s = torch.stack([a, b * 2.0], dim=1)  # (b, 2, 4, 12)
        strided = x[:, ::2, 1::3]  # (b, 4, 4)
        tail = x[:, -3:, :-2:2]  # (b, 3, 5)
        return torch.cat([c, e[..., :3] * d[..., 1:]], dim=-1), s.sum(1), strided, tail


class TensorIndexOps(nn.Module):
    """index_select, gather, where, masked_fill."""

    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.tensor([3, 0, 2, 2, 5], dtype=torch.int64))

    def forward(self, x, idx):  # x: (b, 6, 10), idx: (b, 6, 4) int64 in [0, 10)
        picked = torch.index_select(x, 1, self.rows)  # (b, 5, 10)
        gathered = torch.gather(x, 2, idx)  # (b, 6, 4)
        positive = torch.where(x > 0, x, 0.1 * x)
        masked = x.masked_fill(x.abs() < 0.5, -1.0)
        return picked, gathered, positive + masked


class TensorMathOps(nn.Module):
    """clamp, cumsum, mean/var/std, comparisons and logical ops, casts."""

    def forward(self, x, y):  # x, y: (b, 6, 10)
        clamped = torch.clamp(x, -0.5, 0.75) + x.clamp(min=0.0)
        running = torch.cumsum(x, dim=2)
        mean = x.mean(dim=2, keepdim=True)
        var = x.var(dim=2, keepdim=True)  # unbiased
        std = x.std(dim=1, unbiased=False)
        both = torch.logical_and(x > y, x >= 0) | torch.logical_not(y < -0.5)
        either = torch.logical_or(x == x.round(), x != y) ^ (x <= y)
        ints = (x * 4).to(torch.int32)  # truncating cast
        counts = both.to(torch.int64).sum(dim=2)
        as_float = ints.float() + either.float() + counts.unsqueeze(-1).to(x.dtype)
        return clamped + running, (x - mean) / (var + 1.0).sqrt(), std, counts, as_float


class TensorSelectOps(nn.Module):
    """argmax, topk (static k), max over a dim with its indices."""

    def forward(self, x):  # x: (b, 6, 10)
        best = torch.argmax(x, dim=2)
        values, indices = torch.topk(x, 3, dim=-1)
        peak, where = x.max(dim=1)
        return best, values, indices, peak, where


class TensorFactoryOps(nn.Module):
    """arange, full, zeros, ones (and the *_like forms) mixed with an input."""

    def forward(self, x):  # x: (b, 6, 10)
        ramp = torch.arange(10, dtype=torch.float32, device=x.device)  # (10,)
        steps = torch.arange(1, 13, 2, device=x.device)  # int64 (6,)
        base = torch.full((6, 10), 0.25, device=x.device) + torch.zeros(6, 10, device=x.device) - torch.ones(6, 1, device=x.device)
        like = torch.ones_like(x) * 2.0 + torch.zeros_like(x)
        return x * ramp + base + like * steps.view(6, 1).to(x.dtype)


# ---------------------------------------------------------------------------
# the zoo


def _entry(name, family, make, *inputs, description="", tags=()):
    return ZooEntry(name, family, make, tuple(inputs), description or (make.__doc__ or "").strip().split("\n")[0],
                    frozenset(tags))


def _img(c: int = 3, size: int = 32, batch: int = 2) -> InputSpec:
    return InputSpec((batch, c, size, size))


ZOO: dict[str, ZooEntry] = {
    e.name: e
    for e in [
        _entry("mlp", "MLP", lambda: _seeded(1, MLP), InputSpec((4, 64)),
               description="Linear-ReLU x2, Linear (64-128-64-10)", tags=("dynamic_batch",)),
        _entry("resnet18", "ResNet", lambda: _seeded(2, resnet18), _img(),
               description="BasicBlock ResNet, widths 8-64, layers 2-1-1-1, 32x32", tags=("dynamic_batch",)),
        _entry("resnet50", "ResNet", lambda: _seeded(3, resnet50), _img(),
               description="Bottleneck ResNet, widths 8-64 (x4), layers 2-1-1-1, 32x32", tags=("dynamic_batch",)),
        _entry("mobilenet_v2", "MobileNetV2", lambda: _seeded(4, MobileNetV2), _img(),
               description="inverted residuals: expand 1x1, depthwise 3x3, ReLU6, linear bottleneck"),
        _entry("squeezenet", "SqueezeNet", lambda: _seeded(5, SqueezeNet), _img(),
               description="Fire modules (concat of 1x1 and 3x3 expands), ceil-mode max pool"),
        _entry("shufflenet_v2", "ShuffleNet", lambda: _seeded(6, ShuffleNetV2), _img(),
               description="channel shuffle (view/transpose), chunk, split, depthwise conv"),
        _entry("efficientnet", "EfficientNet", lambda: _seeded(7, EfficientNet), _img(),
               description="MBConv: SiLU, squeeze-excitation (sigmoid gate), stochastic depth (eval)"),
        _entry("transformer_encoder", "Transformer", lambda: _seeded(8, TransformerEncoder), InputSpec((2, 10, 32)),
               description="nn.TransformerEncoderLayer x2 (post-norm ReLU, pre-norm GELU)"),
        _entry("multihead_attention", "Transformer", lambda: _seeded(9, MultiheadSelfAttention),
               InputSpec((2, 10, 32)), InputSpec((2, 7, 32)),
               description="nn.MultiheadAttention: self (with weights), cross (key padding mask)"),
        _entry("sdpa", "Transformer", lambda: _seeded(10, ScaledDotProductAttention), InputSpec((2, 10, 32)),
               description="F.scaled_dot_product_attention: plain, is_causal, boolean mask"),
        _entry("embedding", "Transformer", lambda: _seeded(11, EmbeddingModel), InputSpec((2, 12), torch.int64, 50),
               description="nn.Embedding + positional add, LayerNorm, GELU (erf and tanh)"),
        _entry("gpt", "Transformer", lambda: _seeded(12, GPT), InputSpec((2, 16), torch.int64, 64),
               description="GPT-2 style: embeddings, 2 causal decoder blocks, tied lm head"),
        _entry("conv1d", "Conv1d", lambda: _seeded(13, Conv1dNet), InputSpec((2, 4, 64)),
               description="Conv1d (padding, stride, dilation, groups), BatchNorm1d, MaxPool1d, AdaptiveAvgPool1d"),
        _entry("conv_transpose", "ConvTranspose2d", lambda: _seeded(14, ConvTransposeDecoder), InputSpec((2, 16)),
               description="DCGAN-style decoder: ConvTranspose2d (stride 2, output padding, groups)"),
        _entry("upsample", "Upsampling", lambda: _seeded(15, Upsampling), _img(size=12),
               description="nearest x2, bilinear x2 (align_corners False / True)"),
        _entry("padding", "Padding", lambda: _seeded(16, Padding), _img(size=12),
               description="ZeroPad2d, constant (value 0.5), reflect, replicate pad"),
        _entry("tensor_shape_ops", "Tensor ops", lambda: _seeded(17, TensorShapeOps), InputSpec((2, 8, 12)),
               description="cat, stack, split, chunk, strided and negative slicing"),
        _entry("tensor_index_ops", "Tensor ops", lambda: _seeded(18, TensorIndexOps),
               InputSpec((2, 6, 10)), InputSpec((2, 6, 4), torch.int64, 10),
               description="index_select, gather, where, masked_fill"),
        _entry("tensor_math_ops", "Tensor ops", lambda: _seeded(19, TensorMathOps),
               InputSpec((2, 6, 10)), InputSpec((2, 6, 10)),
               description="clamp, cumsum, mean/var/std, comparisons, logical ops, casts"),
        _entry("tensor_select_ops", "Tensor ops", lambda: _seeded(20, TensorSelectOps), InputSpec((2, 6, 10)),
               description="argmax, topk (static k), max with indices"),
        _entry("tensor_factory_ops", "Tensor ops", lambda: _seeded(21, TensorFactoryOps), InputSpec((2, 6, 10)),
               description="arange, full, zeros, ones, *_like"),
    ]
}


def resnet50_full() -> ZooEntry:
    """A full-size ResNet-50 (widths 64-512, layers 3-4-6-3, 25.6M parameters) for the
    import-time vs build-time check; 64x64 input to keep the compiled run short."""
    return _entry("resnet50_full", "ResNet", lambda: _seeded(3, lambda: ResNet(Bottleneck, (3, 4, 6, 3), (64, 128, 256, 512), 1000)),
                  _img(size=64, batch=1), description="ResNet-50 at full width and depth, 64x64")


__all__ = ["ZOO", "InputSpec", "ZooEntry", "random_inputs", "randomize_batch_norm", "resnet50_full"]

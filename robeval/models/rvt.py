"""RVT, "Towards Robust Vision Transformer" (Mao et al., CVPR 2022), built from the paper and the
facts of the authors' released definition, with their parameter names so that their checkpoints
(``{'model': state_dict}``) load strictly.

The architecture, its parameter counts and the 91.8M the paper lists for RVT-B* (masks in all 12 blocks;
``masked_block=12`` loads such a checkpoint): docs/research/rvt.md.  ``--adaptive`` does not apply: the
mask is a learned constant, not a data-dependent weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from ..model_config import IMAGENET_CONFIG
from .catalog import DIGITS_CFG
from .wrapper import set_config

PLAIN_MLP_WIDTH = 768  # the authors' RVT-B blocks use ViT's MLP


@dataclass(frozen=True)
class RVTConfig:
    base_dims: tuple[int, ...]
    depth: tuple[int, ...]
    heads: tuple[int, ...]
    masked_block: int = 0  # the first blocks of stage 0 with a learned attention mask (RVT*)
    mlp_ratio: float = 4.0
    stem: str = "imagenet"  # "imagenet" (224 px) or "digits" (8x8 grey images)
    in_chans: int = 3
    num_classes: int = 1000
    grid: int = 14  # tokens per side in stage 0

    def width(self, stage: int) -> int:
        return self.base_dims[stage] * self.heads[stage]


class Stem(nn.Module):
    def __init__(self, cfg: RVTConfig) -> None:
        super().__init__()
        if cfg.stem == "imagenet":
            self.proj = nn.Sequential(
                nn.Conv2d(cfg.in_chans, 32, 7, stride=2, padding=2),
                nn.BatchNorm2d(32),
                nn.MaxPool2d(3, stride=2, padding=1),
                nn.Conv2d(32, cfg.width(0), 4, stride=4),
            )
        else:  # 8x8 digits: one 2x2 patch convolution to a 4x4 grid
            self.proj = nn.Sequential(nn.Conv2d(cfg.in_chans, cfg.width(0), 2, stride=2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class RVTAttention(nn.Module):
    def __init__(self, dim: int, heads: int, tokens: int | None) -> None:
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        if tokens is not None:
            self.att_mask = nn.Parameter(torch.zeros(heads, tokens, tokens))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        logits = (q @ k.transpose(-2, -1)) * self.scale
        if hasattr(self, "att_mask"):
            logits = logits * torch.sigmoid(self.att_mask)
        return self.proj((logits.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))


class ConvMlp(nn.Module):
    """The MLP on the token grid: 1x1 conv, BN, GELU, depthwise 3x3, BN, GELU, 1x1 conv, BN."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.bn1 = nn.Conv2d(dim, hidden, 1), nn.BatchNorm2d(hidden)
        self.dwconv, self.bn2 = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden), nn.BatchNorm2d(hidden)
        self.fc2, self.bn3 = nn.Conv2d(hidden, dim, 1), nn.BatchNorm2d(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        side = int(math.isqrt(n))
        grid = x.transpose(1, 2).reshape(b, c, side, side)
        grid = F.gelu(self.bn1(self.fc1(grid)))
        grid = F.gelu(self.bn2(self.dwconv(grid)))
        grid = self.bn3(self.fc2(grid))
        return grid.flatten(2).transpose(1, 2)


class PlainMlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float, mask_tokens: int | None) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = RVTAttention(dim, heads, mask_tokens)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = PlainMlp(dim, hidden) if dim == PLAIN_MLP_WIDTH else ConvMlp(dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Stage(nn.Module):
    def __init__(self, cfg: RVTConfig, stage: int, tokens: int) -> None:
        super().__init__()
        masked = cfg.masked_block if stage == 0 else 0
        self.blocks = nn.ModuleList(
            Block(cfg.width(stage), cfg.heads[stage], cfg.mlp_ratio, tokens if i < masked else None)
            for i in range(cfg.depth[stage])
        )

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        b, c, h, w = grid.shape
        x = grid.flatten(2).transpose(1, 2)
        for block in self.blocks:
            x = block(x)
        return x.transpose(1, 2).reshape(b, c, h, w)


class Pool(nn.Module):
    """Between stages: a grouped 3x3 stride-2 convolution that doubles the width and halves the grid."""

    def __init__(self, dim_in: int, dim_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(dim_in, dim_out, 3, stride=2, padding=1, groups=dim_in)

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        return self.conv(grid)


class RVT(nn.Module):
    def __init__(self, cfg: RVTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.num_classes = cfg.num_classes
        self.patch_embed = Stem(cfg)
        self.transformers = nn.ModuleList(Stage(cfg, s, cfg.grid**2) for s in range(len(cfg.depth)))
        self.pools = nn.ModuleList(Pool(cfg.width(s), cfg.width(s + 1)) for s in range(len(cfg.depth) - 1))
        self.norm = nn.LayerNorm(cfg.width(len(cfg.depth) - 1), eps=1e-6)
        self.head = nn.Linear(cfg.width(len(cfg.depth) - 1), cfg.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grid = self.patch_embed(x)
        for s, stage in enumerate(self.transformers):
            grid = stage(grid)
            if s < len(self.pools):
                grid = self.pools[s](grid)
        return self.head(self.norm(grid.mean(dim=(2, 3))))


RVT_SIZES = {  # the authors' rvt_tiny / rvt_small / rvt_base; the _plus versions add masked_block (.catalog)
    "tiny": RVTConfig(base_dims=(32, 32), depth=(10, 2), heads=(6, 12)),
    "small": RVTConfig(base_dims=(64,), depth=(12,), heads=(6,)),
    "base": RVTConfig(base_dims=(64,), depth=(12,), heads=(12,)),
}
DIGITS_RVT = RVTConfig(
    base_dims=(16,), depth=(3,), heads=(3,), stem="digits", in_chans=1, num_classes=10, grid=4, mlp_ratio=2.0
)  # the digits DeiT's width (48), depth and heads; a 2x2 patch stem


def rvt_network(size: str, masked_block: int = 0) -> nn.Module:
    """The authors' RVT at ``size`` (``masked_block`` > 0: the _plus version), with their evaluation transform."""
    return set_config(RVT(replace(RVT_SIZES[size], masked_block=masked_block)), IMAGENET_CONFIG)


def digits_rvt(plus: bool) -> nn.Module:
    """RVT for 8x8 digits (``plus``: masks in blocks 0-1)."""
    return set_config(RVT(replace(DIGITS_RVT, masked_block=2 if plus else 0)), DIGITS_CFG)

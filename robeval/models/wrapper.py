"""The module every robeval model is: [0,1] NCHW images in, logits out, normalization inside."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class ModelMeta:
    """What a loaded model is: its registry name, preprocessing and weight provenance."""

    name: str
    family: str
    input_size: tuple[int, int, int]
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    interpolation: str = "bicubic"
    crop_pct: float = 0.875
    weights: str = "random"
    checkpoint: str | None = None
    checkpoint_sha256: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


class NormalizedModel(nn.Module):
    """Wraps a network that expects normalized input so that callers pass [0,1] pixels.

    ``net`` stays reachable for protocols that attack the normalized tensor (``nielsen2024``).
    """

    def __init__(self, net: nn.Module, meta: ModelMeta) -> None:
        super().__init__()
        self.net = net
        self.meta = meta
        shape = (1, len(meta.mean), 1, 1)
        self.register_buffer("mean", torch.tensor(meta.mean, dtype=torch.float32).view(shape), persistent=False)
        self.register_buffer("std", torch.tensor(meta.std, dtype=torch.float32).view(shape), persistent=False)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean.to(x.dtype)) / self.std.to(x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.normalize(x))

"""The module every robeval model is: [0,1] NCHW images in, logits out, normalization inside."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..model_config import ModelConfig


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
    source: str | None = None  # the user's code or module it came from (none for a registered model)
    params: int | None = None
    recipe: dict[str, str] | None = None  # the training recipe its weights file records (None: unknown)
    code: dict[str, str] | None = None  # the user's code file it was built by: path and SHA-256 (a reader of
    # the run builds it again only from that file unchanged, or from code its command line names)


def meta_from_config(name: str, family: str, config: ModelConfig, **fields: Any) -> ModelMeta:
    """A model's meta from its facts (every field of ``config`` filled) and ``fields`` (weights, options...)."""
    assert config.input_size and config.num_classes and config.mean and config.std, f"{name}: facts missing"
    return ModelMeta(
        name=name,
        family=family,
        input_size=config.input_size,
        num_classes=config.num_classes,
        mean=config.mean,
        std=config.std,
        interpolation=str(config.interpolation),
        crop_pct=float(config.crop_pct or 1.0),
        **fields,
    )


class NormalizedModel(nn.Module):
    """Wraps a network that expects normalized input so that callers pass [0,1] pixels.

    ``net`` stays reachable for protocols that attack the normalized tensor (``nielsen2024``).
    """

    mean: torch.Tensor  # buffers: not saved with the state dict (the meta holds them)
    std: torch.Tensor

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


def set_config(net: nn.Module, cfg: dict[str, Any]) -> nn.Module:
    """Give ``net`` the timm-style ``pretrained_cfg`` (mean, std, input size, ...) that every builder
    provides and :func:`config_of` reads."""
    object.__setattr__(net, "pretrained_cfg", dict(cfg))  # plain data: not a parameter, buffer or submodule
    return net


def config_of(net: nn.Module) -> dict[str, Any]:
    """A built network's ``pretrained_cfg`` (a copy; empty when it has none; a :class:`ModelConfig`
    set there read as its fields)."""
    cfg = getattr(net, "pretrained_cfg", None) or {}
    return cfg.as_cfg() if isinstance(cfg, ModelConfig) else dict(cfg)

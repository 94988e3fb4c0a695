"""The module every robeval model is: [0,1] NCHW images in, logits out, normalization inside."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, cast

import torch
from torch import nn

from ..model_config import ModelConfig


@dataclass
class ModelMeta:
    """What a loaded model is: its registry name, its image facts (``config``, every field filled) and
    weight provenance."""

    name: str
    family: str
    config: ModelConfig
    weights: str = "random"
    checkpoint: str | None = None
    checkpoint_sha256: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    source: str | None = None  # the user's code or module it came from (none for a registered model)
    params: int | None = None
    recipe: dict[str, str] | None = None  # the training recipe its weights file records (None: unknown)
    code: dict[str, str] | None = None  # the user's code file it was built by: path and SHA-256 (a reader of
    # the run builds it again only from that file unchanged, or from code its command line names)

    def __post_init__(self) -> None:
        c = self.config
        assert c.input_size and c.num_classes and c.mean and c.std, f"{self.name}: facts missing"

    # its image facts as the data (robeval.data.examples.ImageSpec) and the checks read them
    @property
    def input_size(self) -> tuple[int, int, int]:
        return cast(tuple[int, int, int], self.config.input_size)

    @property
    def num_classes(self) -> int:
        return cast(int, self.config.num_classes)

    @property
    def interpolation(self) -> str:
        return str(self.config.interpolation)

    @property
    def crop_pct(self) -> float:
        return float(self.config.crop_pct or 1.0)

    def record(self) -> dict[str, Any]:
        """What a run stores of it (run.json's ``models.<name>``): the image facts flat after the family."""
        stored = asdict(self)
        facts = {**stored.pop("config"), "interpolation": self.interpolation, "crop_pct": self.crop_pct}
        return {"name": stored.pop("name"), "family": stored.pop("family"), **facts, **stored}


def parameter_count(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


class NormalizedModel(nn.Module):
    """Wraps a network that expects normalized input so that callers pass [0,1] pixels; in eval mode,
    without parameter gradients (attacks need input gradients only).

    ``net`` stays reachable for protocols that attack the normalized tensor (``nielsen2024``).
    """

    mean: torch.Tensor  # buffers: not saved with the state dict (the meta holds them)
    std: torch.Tensor

    def __init__(self, net: nn.Module, meta: ModelMeta) -> None:
        super().__init__()
        self.net = net
        self.meta = meta
        for name, values in (("mean", meta.config.mean), ("std", meta.config.std)):
            self.register_buffer(name, torch.tensor(values, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)
        self.eval().requires_grad_(False)

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

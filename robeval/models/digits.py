"""Digits-sized DeiT models (8x8 grey images, patch 2, 10 classes) for the embedded demo.

They run the same code paths as the ImageNet models (timm ``VisionTransformer`` and
:class:`EllipticalAttention`), only smaller, so the whole suite can be exercised on a CPU.
"""

from __future__ import annotations

from typing import Any

from timm.models.vision_transformer import VisionTransformer
from torch import nn

from ..model_config import ModelConfig
from .attention.elliptical import ADAPTIVE_OPTIONS, ELLIPTICAL_OPTIONS, EllipticalAttention, make_elliptical
from .registry import register_model
from .weights import embedded_weights
from .wrapper import set_config

DIGITS_ARCH: dict[str, Any] = dict(
    img_size=8, patch_size=2, in_chans=1, num_classes=10, embed_dim=48, depth=3, num_heads=3, mlp_ratio=2.0
)
DIGITS_CFG: dict[str, Any] = dict(
    input_size=(1, 8, 8),
    mean=(0.5,),
    std=(0.5,),
    interpolation="nearest",
    crop_pct=1.0,
    num_classes=10,
)
DIGITS = ModelConfig.from_cfg(DIGITS_CFG)  # every digits model's facts


def digits_vit(elliptical: bool = False, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT; with ``elliptical=True`` blocks 1.. use elliptical attention.

    ``drop_path_rate`` only matters in training (it adds no parameters).
    """
    if elliptical:
        net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate, attn_layer=EllipticalAttention)
        make_elliptical(net, **options)
    else:
        net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate)
    return as_digits(net)


def as_digits(net: nn.Module) -> nn.Module:
    """A network built for the digits demo, with the demo's preprocessing (every digits model's)."""
    return set_config(net, DIGITS_CFG)


def register_digits(name: str, family: str, description: str, **facts):
    """Register a digits demo model: its weights ship embedded as ``robeval/zoo/<name>.safetensors``."""
    return register_model(
        name, family=family, weights=embedded_weights(name), config=DIGITS, description=description, **facts
    )


DIGITS_DEIT = "(patch 2, dim 48, depth 3, 3 heads)"


@register_digits("digits-deit", "deit", f"DeiT for 8x8 digits {DIGITS_DEIT}")
def build_digits_deit() -> nn.Module:
    return digits_vit()


@register_digits(
    "digits-deit-elliptical",
    "deit-elliptical",
    f"DeiT-Elliptical for 8x8 digits {DIGITS_DEIT}",
    options=ELLIPTICAL_OPTIONS,
    adaptive=ADAPTIVE_OPTIONS,
)
def build_digits_elliptical(**options) -> nn.Module:
    return digits_vit(elliptical=True, **options)

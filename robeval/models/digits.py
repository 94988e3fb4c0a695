"""Digits-sized DeiT models (8x8 grey images, patch 2, 10 classes) for the embedded demo.

They run the same code paths as the ImageNet models (timm ``VisionTransformer`` and
:class:`EllipticalAttention`), only smaller, so the whole suite can be exercised on a CPU.  Their facts
(:data:`~.catalog.DIGITS`) and registrations are data in :mod:`.catalog`.
"""

from __future__ import annotations

from typing import Any

from timm.models.vision_transformer import VisionTransformer
from torch import nn

from .attention.elliptical import EllipticalAttention, make_elliptical
from .catalog import DIGITS, DIGITS_CFG
from .wrapper import set_config

__all__ = ["DIGITS", "DIGITS_ARCH", "DIGITS_CFG", "as_digits", "digits_vit"]  # the facts: .catalog

DIGITS_ARCH: dict[str, Any] = dict(
    img_size=8, patch_size=2, in_chans=1, num_classes=10, embed_dim=48, depth=3, num_heads=3, mlp_ratio=2.0
)


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

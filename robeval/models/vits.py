"""The ViT builders (timm's ``VisionTransformer``, randomly initialised): DeiT-Elliptical at ImageNet
sizes, the digits demo's DeiTs, the small data sets' ViT-Lite-7/4, each also with any registered
attention kind.  Their registrations are data (:mod:`.catalog`); timm's own networks are built by
:func:`.hub.timm_network`, the attention layers are :mod:`.attention`'s.

The models, their papers and weights: docs/models.md, section The model list.  The digits demos run
the same code paths as the ImageNet models, only smaller (:data:`~.catalog.DIGITS`, :data:`DIGITS_ARCH`:
16 patches + a class token = 17 tokens), so the whole suite runs on a CPU.  A distilled DeiT averages
its two heads' logits at evaluation (timm's ``VisionTransformerDistilled`` in eval mode), so attacks see
one set of logits.  The shipped kinds' digits weights were trained by scripts/train_demo_variants.py
(the first five) and scripts/train_demo_models.py (the others, and the distilled DeiT, with hard
distillation from ``digits-deit``).  ViT-Lite-7/4 (Hassani et al. 2021) is a size chosen here: neither
paper publishes its small-image configuration in what could be read (CIFAR: 64 patches + a class
token = 65 tokens; MNIST's 28 x 28: 49 + 1 = 50).
"""

from __future__ import annotations

from typing import Any

import timm
from timm.models.deit import VisionTransformerDistilled
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from .attention.elliptical import EllipticalAttention, make_elliptical
from .attention.kinds import vit_with_attention
from .catalog import DIGITS_CFG, SMALL_DATA, small_config
from .wrapper import set_config

DIGITS_ARCH: dict[str, Any] = dict(
    img_size=8, patch_size=2, in_chans=1, num_classes=10, embed_dim=48, depth=3, num_heads=3, mlp_ratio=2.0
)
VIT_LITE_7_4: dict[str, Any] = dict(patch_size=4, embed_dim=256, depth=7, num_heads=4, mlp_ratio=2.0)


def elliptical_timm(arch: str, **options) -> nn.Module:
    """timm's ``arch`` with elliptical attention in blocks 1.. (the elliptical ``options``)."""
    net = timm.create_model(arch, pretrained=False, attn_layer=EllipticalAttention)
    return make_elliptical(net, **options)


def digits_vit(elliptical: bool = False, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT; with ``elliptical=True`` blocks 1.. use elliptical attention.

    ``drop_path_rate`` only matters in training (it adds no parameters).
    """
    if elliptical:
        net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate, attn_layer=EllipticalAttention)
        make_elliptical(net, **options)
    else:
        net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate)
    return set_config(net, DIGITS_CFG)


def digits_distilled_vit(drop_path_rate: float = 0.0) -> nn.Module:
    """An untrained distilled digits ViT (the digits DeiT plus a distillation token and head)."""
    return set_config(VisionTransformerDistilled(**DIGITS_ARCH, drop_path_rate=drop_path_rate), DIGITS_CFG)


def digits_variant_vit(kind: str, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT whose every block uses attention ``kind``."""
    net = vit_with_attention(kind, DIGITS_ARCH, drop_path_rate=drop_path_rate, **options)
    return set_config(net, DIGITS_CFG)


def small_arch(data: str) -> dict[str, Any]:
    side, channels, classes, _, _ = SMALL_DATA[data]
    return dict(VIT_LITE_7_4, img_size=side, in_chans=channels, num_classes=classes)


def small_vit(data: str, elliptical: bool = False, **options) -> nn.Module:
    """ViT-Lite-7/4 for ``data`` (random weights); ``elliptical``: elliptical attention in blocks 1.."""
    if not elliptical:
        return set_config(VisionTransformer(**small_arch(data)), small_config(data))
    net = VisionTransformer(**small_arch(data), attn_layer=EllipticalAttention)
    return set_config(make_elliptical(net, **options), small_config(data))


def small_vit_with_kind(data: str, kind: str, **options) -> nn.Module:
    """ViT-Lite-7/4 for ``data`` with attention ``kind`` in every block (random weights)."""
    return set_config(vit_with_attention(kind, small_arch(data), **options), small_config(data))

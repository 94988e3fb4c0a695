"""ViTs for the small published data sets: ``cifar10-vit``, ``cifar100-vit`` and ``mnist-vit``, each
with standard attention and with each attention the two papers compare on such data (``-elliptical``,
``-optimised``, ``-efficient``, ``-super``: the rows of Hosseini & Hosseini's Table 1, and the
Elliptical model).

Sizes chosen here: Hassani et al.'s ViT-Lite-7/4 ("Escaping the Big Data Paradigm with Compact
Transformers", 2021), a common from-scratch ViT for 32 px images: patch 4, width 256, 7 blocks,
4 heads, MLP ratio 2 (3.7 M parameters); CIFAR's 32 x 32 gives 64 patches + a class token = 65
tokens, MNIST's 28 x 28 (grey) 49 + 1 = 50.  Neither paper publishes its exact small-image
configuration in what could be read (Hosseini & Hosseini's Table 1 reports MNIST and CIFAR-100
with their attentions; the Elliptical paper has no CIFAR ViT): a checkpoint of another size is
refused with its first mismatching keys, as every ``--checkpoint`` is.

None has public weights: ``--checkpoint MODEL=PATH`` (a training checkpoint or a state dict of this
architecture) or ``--weights random``.  Inputs are [0, 1] images; normalisation (CIFAR's or MNIST's
mean and std) happens inside, as for every robeval model.  The digits demo versions of these
families are ``digits-deit`` and ``digits-deit-<kind>``.  The registrations (and the data sets' image
facts) are data: :mod:`.catalog`.
"""

from __future__ import annotations

from typing import Any

from timm.models.vision_transformer import VisionTransformer
from torch import nn

from .attention.elliptical import EllipticalAttention, make_elliptical
from .attention.kinds import vit_with_attention
from .catalog import SMALL_DATA, small_config
from .wrapper import set_config

VIT_LITE_7_4: dict[str, Any] = dict(patch_size=4, embed_dim=256, depth=7, num_heads=4, mlp_ratio=2.0)


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

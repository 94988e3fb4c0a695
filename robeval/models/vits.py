"""The ViT builders (timm's ``VisionTransformer``, randomly initialised): DeiT-Elliptical at ImageNet
sizes, the digits demo's DeiTs, the small data sets' ViT-Lite-7/4, each also with any registered
attention kind.  Their registrations are data (:mod:`.catalog`); timm's own networks are built by
:func:`.hub.timm_network`, the attention layers are :mod:`.attention`'s.

**The digits demo** (8x8 grey images, patch 2, 10 classes): the same code paths as the ImageNet
models (timm ``VisionTransformer`` and :class:`EllipticalAttention`), only smaller, so the whole suite
can be exercised on a CPU.  Their facts are :data:`~.catalog.DIGITS`.

**Distilled DeiT** (Touvron et al. 2021, the "Distill" row of the Elliptical paper's robustness table):
a DeiT with a second, distillation token and head; at evaluation the two heads' logits are averaged
(timm's ``VisionTransformerDistilled`` in eval mode), so attacks see one set of logits.  The digits
version was trained with hard distillation from ``digits-deit`` (scripts/train_demo_models.py).

**DeiT with every registered attention kind** (:mod:`robeval.models.attention.kinds`): the ImageNet
models ``deit-<size>-<kind>`` (:func:`~.attention.kinds.timm_with_attention`) and their digits demos
``digits-deit-<kind>``.  Kinds: Optimised / Efficient / Super (Hosseini & Hosseini 2024), RKDE and
MoM (Han et al. 2023), KDE, SPKDE, FourierFormer and RVT-style (the Elliptical authors' robustness
zoo), and every kind an installed plugin registers; each at the tiny, small and base sizes.  None
has public weights: ``--checkpoint`` loads a DeiT-training checkpoint (``{'model': state_dict}``)
strictly.  The digits demos have the architecture and preprocessing of ``digits-deit``
(:data:`DIGITS_ARCH`: 16 patches + a class token = 17 tokens); only the attention layer differs.
The shipped kinds' weights ship in ``robeval/zoo/<name>.safetensors`` (scripts/train_demo_variants.py
trained the first five, scripts/train_demo_models.py the others, both with the demo recipe of
:mod:`robeval.models.training`); ``robeval train-demo --model digits-deit-<kind>`` trains any kind's.
:func:`~.catalog.register_family` gives a kind's family.

**ViTs for the small published data sets**: ``cifar10-vit``, ``cifar100-vit`` and ``mnist-vit``, each
with standard attention and with each attention the two papers compare on such data (``-elliptical``,
``-optimised``, ``-efficient``, ``-super``: the rows of Hosseini & Hosseini's Table 1, and the
Elliptical model).  Sizes chosen here: Hassani et al.'s ViT-Lite-7/4 ("Escaping the Big Data Paradigm
with Compact Transformers", 2021), a common from-scratch ViT for 32 px images: patch 4, width 256,
7 blocks, 4 heads, MLP ratio 2 (3.7 M parameters); CIFAR's 32 x 32 gives 64 patches + a class token
= 65 tokens, MNIST's 28 x 28 (grey) 49 + 1 = 50.  Neither paper publishes its exact small-image
configuration in what could be read (Hosseini & Hosseini's Table 1 reports MNIST and CIFAR-100 with
their attentions; the Elliptical paper has no CIFAR ViT): a checkpoint of another size is refused
with its first mismatching keys, as every ``--checkpoint`` is.  None has public weights:
``--checkpoint MODEL=PATH`` (a training checkpoint or a state dict of this architecture) or
``--weights random``.  Inputs are [0, 1] images; normalisation (CIFAR's or MNIST's mean and std)
happens inside, as for every robeval model.
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

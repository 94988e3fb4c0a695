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
families are ``digits-deit`` and ``digits-deit-<kind>``.
"""

from __future__ import annotations

from typing import Any

from timm.models.vision_transformer import VisionTransformer
from torch import nn

from ..model_config import ModelConfig
from .attention.elliptical import EllipticalAttention, make_elliptical
from .attention.kinds import ATTENTION_KINDS, vit_with_attention
from .deit import register_elliptical
from .deit_attention import register_with_kind
from .registry import register_model
from .weights import NO_WEIGHTS
from .wrapper import set_config

VIT_LITE_7_4: dict[str, Any] = dict(patch_size=4, embed_dim=256, depth=7, num_heads=4, mlp_ratio=2.0)
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)

# data set -> (image side, channels, classes, mean, std)
SMALL_DATA: dict[str, tuple[int, int, int, tuple[float, ...], tuple[float, ...]]] = {
    "cifar10": (32, 3, 10, CIFAR_MEAN, CIFAR_STD),
    "cifar100": (32, 3, 100, CIFAR_MEAN, CIFAR_STD),
    "mnist": (28, 1, 10, MNIST_MEAN, MNIST_STD),
}


def small_arch(data: str) -> dict[str, Any]:
    side, channels, classes, _, _ = SMALL_DATA[data]
    return dict(VIT_LITE_7_4, img_size=side, in_chans=channels, num_classes=classes)


def small_config(data: str) -> dict[str, Any]:
    side, channels, classes, mean, std = SMALL_DATA[data]
    return dict(
        input_size=(channels, side, side), mean=mean, std=std, interpolation="nearest", crop_pct=1.0,
        num_classes=classes,
    )  # fmt: skip


def _register_standard(data: str) -> None:
    facts = ModelConfig.from_cfg(small_config(data))

    @register_model(
        f"{data}-vit",
        family="deit",
        weights=NO_WEIGHTS,
        config=facts,
        description=f"ViT-Lite-7/4 for {data} (standard attention)",
    )
    def build() -> nn.Module:
        return set_config(VisionTransformer(**small_arch(data)), small_config(data))

    @register_elliptical(
        f"{data}-vit-elliptical", f"ViT-Lite-7/4 for {data} with elliptical attention in blocks 1..6", facts
    )
    def build_elliptical(**options) -> nn.Module:
        net = VisionTransformer(**small_arch(data), attn_layer=EllipticalAttention)
        return set_config(make_elliptical(net, **options), small_config(data))


def _register_kind(data: str, kind_name: str) -> None:
    kind = ATTENTION_KINDS.get(kind_name)

    @register_with_kind(
        f"{data}-vit-{kind.name}",
        kind,
        f"ViT-Lite-7/4 for {data} with {kind.what} attention ({kind.source})",
        ModelConfig.from_cfg(small_config(data)),
    )
    def build(**options) -> nn.Module:
        return set_config(vit_with_attention(kind.name, small_arch(data), **options), small_config(data))


SMALL_KINDS = ("optimised", "efficient", "super")  # besides standard and elliptical

for _data in SMALL_DATA:
    _register_standard(_data)
    for _kind in SMALL_KINDS:
        _register_kind(_data, _kind)

"""Distilled DeiT (Touvron et al. 2021, the "Distill" row of the Elliptical paper's robustness table).

A DeiT with a second, distillation token and head; at evaluation the two heads' logits are averaged
(timm's ``VisionTransformerDistilled`` in eval mode), so attacks see one set of logits.  The digits
version was trained with hard distillation from ``digits-deit`` (scripts/train_demo_models.py).
"""

from __future__ import annotations

import timm
from timm.models.deit import VisionTransformerDistilled
from torch import nn

from .deit import timm_facts
from .digits import DIGITS_ARCH, as_digits, register_digits
from .registry import register_model
from .weights import timm_weights

DISTILLED_SIZES = ("tiny", "small", "base")


def _register(size: str) -> None:
    arch = f"deit_{size}_distilled_patch16_224"

    @register_model(
        f"deit-{size}-distilled",
        family="deit-distilled",
        weights=timm_weights(arch, "ImageNet-1k"),
        config=timm_facts(arch),
        description=f"timm {arch}: class and distillation heads averaged",
    )
    def build() -> nn.Module:
        return timm.create_model(arch, pretrained=False)


for _size in DISTILLED_SIZES:
    _register(_size)


def digits_distilled_vit(drop_path_rate: float = 0.0) -> nn.Module:
    """An untrained distilled digits ViT (the digits DeiT plus a distillation token and head)."""
    return as_digits(VisionTransformerDistilled(**DIGITS_ARCH, drop_path_rate=drop_path_rate))


@register_digits(
    "digits-deit-distilled", "deit-distilled", "distilled DeiT for 8x8 digits (teacher: digits-deit; heads averaged)"
)
def build_digits_distilled() -> nn.Module:
    return digits_distilled_vit()

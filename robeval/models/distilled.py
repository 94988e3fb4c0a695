"""Distilled DeiT (Touvron et al. 2021, the "Distill" row of the Elliptical paper's robustness table).

A DeiT with a second, distillation token and head; at evaluation the two heads' logits are averaged
(timm's ``VisionTransformerDistilled`` in eval mode), so attacks see one set of logits.  The digits
version was trained with hard distillation from ``digits-deit`` (scripts/train_demo_models.py).  The
ImageNet sizes are timm's (:func:`.deit.timm_network`); the registrations are data (:mod:`.catalog`).
"""

from __future__ import annotations

from timm.models.deit import VisionTransformerDistilled
from torch import nn

from .digits import DIGITS_ARCH, as_digits


def digits_distilled_vit(drop_path_rate: float = 0.0) -> nn.Module:
    """An untrained distilled digits ViT (the digits DeiT plus a distillation token and head)."""
    return as_digits(VisionTransformerDistilled(**DIGITS_ARCH, drop_path_rate=drop_path_rate))

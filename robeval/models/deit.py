"""DeiT (timm) and DeiT-Elliptical builders, and the ``timm:<arch>`` pass-through (their registrations
are data: :mod:`.catalog`)."""

from __future__ import annotations

import timm
from torch import nn

from ..core.errors import UserError
from .attention.elliptical import EllipticalAttention, make_elliptical
from .hub import timm_config
from .registry import ModelSpec
from .weights import timm_weights


def timm_network(arch: str) -> nn.Module:
    """timm's ``arch``, randomly initialised (DeiT, distilled DeiT)."""
    return timm.create_model(arch, pretrained=False)


def elliptical_timm(arch: str, **options) -> nn.Module:
    """timm's ``arch`` with elliptical attention in blocks 1.. (the elliptical ``options``)."""
    net = timm.create_model(arch, pretrained=False, attn_layer=EllipticalAttention)
    return make_elliptical(net, **options)


def timm_spec(arch: str) -> ModelSpec:
    """The spec of ``timm:<arch>``: any timm architecture, its facts timm's pretrained config."""
    if arch not in timm.list_models():
        hint = timm.list_models(f"*{arch}*")[:3]
        extra = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise UserError(f"unknown timm architecture {arch!r}{extra}")

    def build() -> nn.Module:
        return timm_network(arch)

    return ModelSpec(f"timm:{arch}", "timm", build, weights=timm_weights(arch), config=timm_config(arch))

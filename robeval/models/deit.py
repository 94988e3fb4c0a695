"""DeiT (timm) and DeiT-Elliptical at the tiny/small/base sizes, plus ``timm:<arch>`` pass-through."""

from __future__ import annotations

import timm
from torch import nn

from ..errors import UserError
from .hub import timm_pretrained
from .elliptical import ADAPTIVE_OPTIONS, ELLIPTICAL_OPTIONS, EllipticalAttention, make_elliptical
from .registry import ModelSpec, register_model, register_prefix

DEIT_SIZES = ("tiny", "small", "base")


def _register_deit(size: str) -> None:
    arch = f"deit_{size}_patch16_224"

    @register_model(
        f"deit-{size}",
        family="deit",
        weights=f"timm hub: {arch} (ImageNet-1k)",
        description=f"timm {arch}",
    )
    def build_deit(pretrained: bool = False) -> nn.Module:
        if pretrained:
            return timm_pretrained(arch)
        return timm.create_model(arch, pretrained=False)

    @register_model(
        f"deit-{size}-elliptical",
        family="deit-elliptical",
        weights="none public: --checkpoint",
        has_default_weights=False,
        options=ELLIPTICAL_OPTIONS,
        adaptive=ADAPTIVE_OPTIONS,
        description=f"{arch} with elliptical attention in blocks 1..11",
    )
    def build_elliptical(pretrained: bool = False, **options) -> nn.Module:
        net = timm.create_model(arch, pretrained=False, attn_layer=EllipticalAttention)
        return make_elliptical(net, **options)


for _size in DEIT_SIZES:
    _register_deit(_size)


@register_prefix("timm")
def _resolve_timm(arch: str) -> ModelSpec:
    if arch not in timm.list_models():
        hint = timm.list_models(f"*{arch}*")[:3]
        extra = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise UserError(f"unknown timm architecture {arch!r}{extra}")

    def build(pretrained: bool = False) -> nn.Module:
        return timm_pretrained(arch) if pretrained else timm.create_model(arch, pretrained=False)

    return ModelSpec(f"timm:{arch}", "timm", build, weights=f"timm hub: {arch}")

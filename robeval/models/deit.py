"""DeiT (timm) and DeiT-Elliptical at the tiny/small/base sizes, plus ``timm:<arch>`` pass-through."""

from __future__ import annotations

import timm
from torch import nn

from ..errors import UserError
from ..model_config import ModelConfig
from .attention.elliptical import ADAPTIVE_OPTIONS, ELLIPTICAL_OPTIONS, EllipticalAttention, make_elliptical
from .hub import timm_config
from .registry import ModelSpec, register_model, register_prefix
from .weights import NO_WEIGHTS, timm_weights

DEIT_SIZES = ("tiny", "small", "base")


def deit_arch(size: str) -> str:
    return f"deit_{size}_patch16_224"


def timm_facts(arch: str) -> ModelConfig:
    """The facts of a registered timm architecture (timm has a config for every one robeval registers)."""
    config = timm_config(arch)
    assert config is not None, f"timm has no pretrained config for {arch}"
    return config


def register_elliptical(name: str, description: str, config: ModelConfig):
    """Register an elliptical model (no public weights; the elliptical options, adaptive ones included)."""
    return register_model(
        name,
        family="deit-elliptical",
        weights=NO_WEIGHTS,
        config=config,
        options=ELLIPTICAL_OPTIONS,
        adaptive=ADAPTIVE_OPTIONS,
        description=description,
    )


def _register_deit(size: str) -> None:
    arch = deit_arch(size)
    facts = timm_facts(arch)

    @register_model(
        f"deit-{size}",
        family="deit",
        weights=timm_weights(arch, "ImageNet-1k"),
        config=facts,
        description=f"timm {arch}",
    )
    def build_deit() -> nn.Module:
        return timm.create_model(arch, pretrained=False)

    @register_elliptical(f"deit-{size}-elliptical", f"{arch} with elliptical attention in blocks 1..11", facts)
    def build_elliptical(**options) -> nn.Module:
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

    def build() -> nn.Module:
        return timm.create_model(arch, pretrained=False)

    return ModelSpec(f"timm:{arch}", "timm", build, weights=timm_weights(arch), config=timm_config(arch))

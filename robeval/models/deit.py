"""DeiT (timm) and DeiT-Elliptical at the tiny/small/base sizes, plus ``timm:<arch>`` pass-through."""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager

import timm
from torch import nn

from ..errors import UserError
from .elliptical import EllipticalAttention, make_elliptical
from .registry import ModelSpec, register_model, register_prefix

DEIT_SIZES = ("tiny", "small", "base")
ELLIPTICAL_OPTIONS = {"token_reduction": "mean", "grad_through_m": False}


HUB_HOST = ("huggingface.co", 443)


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub answers at all (so an offline machine fails fast, without retries)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    try:
        with socket.create_connection(HUB_HOST, timeout=timeout):
            return True
    except OSError:
        return False


@contextmanager
def _hub_offline(offline: bool):
    """Make huggingface_hub use its local cache only (no retries against an unreachable network)."""
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - timm depends on it
        yield
        return
    saved = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = saved or offline
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved


def _timm_pretrained(arch: str, **kwargs) -> nn.Module:
    """timm weights from the hub (or its local cache); otherwise a one-line error naming --checkpoint."""
    online = hub_reachable()
    try:
        with _hub_offline(not online):
            return timm.create_model(arch, pretrained=True, **kwargs)
    except Exception as exc:  # network, hub or cache errors all mean: no weights here
        reason = "offline and not in the local cache" if not online else (str(exc).splitlines()[0][:120] or type(exc).__name__)
        raise UserError(
            f"could not get pretrained weights for timm model {arch!r} ({reason}); "
            f"pass --checkpoint PATH with a local .pth/.safetensors file"
        ) from None


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
            return _timm_pretrained(arch)
        return timm.create_model(arch, pretrained=False)

    @register_model(
        f"deit-{size}-elliptical",
        family="deit-elliptical",
        weights="none public: --checkpoint",
        has_default_weights=False,
        options=ELLIPTICAL_OPTIONS,
        description=f"{arch} with elliptical attention in blocks 1..11",
    )
    def build_elliptical(pretrained: bool = False, token_reduction: str = "mean", grad_through_m: bool = False) -> nn.Module:
        net = timm.create_model(arch, pretrained=False, attn_layer=EllipticalAttention)
        return make_elliptical(net, token_reduction=token_reduction, grad_through_m=grad_through_m)


for _size in DEIT_SIZES:
    _register_deit(_size)


@register_prefix("timm")
def _resolve_timm(arch: str) -> ModelSpec:
    if arch not in timm.list_models():
        hint = timm.list_models(f"*{arch}*")[:3]
        extra = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise UserError(f"unknown timm architecture {arch!r}{extra}")

    def build(pretrained: bool = False) -> nn.Module:
        return _timm_pretrained(arch) if pretrained else timm.create_model(arch, pretrained=False)

    return ModelSpec(f"timm:{arch}", "timm", build, weights=f"timm hub: {arch}")

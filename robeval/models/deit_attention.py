"""DeiT with every registered attention kind (:mod:`robeval.models.attention.kinds`): the ImageNet
models ``deit-<size>-<kind>`` and their digits demos ``digits-deit-<kind>``.

Kinds: Optimised / Efficient / Super (Hosseini & Hosseini 2024; tiny and small), RKDE and MoM
(Han et al. 2023), KDE, SPKDE, FourierFormer and RVT-style (the Elliptical authors' robustness zoo);
tiny unless the kind says otherwise.  None has public weights: ``--checkpoint`` loads a DeiT-training
checkpoint (``{'model': state_dict}``) strictly.

The digits demos have the architecture and preprocessing of ``digits-deit``
(:data:`~robeval.models.digits.DIGITS_ARCH`: 8x8 grey images, patch 2, 16 patches + a class token =
17 tokens); only the attention layer differs.  Their weights ship in
``robeval/zoo/<name>.safetensors`` (scripts/train_demo_variants.py trained the first five,
scripts/train_demo_models.py the others, both with scripts/train_demo_zoo.py's recipe).
"""

from __future__ import annotations

from torch import nn

from .attention import variants  # noqa: F401  (registers the kinds: this order is the order of the models)

from .attention import robust as robust_attention  # noqa: F401  # isort: skip
from .attention import kernel as kernel_attention  # noqa: F401  # isort: skip
from .attention.kinds import ATTENTION_KINDS, AttentionKind, timm_with_attention, vit_with_attention
from .digits import DIGITS_ARCH, DIGITS_DEIT, as_digits, register_digits
from .registry import register_model
from .weights import NO_WEIGHTS


def digits_variant_vit(kind: str, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT whose every block uses attention ``kind``."""
    return as_digits(vit_with_attention(kind, DIGITS_ARCH, drop_path_rate=drop_path_rate, **options))


def register_with_kind(name: str, kind: AttentionKind, description: str):
    """Register a model whose attention is ``kind`` (no public weights; the kind's options)."""
    return register_model(
        name, family=f"deit-{kind.name}", weights=NO_WEIGHTS, options=kind.options, adaptive=kind.adaptive,
        description=description,
    )  # fmt: skip


def _register_imagenet(kind: AttentionKind, size: str) -> None:
    arch = f"deit_{size}_patch16_224"

    @register_with_kind(f"deit-{size}-{kind.name}", kind, f"{arch} with {kind.what} attention ({kind.source})")
    def build(**options) -> nn.Module:
        return timm_with_attention(kind.name, arch, **options)


def _register_digits(kind: AttentionKind) -> None:
    name = f"digits-deit-{kind.name}"

    @register_digits(
        name,
        f"deit-{kind.name}",
        f"digits DeiT with {kind.what} attention {DIGITS_DEIT}",
        options=kind.options,
        adaptive=kind.adaptive,
    )
    def build(**options) -> nn.Module:
        return digits_variant_vit(kind.name, **options)


for _kind in ATTENTION_KINDS.values():
    _register_digits(_kind)
for _kind in ATTENTION_KINDS.values():
    for _size in _kind.sizes:
        _register_imagenet(_kind, _size)

"""DeiT with every registered attention kind (:mod:`robeval.models.attention.kinds`): the ImageNet
models ``deit-<size>-<kind>`` and their digits demos ``digits-deit-<kind>``.

Kinds: Optimised / Efficient / Super (Hosseini & Hosseini 2024), RKDE and MoM (Han et al. 2023),
KDE, SPKDE, FourierFormer and RVT-style (the Elliptical authors' robustness zoo), and every kind an
installed plugin registers; each at the tiny, small and base sizes.  None has public weights:
``--checkpoint`` loads a DeiT-training checkpoint (``{'model': state_dict}``) strictly.

The digits demos have the architecture and preprocessing of ``digits-deit``
(:data:`~robeval.models.digits.DIGITS_ARCH`: 8x8 grey images, patch 2, 16 patches + a class token =
17 tokens); only the attention layer differs.  The shipped kinds' weights ship in
``robeval/zoo/<name>.safetensors`` (scripts/train_demo_variants.py trained the first five,
scripts/train_demo_models.py the others, both with the demo recipe of :mod:`robeval.models.training`);
``robeval train-demo --model digits-deit-<kind>`` trains any kind's.
"""

from __future__ import annotations

from torch import nn

from .attention import variants  # noqa: F401  (registers the kinds: this order is the order of the models)

from .attention import robust as robust_attention  # noqa: F401  # isort: skip
from .attention import kernel as kernel_attention  # noqa: F401  # isort: skip
from .attention.kinds import ATTENTION_KINDS, AttentionKind, timm_with_attention, vit_with_attention
from .deit import DEIT_SIZES, deit_arch, timm_facts
from .digits import DIGITS, DIGITS_ARCH, DIGITS_DEIT, as_digits
from .registry import register_model
from .weights import NO_WEIGHTS, embedded_weights


def digits_variant_vit(kind: str, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT whose every block uses attention ``kind``."""
    return as_digits(vit_with_attention(kind, DIGITS_ARCH, drop_path_rate=drop_path_rate, **options))


def register_with_kind(name: str, kind: AttentionKind, description: str, config, weights=NO_WEIGHTS):
    """Register a model whose attention is ``kind`` (the kind's options and package; no public weights
    unless given)."""
    return register_model(
        name, family=f"deit-{kind.name}", weights=weights, config=config, options=kind.options,
        adaptive=kind.adaptive, description=description, package=kind.package,
    )  # fmt: skip


def _register_imagenet(kind: AttentionKind, size: str) -> None:
    arch = deit_arch(size)

    @register_with_kind(
        f"deit-{size}-{kind.name}", kind, f"{arch} with {kind.what} attention ({kind.source})", timm_facts(arch)
    )
    def build(**options) -> nn.Module:
        return timm_with_attention(kind.name, arch, **options)


def _register_digits(kind: AttentionKind) -> None:
    """``digits-deit-<kind>``: the shipped kinds' weights are embedded; a plugin's come from train-demo."""
    name = f"digits-deit-{kind.name}"
    weights = embedded_weights(name) if kind.package == "robeval" else NO_WEIGHTS

    @register_with_kind(name, kind, f"digits DeiT with {kind.what} attention {DIGITS_DEIT}", DIGITS, weights)
    def build(**options) -> nn.Module:
        return digits_variant_vit(kind.name, **options)


def family_names(kind_name: str) -> list[str]:
    """The models a kind gives: its digits demo and its DeiT at every size."""
    return [f"digits-deit-{kind_name}", *(f"deit-{size}-{kind_name}" for size in DEIT_SIZES)]


def register_family(kind: AttentionKind) -> None:
    """Every model of ``kind`` (a kind registered after import: a plugin's)."""
    _register_digits(kind)
    for size in DEIT_SIZES:
        _register_imagenet(kind, size)


for _kind in ATTENTION_KINDS.values():
    _register_digits(_kind)
for _kind in ATTENTION_KINDS.values():
    for _size in DEIT_SIZES:
        _register_imagenet(_kind, _size)

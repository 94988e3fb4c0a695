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
``robeval train-demo --model digits-deit-<kind>`` trains any kind's.  The registrations are data
(:mod:`.catalog`: :func:`~.catalog.register_family` gives a kind's family); the builders are here and
in :mod:`.attention.kinds`.
"""

from __future__ import annotations

from torch import nn

from .attention.kinds import vit_with_attention
from .catalog import family_names, register_family
from .digits import DIGITS_ARCH, as_digits

__all__ = ["digits_variant_vit", "family_names", "register_family"]


def digits_variant_vit(kind: str, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT whose every block uses attention ``kind``."""
    return as_digits(vit_with_attention(kind, DIGITS_ARCH, drop_path_rate=drop_path_rate, **options))

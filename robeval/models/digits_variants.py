"""Digits-sized demo versions of the attention variants (Optimised / Efficient / Super, Hosseini &
Hosseini 2024) and of the robust-attention baselines (RKDE, MoM; Han et al. 2023).

Same architecture and preprocessing as ``digits-deit`` (:data:`~robeval.models.digits.DIGITS_ARCH`:
8x8 grey images, patch 2, so 16 patches + a class token = 17 tokens, which is Super's ``l``), only the
attention layer differs.  Weights ship in ``robeval/zoo/<name>.safetensors``, trained by
``scripts/train_demo_variants.py`` with the recipe of ``scripts/train_demo_zoo.py``.
"""

from __future__ import annotations

from timm.models.vision_transformer import VisionTransformer
from torch import nn

from .digits import DIGITS_ARCH, DIGITS_CFG, load_embedded
from .registry import register_model
from .robust_attention import MOM_OPTIONS, RKDE_OPTIONS, MoMAttention, RKDEAttention, set_robust_options
from .variants import VARIANTS, make_super

DIGITS_VARIANTS: dict[str, type[nn.Module]] = {**VARIANTS, "rkde": RKDEAttention, "mom": MoMAttention}
_OPTIONS = {"rkde": RKDE_OPTIONS, "mom": MOM_OPTIONS}


def digits_variant_vit(kind: str, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT whose every block uses attention ``kind`` (``optimised``, ``efficient``,
    ``super``, ``rkde`` or ``mom``); ``options`` are the RKDE/MoM options."""
    net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate, attn_layer=DIGITS_VARIANTS[kind])
    if kind == "super":
        make_super(net)
    if options:
        set_robust_options(net, **options)
    net.pretrained_cfg = dict(DIGITS_CFG)
    return net


def _register(kind: str) -> None:
    name = f"digits-deit-{kind}"

    @register_model(name, family=f"deit-{kind}", weights=f"embedded: robeval/zoo/{name}.safetensors",
                    options=_OPTIONS.get(kind), description=f"digits DeiT with {kind} attention (patch 2, dim 48, depth 3, 3 heads)")
    def build(pretrained: bool = False, **options) -> nn.Module:
        net = digits_variant_vit(kind, **options)
        return load_embedded(net, name) if pretrained else net


for _kind in DIGITS_VARIANTS:
    _register(_kind)

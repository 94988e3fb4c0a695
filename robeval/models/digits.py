"""Digits-sized DeiT models (8x8 grey images, patch 2, 10 classes) for the embedded demo.

They run the same code paths as the ImageNet models (timm ``VisionTransformer`` and
:class:`EllipticalAttention`), only smaller, so the whole suite can be exercised on a CPU.
"""

from __future__ import annotations

from timm.models.vision_transformer import VisionTransformer
from torch import nn

from ..errors import UserError
from ..zoo import zoo_path
from .checkpoint import load_state_dict_strict, read_checkpoint
from .elliptical import ADAPTIVE_OPTIONS, ELLIPTICAL_OPTIONS, EllipticalAttention, make_elliptical
from .registry import register_model

DIGITS_ARCH = dict(img_size=8, patch_size=2, in_chans=1, num_classes=10, embed_dim=48, depth=3, num_heads=3, mlp_ratio=2.0)
DIGITS_CFG = dict(
    input_size=(1, 8, 8), mean=(0.5,), std=(0.5,), interpolation="nearest", crop_pct=1.0, num_classes=10,
)


def digits_vit(elliptical: bool = False, drop_path_rate: float = 0.0, **options) -> nn.Module:
    """An untrained digits ViT; with ``elliptical=True`` blocks 1.. use elliptical attention.

    ``drop_path_rate`` only matters in training (it adds no parameters).
    """
    if elliptical:
        net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate, attn_layer=EllipticalAttention)
        make_elliptical(net, **options)
    else:
        net = VisionTransformer(**DIGITS_ARCH, drop_path_rate=drop_path_rate)
    net.pretrained_cfg = dict(DIGITS_CFG)
    return net


def load_embedded(net: nn.Module, name: str) -> nn.Module:
    path = zoo_path(name)
    if not path.exists():
        raise UserError(f"embedded checkpoint {path.name} is missing; run scripts/train_demo_models.py {name}")
    state, sha = read_checkpoint(path)
    load_state_dict_strict(net, state, name, f"embedded checkpoint {path.name}")
    net.embedded_checkpoint = (str(path), sha)
    return net


@register_model("digits-deit", family="deit", weights="embedded: robeval/zoo/digits-deit.safetensors",
                description="DeiT for 8x8 digits (patch 2, dim 48, depth 3, 3 heads)")
def build_digits_deit(pretrained: bool = False) -> nn.Module:
    net = digits_vit()
    return load_embedded(net, "digits-deit") if pretrained else net


@register_model("digits-deit-elliptical", family="deit-elliptical",
                weights="embedded: robeval/zoo/digits-deit-elliptical.safetensors", options=ELLIPTICAL_OPTIONS,
                adaptive=ADAPTIVE_OPTIONS,
                description="DeiT-Elliptical for 8x8 digits (patch 2, dim 48, depth 3, 3 heads)")
def build_digits_elliptical(pretrained: bool = False, **options) -> nn.Module:
    net = digits_vit(elliptical=True, **options)
    return load_embedded(net, "digits-deit-elliptical") if pretrained else net

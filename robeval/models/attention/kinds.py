"""Attention kinds that replace timm's ``Attention`` in a ViT/DeiT: one registration per kind.

A kind names its layer class, its options (with defaults), how to apply them to a built network,
which options let attacks see through a data-dependent weight (``--adaptive``), the paper it comes
from and the package that registers it.  :mod:`robeval.models.catalog` turns every kind into a whole
family; what a plugin's kind is: docs/models.md, section Your own model, and docs/your-attention.md.

Some layers need the sequence length, which timm does not tell an attention layer when it builds it
(Super's ``W_A``, the RVT-style mask): such a layer has ``set_seq_len(n)``, and
:func:`fit_sequence_length` calls it with the length the model's patch embedding produces.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

import timm
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from ...core.registry import placed
from ..registry import ATTENTION_KINDS, AttentionKind, register_kind

__all__ = ["ATTENTION_KINDS", "AttentionKind", "register_kind"]  # the registry, torch-free: models.registry


def takes_timm_calls(layer: type[nn.Module]) -> type[nn.Module]:
    """``layer``, or a subclass of it whose ``forward`` takes (and drops) the keywords timm's blocks pass
    besides ``attn_mask`` (``is_causal`` since timm 1.0.20), so a layer written to the stated interface,
    ``forward(x, attn_mask=None)``, works with any timm."""
    params = inspect.signature(layer.forward).parameters
    if "is_causal" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return layer

    def forward(self, x, attn_mask=None, is_causal=False, **_unused):
        if is_causal:
            raise ValueError(f"{layer.__name__} has no causal mode")
        return layer.forward(self, x, attn_mask=attn_mask)

    return type(
        layer.__name__, (layer,), {"forward": forward, "__module__": layer.__module__, "__doc__": layer.__doc__}
    )


def layer_class(kind: AttentionKind) -> type[nn.Module]:
    """The kind's layer class (imported now when the registration names it by place)."""
    return placed(kind.layer) if isinstance(kind.layer, str) else kind.layer


def sequence_length(model: nn.Module) -> int:
    """Tokens entering the blocks of a timm ViT: patches plus class/register/distillation tokens."""
    return int(getattr(model.patch_embed, "num_patches")) + int(getattr(model, "num_prefix_tokens", 0))  # noqa: B009


def fit_sequence_length(model: nn.Module, seq_len: Optional[int] = None) -> int:
    """Call ``set_seq_len`` on every layer of ``model`` that has it; returns how many layers."""
    length = sequence_length(model) if seq_len is None else seq_len
    layers = [m for m in model.modules() if hasattr(m, "set_seq_len")]
    for layer in layers:
        layer.set_seq_len(length)  # type: ignore[operator]
    return len(layers)


# How a layer option's value is read, the test it must pass and the words for the error.
OptionRule = tuple[Callable[[Any], Any], Callable[[Any], bool], str]


def set_layer_options(model: nn.Module, layers: tuple[type, ...], rules: dict[str, OptionRule], **values: Any) -> int:
    """Set each given (not None) option on the ``layers`` of ``model`` that have it, every value read
    and checked by its rule first; returns how many such layers ``model`` has."""
    given: dict[str, Any] = {}
    for name, value in values.items():
        if name not in rules:
            raise TypeError(f"unknown layer option {name!r} (known: {', '.join(rules)})")
        cast, valid, words = rules[name]
        if value is not None and not valid(cast(value)):
            raise ValueError(f"{name} must be {words}")
        if value is not None:
            given[name] = cast(value)
    found = [m for m in model.modules() if isinstance(m, layers)]
    for layer in found:
        for name, value in given.items():
            if hasattr(layer, name):
                setattr(layer, name, value)
    return len(found)


def finish(net: nn.Module, kind: AttentionKind, options: dict[str, Any]) -> nn.Module:
    """Sequence length and options on a network built with ``kind.layer``."""
    fit_sequence_length(net)
    if kind.configure is not None:
        configure = placed(kind.configure) if isinstance(kind.configure, str) else kind.configure
        configure(net, **{**kind.options, **options})
    return net


def timm_with_attention(kind_name: str, arch: str, **options: Any) -> nn.Module:
    """timm ``arch`` (random weights) with attention ``kind_name`` in every block."""
    kind = ATTENTION_KINDS.require(kind_name)
    return finish(timm.create_model(arch, pretrained=False, attn_layer=layer_class(kind)), kind, options)


def vit_with_attention(kind_name: str, vit: dict[str, Any], drop_path_rate: float = 0.0, **options: Any) -> nn.Module:
    """A ``VisionTransformer(**vit)`` (random weights) with attention ``kind_name`` in every block."""
    kind = ATTENTION_KINDS.require(kind_name)
    net = VisionTransformer(**vit, drop_path_rate=drop_path_rate, attn_layer=layer_class(kind))
    return finish(net, kind, options)

"""Elliptical attention (Nielsen, Abdullaev, Teo, Nguyen, NeurIPS 2024) as a timm attention layer.

``H = softmax(Q M K^T / sqrt(D)) V`` with ``M = diag(m)``.  Block 0 is ordinary attention; block
``l >= 1`` estimates ``m`` from the change of the per-head values between adjacent blocks::

    m = reduce_over_tokens(|v_l - v_{l-1}|)        # [B, heads, D], mean (training) or median
    m = m / max_D(m)                               # largest entry 1; the paper's delta cancels

``Q M K^T`` equals ``(q * m) K^T``, so we scale ``q`` per channel and keep fused
scaled-dot-product attention: no D x D matrix and no extra parameters, so parameter names equal
timm's DeiT and weights load strictly in both directions.  ``m`` is detached by default (as in the
authors' code, where attacks see M as a constant); ``grad_through_m=True`` lets gradients flow
through it for adaptive attacks.

The value tensor is handed from block to block through a small :class:`ValueCarry` shared by all
attention layers of one model; block 0 overwrites it on every forward pass and the last block
clears it, so no state survives a forward pass.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from timm.layers import Attention

from ..catalog import ELLIPTICAL_OPTIONS  # the elliptical models' options, as data
from .kinds import OptionRule, set_layer_options

TOKEN_REDUCTIONS = ("mean", "median")


class ValueCarry:
    """Holds the previous block's value tensor during one forward pass."""

    __slots__ = ("v",)

    def __init__(self) -> None:
        self.v: Optional[torch.Tensor] = None


def elliptical_scale(v: torch.Tensor, v_prev: torch.Tensor, token_reduction: str = "mean") -> torch.Tensor:
    """The diagonal of M, ``[B, heads, D]``, from value tensors ``[B, heads, N, D]`` of two blocks.

    A zero maximum (identical values in both blocks) would divide by zero in the authors' code;
    here such a head falls back to ``m = 1`` (plain attention).
    """
    diff = (v - v_prev).abs()
    if token_reduction == "mean":
        m = diff.mean(dim=2)
    elif token_reduction == "median":
        m = diff.median(dim=2).values
    else:
        raise ValueError(f"token_reduction must be one of {TOKEN_REDUCTIONS}, not {token_reduction!r}")
    top = m.amax(dim=-1, keepdim=True)
    safe = top > torch.finfo(m.dtype).tiny
    return torch.where(safe, m / torch.where(safe, top, torch.ones_like(top)), torch.ones_like(m))


class EllipticalAttention(Attention):
    """timm ``Attention`` with the query scaled per channel by the elliptical ``m``.

    ``layer_index``, ``depth`` and ``carry`` are set by :func:`make_elliptical` after the model is
    built (timm constructs attention layers without knowing their position).
    """

    layer_index: int = 0
    depth: int = 1
    token_reduction: str = str(ELLIPTICAL_OPTIONS["token_reduction"])
    grad_through_m: bool = bool(ELLIPTICAL_OPTIONS["grad_through_m"])
    carry: Optional[ValueCarry] = None

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        if attn_mask is not None or is_causal:
            raise NotImplementedError("elliptical attention is defined for unmasked self-attention")
        B, N, _ = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        carry = self.carry
        if carry is not None:
            if self.layer_index > 0 and carry.v is not None:
                q = q * self._m(v, carry.v).unsqueeze(2).to(q.dtype)
            carry.v = None if self.layer_index >= self.depth - 1 else v
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
        x = x.transpose(1, 2).reshape(B, N, self.attn_dim)
        x = self.norm(x)
        x = self.proj(x)
        return self.proj_drop(x)

    def _m(self, v: torch.Tensor, v_prev: torch.Tensor) -> torch.Tensor:
        if self.grad_through_m:
            return elliptical_scale(v, v_prev, self.token_reduction)
        with torch.no_grad():
            return elliptical_scale(v.detach(), v_prev.detach(), self.token_reduction)


def make_elliptical(model: torch.nn.Module, **options) -> torch.nn.Module:
    """Wire the ``EllipticalAttention`` layers of a timm ViT built with ``attn_layer=EllipticalAttention``;
    ``options`` are :data:`ELLIPTICAL_OPTIONS` (defaults from there)."""
    carry = ValueCarry()
    blocks = list(model.blocks)  # type: ignore[arg-type]  # a timm ViT's Sequential of blocks
    for index, block in enumerate(blocks):
        attn = block.attn
        if not isinstance(attn, EllipticalAttention):
            raise TypeError("make_elliptical needs a model built with attn_layer=EllipticalAttention")
        attn.layer_index, attn.depth, attn.carry = index, len(blocks), carry
    set_elliptical_options(model, **{**ELLIPTICAL_OPTIONS, **options})
    return model


ELLIPTICAL_RULES: dict[str, OptionRule] = {
    "token_reduction": (str, lambda v: v in TOKEN_REDUCTIONS, f"one of {TOKEN_REDUCTIONS}"),
    "grad_through_m": (bool, lambda v: True, "true or false"),
}


def set_elliptical_options(model: torch.nn.Module, **options: Any) -> int:
    """Change token reduction / gradient flow (``token_reduction``, ``grad_through_m``) of every elliptical
    layer in ``model``, each value checked first; returns how many."""
    return set_layer_options(model, (EllipticalAttention,), ELLIPTICAL_RULES, **options)

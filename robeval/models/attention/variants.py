"""Optimised, Efficient and Super attention (Hosseini & Hosseini, "You Need to Pay Better Attention",
arXiv 2403.01643) as drop-in attention layers for timm's ``VisionTransformer``.

Head ``i`` works on the column slice ``X_i`` of the layer input ``X`` (``d_k = d_m / h``), as if the
embedding were split into heads without a value projection::

    Optimised:  softmax(X W_i^Q (X W_i^K)^T / sqrt(d_k)) X_i           W^Q, W^K, W^O: 3 d_m^2
    Efficient:  softmax(X W_i^Q X_i^T / sqrt(d_k)) X_i                 W^Q, W^O:      2 d_m^2
    Super:      softmax(X W_i^Q X_i^T / sqrt(d_k)) (W_A X_i)           W^Q, W^O, W_A: 2 d_m^2 + l^2

(plus biases where timm asks for them: ``qkv_bias`` on W^Q/W^K, ``proj_bias`` on W^O).  Softmax runs
over the key axis; heads are concatenated and projected by W^O as in standard attention, so every
layer keeps timm's call shape and fused ``scaled_dot_product_attention`` applies.

``W_A`` (Super) mixes tokens: an ``l x l`` matrix over the sequence, one per layer, shared by all
heads.  ``l`` is fixed by the model (197 for DeiT at 224/16, 17 for the digits models), which an
attention layer does not know when timm builds it; :func:`~robeval.models.attention.kinds.fit_sequence_length`
sets it afterwards from the patch embedding (as :func:`~robeval.models.attention.elliptical.make_elliptical` wires its layers).  ``W_A``
starts as the identity, so an untrained Super layer equals an Efficient one; the paper gives no
initialisation.

No public weights exist; :func:`state_from_deit` starts a variant from DeiT weights.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .kinds import fit_sequence_length


class SliceAttention(nn.Module):
    """Shared part: W^Q (and W^K), W^O, optional q/k and output norms, value = per-head slice of X."""

    with_key_projection: bool = False

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        attn_head_dim: Optional[int] = None,
        dim_out: Optional[int] = None,
        qkv_bias: bool = False,
        qk_norm: bool = False,
        scale_norm: bool = False,
        proj_bias: bool = True,
        gated: bool = False,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        norm_layer: Optional[type[nn.Module]] = None,
        device=None,
        dtype=None,
        **_ignored,
    ) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError("dim should be divisible by num_heads")
        if attn_head_dim not in (None, dim // num_heads):
            raise ValueError(
                "these variants take the heads' values from X itself: attn_head_dim must be dim // num_heads"
            )
        if gated:
            raise NotImplementedError("gated attention is not defined for these variants")
        if (qk_norm or scale_norm) and norm_layer is None:
            raise ValueError("norm_layer must be provided if qk_norm or scale_norm is True")
        dd = {"device": device, "dtype": dtype}
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.attn_dim = dim
        self.scale = self.head_dim**-0.5
        if self.with_key_projection:
            self.qk = nn.Linear(dim, 2 * dim, bias=qkv_bias, **dd)
        else:
            self.q = nn.Linear(dim, dim, bias=qkv_bias, **dd)
        make_norm = norm_layer if norm_layer is not None else nn.Identity  # (checked above where one is needed)
        self.q_norm = make_norm(self.head_dim, **dd) if qk_norm else nn.Identity()
        self.k_norm = make_norm(self.head_dim, **dd) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = make_norm(dim, **dd) if scale_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim_out or dim, bias=proj_bias, **dd)
        self.proj_drop = nn.Dropout(proj_drop)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """``[B, N, d_m]`` -> ``[B, heads, N, d_k]`` (head i = columns i*d_k .. (i+1)*d_k)."""
        B, N, _ = t.shape
        return t.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)

    def _values(self, x: torch.Tensor, regions: Optional[torch.Tensor] = None) -> torch.Tensor:
        return x

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        return self.attend(x, attn_mask, is_causal)

    def attend(
        self,
        x: torch.Tensor,
        attn_mask: Optional[torch.Tensor],
        is_causal: bool = False,
        regions: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """Attention of ``x`` ``[B, N, C]``; ``regions`` ``[W, N, N]`` (1 where two tokens may mix) is for
        windowed models, whose batch axis is images x ``W`` windows (:mod:`robeval.models.swin`)."""
        B, N, C = x.shape
        if self.with_key_projection:
            q, k = self.qk(x).chunk(2, dim=-1)
            q, k = self._heads(q), self._heads(k)
        else:
            q, k = self._heads(self.q(x)), self._heads(x)
        q, k = self.q_norm(q), self.k_norm(k)
        v = self._heads(self._values(x, regions))
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=attn_mask,
            dropout_p=self.attn_drop.p if self.training else 0.0,
            is_causal=is_causal,
        )
        out = self.norm(out.transpose(1, 2).reshape(B, N, C))
        return self.proj_drop(self.proj(out))


class OptimisedAttention(SliceAttention):
    """``softmax(X W_i^Q (X W_i^K)^T / sqrt(d_k)) X_i``: W^Q and W^K in one ``qk`` linear, no W^V."""

    with_key_projection = True


class EfficientAttention(SliceAttention):
    """``softmax(X W_i^Q X_i^T / sqrt(d_k)) X_i``: keys and values are the head's slice of X."""


class SuperAttention(SliceAttention):
    """``softmax(X W_i^Q X_i^T / sqrt(d_k)) (W_A X_i)`` with ``W_A`` (``w_a``, ``l x l``) over tokens.

    ``w_a`` exists once :func:`make_super` (or :meth:`set_seq_len`) has fixed the sequence length.
    """

    w_a: Optional[nn.Parameter]

    def __init__(self, dim: int, num_heads: int = 8, **kwargs) -> None:
        super().__init__(dim, num_heads, **kwargs)
        self.w_a = None

    @property
    def seq_len(self) -> Optional[int]:
        return None if self.w_a is None else self.w_a.shape[0]

    def set_seq_len(self, seq_len: int) -> None:
        """Create ``W_A`` for sequences of ``seq_len`` tokens, initialised to the identity."""
        device = self.proj.weight.device
        self.w_a = nn.Parameter(torch.eye(seq_len, device=device, dtype=self.proj.weight.dtype))

    def _values(self, x: torch.Tensor, regions: Optional[torch.Tensor] = None) -> torch.Tensor:
        if self.w_a is None:
            raise RuntimeError("SuperAttention needs its sequence length: call make_super(model) after building")
        B, N, C = x.shape
        if self.w_a.shape[0] != N:
            raise ValueError(f"super attention is built for {self.w_a.shape[0]} tokens, got {N}")
        if regions is None:
            return torch.matmul(self.w_a, x)  # W_A mixes tokens; the same W_A serves every head
        windows = regions.shape[0]  # the same W_A in every window, cut where the regions separate tokens
        return torch.matmul(self.w_a * regions, x.reshape(-1, windows, N, C)).reshape(B, N, C)


VARIANTS: dict[str, type[SliceAttention]] = {
    "optimised": OptimisedAttention,
    "efficient": EfficientAttention,
    "super": SuperAttention,
}


def make_super(model: nn.Module, seq_len: Optional[int] = None) -> nn.Module:
    """Give every :class:`SuperAttention` layer of ``model`` its ``W_A`` (length from the model)."""
    if not any(isinstance(m, SuperAttention) for m in model.modules()):
        raise TypeError("make_super needs a model built with attn_layer=SuperAttention")
    fit_sequence_length(model, seq_len)
    return model


def state_from_deit(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """A state dict for variant ``model`` made from a standard timm ViT/DeiT ``state``.

    ``qkv`` rows are [W^Q; W^K; W^V]: Optimised keeps the first two thirds, Efficient/Super the first
    third; W^V is dropped.  Entries the standard model lacks (``w_a``) come from ``model`` itself.
    """
    out = dict(state)
    for name, module in model.named_modules():
        if not isinstance(module, SliceAttention):
            continue
        dim = module.attn_dim
        rows = 2 * dim if module.with_key_projection else dim
        target = "qk" if module.with_key_projection else "q"
        for part in ("weight", "bias"):
            key = f"{name}.qkv.{part}"
            if key in out:
                out[f"{name}.{target}.{part}"] = out.pop(key)[:rows].clone()
        if isinstance(module, SuperAttention) and module.w_a is not None:
            out[f"{name}.w_a"] = module.w_a.detach().clone()
    return out

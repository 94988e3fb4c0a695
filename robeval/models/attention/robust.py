"""Robust-attention baselines after Han et al., NeurIPS 2023 ("Designing Robust Transformers using
Robust Kernel Density Estimation"): RKDE attention (Huber loss) and median-of-means attention.

Both keep timm's ``Attention`` parameters exactly (``qkv``, ``proj``), so DeiT weights load strictly
in both directions and each layer keeps timm's call shape.

**Attention as a kernel density estimator.**  With ``kappa(q, k) = exp(q.k / sqrt(D))`` the output
``h(q) = sum_j kappa(q, k_j) v_j / sum_j kappa(q, k_j)`` is a Nadaraya-Watson estimator: a ratio of
kernel density estimates in which every key counts ``1/N``.  A few corrupted tokens can move such a
mean arbitrarily far.

**RKDE** replaces the uniform ``1/N`` by weights ``w_j`` of a robust KDE: an M-estimate
``f = sum_j w_j Phi(z_j)`` in the kernel's feature space, found by iteratively reweighted least
squares with the Huber loss (threshold ``a``)::

    r_j = || Phi(z_j) - f ||_H  = sqrt(G_jj - 2 (G w)_j + w^T G w)        (G: Gram matrix of z)
    w_j <- psi(r_j) / r_j = min(1, a / r_j),   then normalised to sum 1

starting from ``w = 1/N``; ``iterations`` steps (the authors' code takes one).  Attention then is
``softmax(q k^T / sqrt(D) + log w)``: the same scores with each key weighted by ``w_j`` (fused
scaled-dot-product attention with an additive mask).  Choices, following the authors' code where it
is clear:

* the points ``z_j = [k_j / ||k_j||, v_j]`` live in the joint key-value space, the Gram kernel is
  Gaussian ``G_ij = exp(-||z_i - z_j||^2 / sqrt(D))`` (so ``G_jj = 1``), default ``a = 0.2``;
* one set of weights (from the joint space) serves numerator and denominator, so every output stays
  a convex combination of the values; the authors' code weights the denominator with key-only
  weights instead (its rows need not sum to 1) and drops the factor -2 in ``r_j`` - we use the exact
  RKHS distance;
* the attention scores themselves are timm's (un-normalised keys), so with ``iterations=0`` or an
  infinite threshold the layer *is* standard attention and DeiT weights mean the same thing;
* the weights are not detached: gradients (and attacks) see the whole function.

**Median of means (MoM)** splits the keys/values into ``G`` groups (token ``j`` in group
``j mod G``, a deterministic interleaving that spreads every group over the whole image), runs
attention of every query against each group alone and returns the element-wise median of the ``G``
outputs (for even ``G``, the lower middle value as ``torch.median`` gives).  ``G = 1`` is standard
attention.  The authors' code instead draws ``G`` random subsets of ``95%`` of the tokens and keeps
the subset whose total kernel likelihood is the median; we use the deterministic element-wise
version so that a fixed seed gives fixed logits and attacks see a deterministic model.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import torch
import torch.nn.functional as F
from timm.layers import Attention
from torch import nn

from ..catalog import MOM_OPTIONS, RKDE_OPTIONS  # the kinds' options, as data (their registrations too)
from .kinds import OptionRule, set_layer_options


def gaussian_gram(z: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """``exp(-||z_i - z_j||^2 / bandwidth)`` for points ``z`` ``[..., N, F]``: ``[..., N, N]``."""
    sq = (z * z).sum(-1)
    dist2 = (sq.unsqueeze(-1) + sq.unsqueeze(-2) - 2 * z @ z.transpose(-2, -1)).clamp_min(0)
    return torch.exp(-dist2 / bandwidth)


def huber_rkde_weights(z: torch.Tensor, threshold: float, iterations: int, bandwidth: float) -> torch.Tensor:
    """Robust-KDE weights ``[..., N]`` (summing to 1) of the points ``z`` ``[..., N, F]``.

    Gaussian kernel ``exp(-||z_i - z_j||^2 / bandwidth)``; Huber ``psi(r)/r = min(1, a/r)``.
    """
    n = z.shape[-2]
    gram = gaussian_gram(z, bandwidth)
    w = torch.full(z.shape[:-1], 1.0 / n, dtype=z.dtype, device=z.device)
    tiny = torch.finfo(z.dtype).tiny
    for _ in range(iterations):
        gw = (gram @ w.unsqueeze(-1)).squeeze(-1)
        wgw = (w * gw).sum(-1, keepdim=True)
        r = (1.0 - 2.0 * gw + wgw).clamp_min(tiny).sqrt()  # G_jj = 1 for the Gaussian kernel
        w = threshold / torch.maximum(r, torch.full_like(r, threshold))
        w = w / w.sum(-1, keepdim=True)
    return w


class RobustBase(Attention):
    def _qkv(self, x: torch.Tensor, attn_mask, is_causal):
        if attn_mask is not None or is_causal:
            raise NotImplementedError(f"{type(self).__name__} is defined for unmasked self-attention")
        B, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        return self.q_norm(q), self.k_norm(k), v

    def _output(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        B, N, _ = x.shape
        out = self.norm(out.transpose(1, 2).reshape(B, N, self.attn_dim))
        gate = getattr(self, "gate", None)
        if gate is not None:
            out = out * gate(x).sigmoid()
        return self.proj_drop(self.proj(out))

    def _dropout_p(self) -> float:
        return self.attn_drop.p if self.training else 0.0


class RKDEAttention(RobustBase):
    """Robust KDE attention with the Huber loss (see the module docstring for the formulation)."""

    iterations: int = RKDE_OPTIONS["iterations"]
    huber_threshold: float = RKDE_OPTIONS["huber_threshold"]

    def key_weights(self, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Robust weights ``[B, heads, N]`` of the keys, from the joint points ``[k / ||k||, v]``."""
        z = torch.cat([F.normalize(k, dim=-1), v], dim=-1)
        dtype = torch.promote_types(z.dtype, torch.float32)
        w = huber_rkde_weights(z.to(dtype), self.huber_threshold, self.iterations, math.sqrt(self.head_dim))
        return w.to(k.dtype)

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        q, k, v = self._qkv(x, attn_mask, is_causal)
        mask = None
        if self.iterations > 0 and math.isfinite(self.huber_threshold):
            mask = self.key_weights(k, v).log().unsqueeze(-2)  # [B, heads, 1, N]: log w_j added to every score
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self._dropout_p())
        return self._output(x, out)


class MoMAttention(RobustBase):
    """Median-of-means attention: element-wise median of the outputs over ``groups`` key/value groups."""

    groups: int = MOM_OPTIONS["groups"]

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        q, k, v = self._qkv(x, attn_mask, is_causal)
        g = self.groups
        if g < 1 or g > k.shape[2]:
            raise ValueError(f"median-of-means needs 1 <= groups <= tokens ({k.shape[2]}), got {g}")
        p = self._dropout_p()
        if g == 1:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        else:
            outs = [F.scaled_dot_product_attention(q, k[:, :, i::g], v[:, :, i::g], dropout_p=p) for i in range(g)]
            out = torch.stack(outs).median(dim=0).values
        return self._output(x, out)


ROBUST_RULES: dict[str, OptionRule] = {
    "iterations": (int, lambda v: v >= 0, ">= 0"),
    "huber_threshold": (float, lambda v: v > 0, "> 0"),
    "groups": (int, lambda v: v >= 1, ">= 1"),
}


def set_robust_options(model: nn.Module, **options: Any) -> int:
    """Set RKDE ``iterations`` / ``huber_threshold`` and MoM ``groups`` on every such layer of ``model``;
    returns how many."""
    return set_layer_options(model, (RKDEAttention, MoMAttention), ROBUST_RULES, **options)

"""The kernel-attention baselines of the Elliptical paper's robustness table, as the Elliptical
authors define them in their robustness zoo (``ImageAttack/models_git.py`` of
stefvk/Elliptical-Attention; the facts are in docs/research/elliptical-repo.md): KDE, SPKDE,
FourierFormer and the "RVT-style" DeiT.  Written here from those facts, in pure PyTorch.

All four keep timm's ``qkv``/``proj`` names, so a DeiT-tiny state dict plus each layer's own
parameters (``attn.paramR`` for Fourier, ``attn.att_mask`` for RVT-style) is what their checkpoints
hold.  The formulas per head: docs/research/elliptical-repo.md, section The attentions (KDE's scores
equal ``softmax_j(2 scale q_i.k^_j)``, so fused attention applies).

Where this differs from the authors' code, and why:

* SPKDE: the authors average the Gram over the batch and the heads and solve one QP per layer with
  cvxopt, detached.  Averaging over the batch makes an image's prediction depend on the other images
  of its batch, which breaks example-for-example reproducibility, so the Gram here is averaged over
  heads only and one QP is solved per image, batched on the device by accelerated projected gradient
  (``solver_iterations`` steps, exact Euclidean projection onto the simplex).  As in the authors'
  code, attacks see the weights as constants (computed without gradient); ``grad_through_weights``
  (set by ``--adaptive``) differentiates through the unrolled solver instead.
* FourierFormer: the authors' CUDA kernel reads ``paramR[t]`` for every channel ``t`` of a one-element
  tensor; here the scalar is broadcast (their CPU reference), and their extra factor ``R^d`` (it
  cancels in the normalisation up to the 1e-6) is left out.  Autograd gives the exact derivatives of
  the product.  Memory: ``Y`` needs a ``[B, heads, N, N, d]`` tensor, about 30 MB per image and
  layer at 224 px; lower ``--batch-size`` for attacks on ImageNet.
* RVT-style: the authors create the mask uninitialised; it starts at zeros here (or comes from a
  checkpoint).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..catalog import SPKDE_OPTIONS  # the kinds' options, as data (their registrations too)
from .kinds import OptionRule, set_layer_options
from .robust import RobustBase, gaussian_gram

FOURIER_FLOOR = 1e-6  # the authors' constant in the FourierFormer normalisation


def project_to_simplex(y: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of every row ``y[..., :]`` onto ``{a >= 0, sum a = 1}`` (sort-based)."""
    u = y.sort(dim=-1, descending=True).values
    excess = u.cumsum(-1) - 1
    index = torch.arange(1, y.shape[-1] + 1, device=y.device, dtype=y.dtype)
    support = (u - excess / index > 0).sum(-1, keepdim=True).clamp_min(1)
    theta = excess.gather(-1, support - 1) / support.to(y.dtype)
    return (y - theta).clamp_min(0)


def spkde_weights(gram: torch.Tensor, beta: float, iterations: int) -> torch.Tensor:
    """Minimise ``1/2 a^T G a - (beta/N) 1^T G a`` over the simplex for every ``G`` ``[..., N, N]``.

    Accelerated projected gradient (FISTA) from the uniform weights, step ``1 / max row sum of G``
    (an upper bound on the largest eigenvalue of a non-negative Gram)."""
    n = gram.shape[-1]
    a = torch.full(gram.shape[:-1], 1.0 / n, dtype=gram.dtype, device=gram.device)
    if gram.is_meta:  # a pass of shapes only: the iterations change no shape, and 30 of them cost seconds there
        return a
    linear = gram.sum(-1) * (beta / n)
    step = 1.0 / gram.sum(-1).amax(-1, keepdim=True)
    y, t = a, 1.0
    for _ in range(iterations):
        grad = (gram @ y.unsqueeze(-1)).squeeze(-1) - linear
        a_next = project_to_simplex(y - step * grad)
        t_next = (1 + math.sqrt(1 + 4 * t * t)) / 2
        y = a_next + ((t - 1) / t_next) * (a_next - a)
        a, t = a_next, t_next
    return a


class KDEAttention(RobustBase):
    """KDE attention: Gaussian kernel between queries and L2-normalised keys."""

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        q, k, v = self._qkv(x, attn_mask, is_causal)
        out = F.scaled_dot_product_attention(
            q, F.normalize(k, dim=-1), v, dropout_p=self._dropout_p(), scale=2 * self.scale
        )
        return self._output(x, out)


class SPKDEAttention(RobustBase):
    """Scaled-and-projected KDE attention (see the module docstring)."""

    outlier_fraction: float = SPKDE_OPTIONS["outlier_fraction"]
    solver_iterations: int = SPKDE_OPTIONS["solver_iterations"]
    grad_through_weights: bool = SPKDE_OPTIONS["grad_through_weights"]

    def log_weights(self, points: torch.Tensor) -> torch.Tensor:
        """``log a`` ``[B, 1, N]`` for points ``[B, heads, N, F]`` (Gram averaged over heads)."""
        dtype = torch.promote_types(points.dtype, torch.float32)
        with torch.set_grad_enabled(self.grad_through_weights and torch.is_grad_enabled()):
            z = points if self.grad_through_weights else points.detach()
            gram = gaussian_gram(z.to(dtype), math.sqrt(self.head_dim)).mean(1)
            a = spkde_weights(gram, 1.0 / (1.0 - self.outlier_fraction), self.solver_iterations)
        return a.clamp_min(torch.finfo(dtype).tiny).log().unsqueeze(1).to(points.dtype)

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        q, k, v = self._qkv(x, attn_mask, is_causal)
        kn = F.normalize(k, dim=-1)
        log_joint = self.log_weights(torch.cat([kn, v], dim=-1)).unsqueeze(-2)  # [B, 1, 1, N]
        log_keys = self.log_weights(kn).unsqueeze(-2)
        scores = (q @ kn.transpose(-2, -1)) * (2 * self.scale)
        attn = torch.exp(scores + log_joint - torch.logsumexp(scores + log_keys, dim=-1, keepdim=True))
        return self._output(x, self.attn_drop(attn) @ v)


class FourierAttention(RobustBase):
    """FourierFormer attention: a product of sinc kernels with one learned scalar ``paramR``."""

    def __init__(self, dim: int, num_heads: int = 8, **kwargs) -> None:
        super().__init__(dim, num_heads, **kwargs)
        self.paramR = nn.Parameter(torch.ones(1, device=self.proj.weight.device, dtype=self.proj.weight.dtype))

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        q, k, v = self._qkv(x, attn_mask, is_causal)
        diff = q.unsqueeze(-2) - k.unsqueeze(-3)  # [B, heads, N, N, d]
        y = torch.sinc(self.paramR * diff / math.pi).prod(-1)  # torch.sinc(t) = sin(pi t) / (pi t)
        y4 = y.pow(4)
        attn = y4 / (y4.sum(-1, keepdim=True) + FOURIER_FLOOR)
        return self._output(x, self.attn_drop(attn) @ v)


class MaskedKeyNormAttention(RobustBase):
    """RVT-style attention: L2-normalised keys and a learned gate ``sigmoid(att_mask)`` on the logits."""

    att_mask: Optional[nn.Parameter]

    def __init__(self, dim: int, num_heads: int = 8, **kwargs) -> None:
        super().__init__(dim, num_heads, **kwargs)
        self.att_mask = None  # created by set_seq_len (fit_sequence_length) once the model is built

    def set_seq_len(self, seq_len: int) -> None:
        device, dtype = self.proj.weight.device, self.proj.weight.dtype
        self.att_mask = nn.Parameter(torch.zeros(self.num_heads, seq_len, seq_len, device=device, dtype=dtype))

    def forward(
        self, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None, is_causal: bool = False
    ) -> torch.Tensor:
        q, k, v = self._qkv(x, attn_mask, is_causal)
        if self.att_mask is None or self.att_mask.shape[-1] != x.shape[1]:
            raise ValueError(
                f"this RVT-style layer's mask is built for {None if self.att_mask is None else self.att_mask.shape[-1]}"
                f" tokens, got {x.shape[1]}"
            )
        logits = (q @ F.normalize(k, dim=-1).transpose(-2, -1)) * self.scale * torch.sigmoid(self.att_mask)
        return self._output(x, self.attn_drop(logits.softmax(-1)) @ v)


SPKDE_RULES: dict[str, OptionRule] = {
    "outlier_fraction": (float, lambda v: 0 <= v < 1, "in [0, 1)"),
    "solver_iterations": (int, lambda v: v >= 1, ">= 1"),
    "grad_through_weights": (bool, lambda v: True, "true or false"),
}


def set_spkde_options(model: nn.Module, **options: Any) -> int:
    """Set the SPKDE options (``outlier_fraction``, ``solver_iterations``, ``grad_through_weights``) on
    every such layer of ``model``; returns how many."""
    return set_layer_options(model, (SPKDEAttention,), SPKDE_RULES, **options)

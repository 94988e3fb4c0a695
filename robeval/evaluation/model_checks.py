"""Checks of a model itself, made on the first batch of its run (they need the model): randomness
across passes, outputs that look like probabilities, input gradients that are zero or NaN.  Their
values are stored with the run; robeval.results.indicators judges them."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def model_checks(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """Randomness, probability-like outputs and input-gradient health on one batch."""
    with torch.no_grad():
        first, second = net(x), net(x)
    scale = float(first.abs().max().clamp_min(1e-12))
    random_diff = float((first - second).abs().max()) / scale
    rows_sum = first.sum(dim=1)
    probabilities = bool(
        ((first >= 0) & (first <= 1)).all() and torch.allclose(rows_sum, torch.ones_like(rows_sum), atol=1e-3)
    )
    log_probabilities = bool(
        (first <= 1e-6).all() and torch.allclose(first.logsumexp(1), torch.zeros_like(rows_sum), atol=1e-3)
    )
    xg = x.clone().requires_grad_(True)
    with torch.enable_grad():
        loss = F.cross_entropy(net(xg), y, reduction="sum")
        (grad,) = torch.autograd.grad(loss, xg)
    flat = grad.flatten(1)
    broken = (~torch.isfinite(flat).all(1)) | (flat.abs().amax(1) == 0)
    return {
        "relative_logit_change_between_passes": random_diff,
        "outputs_are_probabilities": probabilities,
        "outputs_are_log_probabilities": log_probabilities,
        "share_zero_or_nan_gradients": float(broken.float().mean()),
        "examples_checked": int(len(y)),
    }

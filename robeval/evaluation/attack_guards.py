"""What guards every attack call of the engine: pass counting, autocast, the check that the returned
batch respects the threat model, and the errors that stop a model (out-of-memory halving and the
call itself: robeval.evaluation.units).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from ..core.norms import perturbation_size

BOUND_TOLERANCE = 1e-6


class AttackBoundsError(RuntimeError):
    """An attack returned a point outside the threat model: a bug in that attack."""


class ModelFailure(Exception):
    """A model that cannot be evaluated (NaN/inf logits, a failed attack): it stops, the other models go on."""


def verify_adversarial(
    attack: str, x_adv: torch.Tensor, x: torch.Tensor, eps: float, norm: str, box: tuple[float, float] | None
) -> None:
    """Abort when ``x_adv`` leaves the eps ball (around ``x`` clipped to the box) or the box.

    An example returned unchanged is always valid (under ``nielsen2024`` the clean normalized
    input lies outside AutoAttack's [0,1] box, and AutoAttack returns it for unfooled points).
    """
    if x_adv.shape != x.shape:
        raise AttackBoundsError(f"attack {attack} returned shape {tuple(x_adv.shape)} for input {tuple(x.shape)}")
    if not torch.isfinite(x_adv).all():
        raise AttackBoundsError(f"attack {attack} returned non-finite values")
    changed = ~(x_adv == x).flatten(1).all(1)
    if not changed.any():
        return
    x_adv, x = x_adv[changed], x[changed]
    anchor = x if box is None else x.clamp(*box)
    worst = float(perturbation_size(x_adv, anchor, norm).max())
    if worst > eps + BOUND_TOLERANCE:
        raise AttackBoundsError(f"attack {attack} left the {norm} ball: perturbation {worst:.8f} > eps {eps:.8f}")
    if box is not None:
        lo, hi = float(x_adv.min()), float(x_adv.max())
        if lo < box[0] - BOUND_TOLERANCE or hi > box[1] + BOUND_TOLERANCE:
            raise AttackBoundsError(f"attack {attack} left the input range {box}: values in [{lo:.6f}, {hi:.6f}]")


class PassCounter(nn.Module):
    """Counts images sent forward through ``net`` and gradients flowing back through its output."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.reset()
        self.listener: Callable[[int], None] | None = None  # told the images sent forward so far (progress)

    def reset(self) -> None:
        self.forward_images = self.backward_images = 0

    def _count_backward(self, n: int, grad: torch.Tensor) -> None:
        self.backward_images += n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        self.forward_images += x.shape[0]
        if self.listener is not None:
            self.listener(self.forward_images)
        if out.requires_grad:
            out.register_hook(partial(self._count_backward, x.shape[0]))
        return out


class Autocast(nn.Module):
    """Runs ``net`` under autocast (bf16/fp16) and hands float32 logits back to the attacks."""

    def __init__(self, net: nn.Module, dtype: torch.dtype, device_type: str) -> None:
        super().__init__()
        self.net, self.dtype, self.device_type = net, dtype, device_type

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(self.device_type, dtype=self.dtype):
            out = self.net(x)
        return out.float()


def topk_hits(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example top-1 and top-5 hit (5 capped at the number of classes)."""
    top = logits.topk(min(5, logits.shape[1]), dim=1).indices
    return top[:, 0] == y, (top == y[:, None]).any(dim=1)


OUT_OF_MEMORY = ("out of memory", "can't allocate memory", "not enough memory", "std::bad_alloc")  # torch's allocators


def is_out_of_memory(exc: BaseException) -> bool:
    """The one out-of-memory detector (the units' halving, robeval profile's one line)."""
    said = isinstance(exc, RuntimeError) and any(m in str(exc) for m in OUT_OF_MEMORY)
    return said or isinstance(exc, torch.cuda.OutOfMemoryError)  # torch.OutOfMemoryError is this class from torch 2.5

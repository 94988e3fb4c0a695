"""What every attack shares: the call shape, seeding, the threat-model box, and small tensor helpers.

An attack is an object called as ``attack(x, y) -> x_adv`` on tensors in the attacked input space
([0,1] pixels under the ``standard`` protocol).  ``clip`` is the valid input box (``None`` = no
box, as in the ``nielsen2024`` protocol's own attacks).  Each call runs inside its own forked RNG,
seeded from ``seed``, so no attack (AutoAttack's code reseeds the global RNG) leaks randomness
into another.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import torch
import torch.nn.functional as F
from torch import nn

Box = Optional[tuple[float, float]]


@contextmanager
def seeded_rng(seed: int, device: torch.device) -> Iterator[None]:
    """Run a block with the global CPU (and current CUDA) RNG seeded, restoring it afterwards."""
    devices = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if device.type == "cuda":
            torch.cuda.manual_seed(seed)
        yield


class Attack:
    """Base class: subclasses set ``name`` and implement :meth:`perturb`."""

    name: str = "attack"

    def __init__(self, model: nn.Module, eps: float, norm: str = "Linf", seed: int = 0,
                 clip: Box = (0.0, 1.0), **settings: Any) -> None:
        self.model = model
        self.eps = float(eps)
        self.norm = norm
        self.seed = int(seed)
        self.clip = clip
        self.settings = settings
        for key, value in settings.items():
            setattr(self, key, value)

    def __call__(self, x: torch.Tensor, y: torch.Tensor, seed: int | None = None) -> torch.Tensor:
        x, y = x.detach(), y.detach()
        with seeded_rng(self.seed if seed is None else int(seed), x.device), torch.enable_grad():
            x_adv = self.perturb(x, y)
        return x_adv.detach()

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- helpers shared by the attacks written here ------------------------------------------
    def clamp_box(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.clip is None else x.clamp(*self.clip)

    def project(self, x_adv: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Project onto the eps ball around ``x`` (in ``self.norm``), then into the box."""
        delta = x_adv - x
        if self.norm == "Linf":
            delta = delta.clamp(-self.eps, self.eps)
        else:
            norms = delta.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (x.dim() - 1))
            delta = delta * torch.clamp(self.eps / norms, max=1.0)
        return self.clamp_box(x + delta)

    def random_init(self, x: torch.Tensor) -> torch.Tensor:
        if self.norm == "Linf":
            noise = torch.empty_like(x).uniform_(-self.eps, self.eps)
        else:
            direction = torch.randn_like(x)
            direction = direction / direction.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (x.dim() - 1))
            radius = torch.rand(x.shape[0], device=x.device).view(-1, *[1] * (x.dim() - 1))
            noise = direction * radius * self.eps
        return self.clamp_box(x + noise)

    def steepest_step(self, grad: torch.Tensor, size: float) -> torch.Tensor:
        """The norm's steepest-ascent direction scaled to ``size`` (sign for Linf, unit for L2)."""
        if self.norm == "Linf":
            return size * grad.sign()
        norms = grad.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (grad.dim() - 1))
        return size * grad / norms


def margin(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``z_y - max_{j != y} z_j`` per example: positive while ``y`` is still the top-1 class."""
    true = logits.gather(1, y[:, None]).squeeze(1)
    others = logits.scatter(1, y[:, None], float("-inf")).amax(dim=1)
    return true - others


def ce_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, y, reduction="sum")


LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

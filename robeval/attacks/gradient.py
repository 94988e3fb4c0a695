"""FGSM and PGD, written here (a few lines each) so that they honour the protocol's box and labels.

torchattacks' versions always clamp to [0,1], which the ``nielsen2024`` protocol (unclamped attacks
on normalized tensors, as in the paper's cleverhans calls) cannot use.
"""

from __future__ import annotations

import torch

from .base import PER_EXAMPLE, Attack, ce_loss
from .registry import register_attack


def _loss_grad(model, x_adv: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x_adv = x_adv.clone().requires_grad_(True)
    loss = ce_loss(model(x_adv), y)
    (grad,) = torch.autograd.grad(loss, x_adv)
    return grad


@register_attack("fgsm", title="FGSM", norms=("Linf", "L2"), kind="white-box", implementation="robeval (one gradient step)",
                 description="one step of size eps along the sign (Linf) or direction (L2) of the CE gradient")
class FGSM(Attack):
    name = "fgsm"

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        grad = _loss_grad(self.model, x, y)
        return self.project(x + self.steepest_step(grad, self.eps), x)


@register_attack("pgd", title="PGD", norms=("Linf", "L2"), kind="white-box", implementation="robeval (projected gradient descent)",
                 randomness=PER_EXAMPLE,
                 defaults=dict(steps=20, rel_stepsize=0.25, random_start=True),
                 description="CE-loss PGD, step = rel_stepsize * eps, uniform random start")
class PGD(Attack):
    name = "pgd"
    steps: int
    rel_stepsize: float
    random_start: bool

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        step = self.rel_stepsize * self.eps
        x_adv = self.random_init(x) if self.random_start else x.clone()
        for _ in range(self.steps):
            grad = _loss_grad(self.model, x_adv, y)
            x_adv = self.project(x_adv + self.steepest_step(grad, step), x)
        return x_adv

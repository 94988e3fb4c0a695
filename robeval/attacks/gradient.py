"""FGSM and PGD, written here (a few lines each) so that they honour the protocol's box and labels.
``eot_iter`` averages the gradient over that many passes (EOT) for models random at inference.

torchattacks' versions always clamp to [0,1], which the ``nielsen2024`` protocol (unclamped attacks
on normalized tensors, as in the paper's cleverhans calls) cannot use.
"""

from __future__ import annotations

import torch

from .base import Attack, ce_loss
from .registry import registered_as


def _loss_grad(model, x_adv: torch.Tensor, y: torch.Tensor, eot_iter: int = 1) -> torch.Tensor:
    """The CE gradient at ``x_adv``; with ``eot_iter`` > 1 the mean over that many passes
    (expectation over transformation, for models that are random at inference).

    No copy of ``x_adv`` and, for one pass, no running sum: the work of a step is the model's pass and
    the few element-wise operations torchattacks' PGD does too (benchmarks/attacks_vs_reference.py)."""
    passes = max(1, eot_iter)
    total: torch.Tensor | None = None
    for _ in range(passes):
        x = x_adv.detach().requires_grad_(True)
        logits = model(x)
        (grad,) = torch.autograd.grad(ce_loss(logits, y), x)
        total = grad if total is None else total + grad
    assert total is not None
    return total if passes == 1 else total / passes


@registered_as("fgsm")
class FGSM(Attack):
    eot_iter: int

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        grad = _loss_grad(self.model, x, y, self.eot_iter)
        return self.project(x + self.steepest_step(grad, self.eps), x)


@registered_as("pgd")
class PGD(Attack):
    """It returns its last iterate.  Its convergence curve sees iterate ``k`` at position ``k`` (the
    logits of its gradient pass, read from outside: every forward call is the next iterate); the last
    iterate is seen by the records' own pass."""

    steps: int
    rel_stepsize: float
    random_start: bool
    eot_iter: int

    def budget(self) -> float:
        return self.steps * self.eot_iter

    def curve_budget(self) -> int:
        return self.steps

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        step = self.rel_stepsize * self.eps
        x_adv = self.random_init(x) if self.random_start else x.clone()
        for _ in range(self.steps):
            grad = _loss_grad(self.model, x_adv, y, self.eot_iter)
            x_adv = self.project(x_adv + self.steepest_step(grad, step), x)
        return x_adv

"""MALT target ranking (Melamed et al., NeurIPS 2024) and AutoAttack's targeted APGD on given targets.
The score and how ``apgd-t-malt`` / ``apgd-t-rest`` use it: docs/attacks.md, section "MALT target ranking".

A candidate whose gradient is zero scores 0, as MALT's own code leaves it (it ranks first).  Ties keep
the logit order (the higher logit first), so with all scores equal the ranking is AutoAttack's order.
With many classes (ImageNet, CIFAR-100) it may choose targets outside AutoAttack's 9.  MALT's paper
counts only the target class as a success; here, as in AutoAttack's APGD-T, any misclassification.
Random starts are drawn per example as ``apgd-t`` draws them (salted by the target's place in the
attack's own list and the restart), so records do not depend on the batch.
"""

from __future__ import annotations

import torch

from .autoattack import APGDT
from .registry import registered_as

MALT_CANDIDATES = 100  # MALT's candidate targets: the 100 highest wrong logits (every wrong class below 101)


def candidate_classes(logits: torch.Tensor, y: torch.Tensor, count: int = MALT_CANDIDATES) -> torch.Tensor:
    """``[n, c]``: each row's ``c = min(count, C - 1)`` highest-scoring classes other than ``y``, highest first."""
    c = min(count, logits.shape[1] - 1)
    return logits.scatter(1, y[:, None], float("-inf")).topk(c, dim=1).indices


def boundary_gradient_norms(
    model, x: torch.Tensor, y: torch.Tensor, candidates: torch.Tensor, norm: str, chunk: int | None = None
) -> torch.Tensor:
    """``[n, c]``: the dual norm of ``grad_x (z_t - z_y)`` for each row's candidates ``t``.

    Each image is repeated once per candidate and sent forward and back in chunks of ``chunk`` images
    (default: ``len(x)``, the memory of one step of the attack that calls it): ``n * c`` forward and
    ``n * c`` backward image-passes in all."""
    n, c = candidates.shape
    rows = torch.arange(n, device=x.device).repeat_interleave(c)
    targets = candidates.reshape(-1)
    step = max(1, chunk or n)
    norms = []
    with torch.enable_grad():
        for start in range(0, n * c, step):
            part = rows[start : start + step]
            x_rep = x[part].detach().clone().requires_grad_(True)
            z = model(x_rep)
            weights = torch.zeros_like(z)
            weights.scatter_(1, targets[start : start + step, None], 1.0)
            weights.scatter_add_(1, y[part, None], torch.full_like(weights[:, :1], -1.0))
            (grad,) = torch.autograd.grad(z, x_rep, grad_outputs=weights)
            norms.append(grad.flatten(1).norm(p=1 if norm == "Linf" else 2, dim=1))
    return torch.cat(norms).view(n, c)


def malt_scores(logits: torch.Tensor, candidates: torch.Tensor, gradient_norms: torch.Tensor) -> torch.Tensor:
    """``[n, c]``: ``(z_pred - z_t) / ||g_t||`` per candidate; 0 where the gradient is zero (as MALT)."""
    gap = logits.amax(dim=1, keepdim=True) - logits.gather(1, candidates)
    safe = torch.where(gradient_norms > 0, gradient_norms, torch.ones_like(gradient_norms))
    return torch.where(gradient_norms > 0, gap / safe, torch.zeros_like(gap))


def malt_targets(
    model,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    norm: str = "Linf",
    logits: torch.Tensor | None = None,
    chunk: int | None = None,
) -> torch.Tensor:
    """``[n, min(k, C - 1)]``: each example's ``k`` best MALT-ranked target classes, best first.

    ``logits``: the model's logits on ``x`` when the caller has them (saves a forward pass).  Costs
    ``n * c`` forward and backward image-passes, ``c = min(max(k, 100), C - 1)`` candidates."""
    if logits is None:
        with torch.no_grad():
            logits = model(x)
    candidates = candidate_classes(logits, y, max(k, MALT_CANDIDATES))
    scores = malt_scores(logits, candidates, boundary_gradient_norms(model, x, y, candidates, norm, chunk))
    best = scores.argsort(dim=1, stable=True)[:, :k]  # stable: ties keep the logit order
    return candidates.gather(1, best)


def autoattack_targets(logits: torch.Tensor, count: int) -> torch.Tensor:
    """``[n, count]``: the targets of AutoAttack's APGD-T on a correctly classified row, in its order
    (the 2nd, 3rd, ... highest logits)."""
    order = logits.sort(dim=1)[1]
    return order.flip(1)[:, 1 : count + 1]


def targets_not_in(targets: torch.Tensor, ran: torch.Tensor) -> torch.Tensor:
    """``targets`` less each row's classes in ``ran``, kept in order, left-aligned, padded with -1."""
    keep = (targets[:, :, None] != ran[:, None, :]).all(2)
    order = (~keep).to(torch.int8).argsort(dim=1, stable=True)
    return targets.gather(1, order).masked_fill(~keep.gather(1, order), -1)


class _APGDTOnTargets(APGDT):
    """APGD-T run target by target on per-example target lists (:meth:`target_lists`)."""

    def budget(self) -> float:
        return super().budget() + MALT_CANDIDATES  # the ranking: one forward per candidate

    def target_lists(self, x: torch.Tensor, y: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """``[n, j]`` target classes per row, in the order they are attacked; -1 pads a shorter list."""
        raise NotImplementedError  # pragma: no cover - abstract

    def run_correct(self, x, y, idx, logits, best, best_margin, riders) -> None:
        atk = self._make(x)
        targets = self.target_lists(x[idx], y[idx], logits[idx])
        robust = torch.ones(len(idx), dtype=torch.bool, device=idx.device)
        for column in range(targets.shape[1]):
            for restart in range(self.n_restarts):
                rows = (robust & (targets[:, column] >= 0)).nonzero().squeeze(1)
                if rows.numel() == 0:
                    continue
                atk.y_target = targets[rows, column]
                if riders is not None and riders.numel():
                    atk.y_target = torch.cat([atk.y_target, self._wrong_target(logits, y, riders)])
                run = column * self.n_restarts + restart
                salt = ("target", column + 2, restart)  # apgd-t's salts: its first target is rank 2
                found = self.apgd_run(atk, x, y, idx[rows], best, best_margin, *salt, run=run, riders=riders)
                robust[rows[~found]] = False
                riders = None
        if riders is not None and riders.numel():  # no row had a target: the riders run on their own
            self.run_misclassified(x, y, riders, logits, best, best_margin)


@registered_as("apgd-t-malt")
class APGDTMalt(_APGDTOnTargets):
    """MALT ranks the ``min(100, C - 1)`` highest wrong classes by their linearised distance; with 10
    classes or fewer this only reorders AutoAttack's targets."""

    def target_lists(self, x, y, logits):
        return malt_targets(self.model, x, y, self.n_target_classes, self.norm, logits=logits)


@registered_as("apgd-t-rest")
class APGDTRest(_APGDTOnTargets):
    """Run after ``apgd-t-malt`` with ``n_target_classes = skip_malt_targets``, the two together attack
    every target AutoAttack's APGD-T attacks (and, with many classes, MALT's choices beyond them)."""

    def target_lists(self, x, y, logits):
        ours = autoattack_targets(logits, self.n_target_classes)
        if self.skip_malt_targets == 0:
            return ours
        ran = malt_targets(self.model, x, y, self.skip_malt_targets, self.norm, logits=logits)
        return targets_not_in(ours, ran)

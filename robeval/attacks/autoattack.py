"""APGD-CE, APGD-T, FAB-T and Square through the AutoAttack code (package ``pyautoattack``), and
APGD-DLR and untargeted FAB for AutoAttack's "plus" version (protocol ``aa-plus``).

Why we drive ``attack_single_run`` through ``perturb``'s cascade ourselves, and keep per example the
lowest-margin point: docs/attacks.md, section "Every example is attacked".  When the call names its
examples (the engine's calls: every start is drawn from its example's own generator) APGD's rows are
independent of their batch, so the examples misclassified on the clean image ride along in the first
run of the correctly classified ones, each from its own start and target: one run of the whole batch
instead of a second, small run (the same points, without a second run's per-step costs).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from pyautoattack.autopgd_base import APGDAttack, APGDAttack_targeted
from pyautoattack.fab_pt import FABAttack_PT
from pyautoattack.square import SquareAttack

from ..core.norms import perturbation_size
from .base import Attack, margin
from .convergence import fell, queries, reading_at
from .registry import registered_as


def _keep_lowest_margin(
    model, y: torch.Tensor, best: torch.Tensor, best_margin: torch.Tensor, idx: torch.Tensor, *candidates: torch.Tensor
) -> None:
    """Update ``best[idx]`` in place with any candidate whose margin is lower."""
    with torch.no_grad():
        for cand in candidates:
            m = margin(model(cand), y[idx])
            better = m < best_margin[idx]
            best[idx[better]] = cand[better]
            best_margin[idx[better]] = m[better]


def library_attack(attack: Attack, cls: type, x: torch.Tensor, *names: str, **keywords: Any) -> Any:
    """AutoAttack's class ``cls`` on ``attack``'s model: its threat model, seed and device, its settings
    ``names``, and ``keywords`` (over those); set up for ``x`` as its ``perturb`` would (APGD, Square)."""
    options = dict(norm=attack.norm, eps=attack.eps, seed=attack.seed, device=x.device)
    atk = cls(attack.model, **{**options, **{n: getattr(attack, n) for n in names}, **keywords})
    if hasattr(atk, "init_hyperparam"):
        atk.init_hyperparam(x)
    return atk


class _AutoAttackRunner(Attack):
    """Shared frame: split correct / misclassified, collect lowest-margin points."""

    library_draws = True

    n_iter: int  # the settings every AutoAttack attack here has (each class's defaults say which it uses)
    n_restarts: int
    eot_iter: int
    n_target_classes: int
    rho: float
    alpha_max: float
    eta: float
    beta: float
    n_queries: int
    p_init: float

    # APGD: the misclassified examples can join the first run of the correct ones (module docstring, 2.)
    rides_along = False

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad(), reading_at(self.model, 0):  # a convergence curve's start: the clean image
            logits = self.model(x)
        correct = logits.argmax(1) == y
        best = x.clone()
        best_margin = margin(logits, y)
        idx, wrong = correct.nonzero().squeeze(1), (~correct).nonzero().squeeze(1)
        riders = wrong if self.rides_along and self.examples is not None and idx.numel() else wrong[:0]
        self.run_correct(x, y, idx, logits, best, best_margin, riders)
        if wrong.numel() > riders.numel():
            self.run_misclassified(x, y, wrong, logits, best, best_margin)
        return best

    def run_correct(self, x, y, idx, logits, best, best_margin, riders) -> None:  # pragma: no cover - abstract
        """Attack the correctly classified rows ``idx``; ``riders`` (misclassified rows, empty unless
        ``rides_along``) join the first run."""
        raise NotImplementedError

    def run_misclassified(self, x, y, idx, logits, best, best_margin) -> None:
        """Default: nothing to optimise (decision-based attacks); the clean image stays."""

    def apgd_start(self, x: torch.Tensor, rows: torch.Tensor, *salt) -> torch.Tensor | None:
        """APGD's random start for the examples at ``rows`` (``x`` holds their images), drawn from each
        example's own generator: AutoAttack's distribution (``x + eps * t / ||t||`` with ``t`` uniform
        in [-1, 1] for Linf, Gaussian for L2), so a row's start does not depend on its batch.  None
        when the call named no examples: AutoAttack then draws it as in its own code."""
        if self.examples is None:
            return None
        if self.norm == "Linf":
            t = 2 * self.draw(x, "uniform", *salt, rows=rows.tolist()) - 1
            scale = t.flatten(1).abs().amax(1).clamp_min(1e-12)
        else:
            t = self.draw(x, "normal", *salt, rows=rows.tolist())
            scale = t.flatten(1).norm(dim=1).clamp_min(1e-12)
        return x + self.eps * t / scale.view(-1, *[1] * (x.dim() - 1))

    def apgd_run(self, atk, x, y, rows, best, best_margin, *salt, run: int | None = None, riders=None) -> torch.Tensor:
        """One APGD run on the examples at ``rows`` from their seeded start; both of its points compete
        for the lowest margin.  Returns which of ``rows`` it left robust.  ``run``: its place among the
        attack's runs (restarts, targets), where a watched call's curve puts its iterations (iteration
        ``i``'s prediction, its last EOT pass, at ``run * n_iter + i``; riders are not on the curve).
        ``riders``: misclassified rows attacked in the same run from their own ("misclassified")
        start, after ``rows`` (``atk.y_target``, for APGD-T, then covers both)."""
        start = self.apgd_start(x[rows], rows, *salt)
        attacked = rows
        if riders is not None and riders.numel():  # only when the call named its examples: starts are drawn
            rider_start = self.apgd_start(x[riders], riders, "misclassified")
            assert start is not None and rider_start is not None
            start, attacked = torch.cat([start, rider_start]), torch.cat([rows, riders])
        marked = nullcontext() if run is None else reading_at(self.model, run * self.n_iter, rows)
        with marked:
            x_best, acc, _, x_best_adv = atk.attack_single_run(x[attacked].clone(), y[attacked].clone(), start)
        _keep_lowest_margin(self.model, y, best, best_margin, attacked, x_best_adv, x_best)
        return acc[: len(rows)].bool()


@registered_as("apgd-ce")
class APGDCE(_AutoAttackRunner):
    loss = "ce"
    marks_positions = True  # its margin checks run between its runs
    rides_along = True

    def budget(self) -> float:
        return (self.n_iter + 1) * self.n_restarts * self.eot_iter

    def curve_budget(self) -> int:
        return self.n_iter * self.n_restarts

    def _make(self, x):
        return library_attack(self, APGDAttack, x, "n_iter", "n_restarts", "rho", "eot_iter", loss=self.loss)

    def run_correct(self, x, y, idx, logits, best, best_margin, riders) -> None:
        atk = self._make(x)
        robust = idx
        for restart in range(self.n_restarts):  # AutoAttack's restart loop: only still-robust points
            if robust.numel() == 0:
                break
            found = self.apgd_run(atk, x, y, robust, best, best_margin, "restart", restart, run=restart, riders=riders)
            robust, riders = robust[found], None

    def run_misclassified(self, x, y, idx, logits, best, best_margin) -> None:
        self.apgd_run(self._make(x), x, y, idx, best, best_margin, "misclassified")


@registered_as("apgd-dlr")
class APGDDLR(APGDCE):
    loss = "dlr"


@registered_as("apgd-t")
class APGDT(_AutoAttackRunner):
    marks_positions = True  # its margin checks and target choices run between its runs
    rides_along = True

    def budget(self) -> float:
        return (self.n_iter + 2) * self.n_restarts * self.eot_iter * self.n_target_classes

    def curve_budget(self) -> int:
        return self.n_iter * self.n_restarts * self.n_target_classes

    def _make(self, x):
        names = ("n_iter", "n_restarts", "rho", "eot_iter", "n_target_classes")
        return library_attack(self, APGDAttack_targeted, x, *names)

    def run_correct(self, x, y, idx, logits, best, best_margin, riders) -> None:
        atk = self._make(x)
        robust = idx
        for target_rank in range(2, self.n_target_classes + 2):  # AutoAttack's target loop
            for restart in range(self.n_restarts):
                if robust.numel() == 0:
                    return
                with torch.no_grad():
                    order = self.model(x[robust]).sort(dim=1)[1]
                atk.y_target = order[:, -target_rank]
                if riders is not None and riders.numel():
                    atk.y_target = torch.cat([atk.y_target, self._wrong_target(logits, y, riders)])
                run = (target_rank - 2) * self.n_restarts + restart
                salt = ("target", target_rank, restart)
                found = self.apgd_run(atk, x, y, robust, best, best_margin, *salt, run=run, riders=riders)
                robust, riders = robust[found], None

    @staticmethod
    def _wrong_target(logits: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """A misclassified example's target: its highest-scoring wrong class on the clean image."""
        return logits[idx].scatter(1, y[idx, None], float("-inf")).argmax(1)

    def run_misclassified(self, x, y, idx, logits, best, best_margin) -> None:
        atk = self._make(x)
        atk.y_target = self._wrong_target(logits, y, idx)
        self.apgd_run(atk, x, y, idx, best, best_margin, "misclassified")


class _FAB(_AutoAttackRunner):
    """AutoAttack's FAB loops: per target (targeted) and per restart, only still-robust points; a
    point counts when it fools the model within eps (as in AutoAttack)."""

    targeted = False
    n_target_classes = 1

    def budget(self) -> float:
        return 2 * (self.n_iter + 1) * self.n_restarts * self.n_target_classes

    def run_correct(self, x, y, idx, logits, best, best_margin, riders) -> None:
        names = ("n_restarts", "n_iter", "alpha_max", "eta", "beta", "n_target_classes")
        atk = library_attack(self, FABAttack_PT, x, *names, targeted=self.targeted)
        robust = idx
        targets = range(2, self.n_target_classes + 2) if self.targeted else [None]
        with torch.no_grad():
            for target_rank in targets:  # AutoAttack's target loop
                atk.target_class = target_rank
                for counter in range(self.n_restarts):
                    if robust.numel() == 0:
                        return
                    x_r, y_r = x[robust].clone(), y[robust].clone()
                    adv = atk.attack_single_run(x_r, y_r, use_rand_start=counter > 0, is_targeted=self.targeted)
                    dist = perturbation_size(adv, x_r, self.norm, dtype=adv.dtype)  # AutoAttack's own test
                    fooled = (self.model(adv).argmax(1) != y_r) & (dist <= self.eps)
                    if fooled.any():
                        best[robust[fooled]] = adv[fooled]
                        best_margin[robust[fooled]] = margin(self.model(adv[fooled]), y_r[fooled])
                    robust = robust[~fooled]


@registered_as("fab-t")
class FABT(_FAB):
    targeted = True


@registered_as("fab")
class FAB(_FAB):
    """AutoAttack's untargeted FAB (minimal perturbation); part of protocol aa-plus"""


@registered_as("square")
class Square(_AutoAttackRunner):
    marks_positions = True  # its queries cover only the rows it has not fooled

    def budget(self) -> float:
        return (self.n_queries + 1) * self.n_restarts

    def curve_budget(self) -> int:
        return (self.n_queries + 1) * self.n_restarts

    def run_correct(self, x, y, idx, logits, best, best_margin, riders) -> None:
        names = ("n_queries", "p_init", "n_restarts")
        atk = library_attack(self, SquareAttack, x, *names, loss="margin", resc_schedule=False)
        robust = idx
        for restart in range(self.n_restarts):
            if robust.numel() == 0:
                break
            with queries(self.model) as sizes, torch.inference_mode():  # queries only: no autograd at all
                _, adv = atk.attack_single_run(x[robust].clone(), y[robust].clone())
            _keep_lowest_margin(self.model, y, best, best_margin, robust, adv)
            still = best_margin[robust] > 0
            # a watched restart's curve: Square queries only the examples it has not fooled, so the rows
            # of its queries tell how many fell at each (:func:`~.convergence.fell`)
            fell(self.model, robust[~still], sizes + [int(still.sum())], restart * (self.n_queries + 1))
            robust = robust[still]

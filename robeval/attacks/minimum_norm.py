"""Minimum-norm attacks: per example, the smallest perturbation found that changes the top-1 decision
(``fmn``, ``fab-mn``: docs/soundness.md, section "Minimum-norm attacks").

One search serves every eps: :meth:`MinimumNormAttack.find_points` returns per example the smallest
fooling point found (the clean image where none was), :func:`search_norms` its size, and
:func:`within_eps` the point an eps-bounded attack returns.  Called as any attack (``attack(x, y)``)
it does the search and returns the eps-bounded points.
"""

from __future__ import annotations

import math
import warnings

import torch

from ..core.norms import perturbation_size
from .base import Attack
from .registry import registered_as


def search_norms(
    x: torch.Tensor, x_min: torch.Tensor, clean_pred: torch.Tensor, min_pred: torch.Tensor, y: torch.Tensor, norm: str
) -> torch.Tensor:
    """Each example's minimal perturbation: 0 when the clean image is already misclassified, the size
    of ``x_min`` when it fools the model, ``inf`` when the search found nothing."""
    size = perturbation_size(x_min, x, norm)
    size = torch.where(min_pred != y, size, torch.full_like(size, math.inf))
    return torch.where(clean_pred != y, torch.zeros_like(size), size)


def fooled_within(norms: torch.Tensor, eps: float) -> torch.Tensor:
    """Per example: does its minimum-norm point (not the clean image itself) count at ``eps``?"""
    return (norms <= eps) & (norms > 0)


def within_eps(x: torch.Tensor, x_min: torch.Tensor, norms: torch.Tensor, eps: float) -> torch.Tensor:
    """The minimum-norm point where its norm is at most ``eps``, the clean image elsewhere."""
    return torch.where(fooled_within(norms, eps).view(-1, *[1] * (x.dim() - 1)), x_min, x)


class MinimumNormAttack(Attack):
    """Subclasses implement :meth:`minimal` (unbounded search, clean image where nothing is found)."""

    steps: int  # the settings of the two searches (each class's defaults say which it uses)
    max_stepsize: float
    gamma: float
    n_iter: int
    n_restarts: int
    restart_radius: float
    alpha_max: float
    eta: float
    beta: float

    def find_points(self, x: torch.Tensor, y: torch.Tensor, seed: int | None = None, examples=None) -> torch.Tensor:
        """The smallest fooling point per example, inside the attack's seeded RNG (eps is not used)."""
        with self.drawing(x, seed, examples):
            return self.minimal(x.detach(), y.detach()).detach()

    def minimal(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x_min = self.minimal(x, y)
        with torch.no_grad():
            clean_pred, min_pred = self.model(x).argmax(1), self.model(x_min).argmax(1)
        return within_eps(x, x_min, search_norms(x, x_min, clean_pred, min_pred, y, self.norm), self.eps)


def _fixed_l2_fmn():
    """foolbox 3.3.4's ``L2FMNAttack.project`` never projects (its factor is ``norms / norms``, i.e. 1,
    and it measures ``x`` instead of ``x - x0``), so its L2 search does not shrink the norm; this
    subclass projects ``x - x0`` onto the L2 ball of radius epsilon, as the FMN paper does."""
    import eagerpy as ep
    from foolbox.attacks import L2FMNAttack
    from foolbox.devutils import atleast_kd, flatten

    class ProjectedL2FMN(L2FMNAttack):
        def project(self, x, x0, epsilon):
            delta = x - x0
            norms = ep.maximum(flatten(delta).norms.l2(axis=-1), 1e-12)
            return x0 + delta * atleast_kd(ep.minimum(1, epsilon / norms), x.ndim)

    return ProjectedL2FMN


@registered_as("fmn")
class FMN(MinimumNormAttack):
    """Deterministic (starts at the clean image, no random draws).  Its settings (50 steps, ``gamma``
    0.2, not foolbox's 100 and 0.05) and why it stalls in L2 on saturated images: docs/soundness.md,
    section "Minimum-norm attacks"."""

    def budget(self) -> float:
        return self.steps + 2

    def minimal(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with warnings.catch_warnings():  # foolbox 3.3.4 imports a scipy namespace scipy has deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            import foolbox

        cls = foolbox.attacks.LInfFMNAttack if self.norm == "Linf" else _fixed_l2_fmn()
        attack = cls(steps=self.steps, max_stepsize=self.max_stepsize, gamma=self.gamma)
        bounds = self.clip if self.clip is not None else (-math.inf, math.inf)
        model = foolbox.PyTorchModel(self.model.eval(), bounds=bounds, device=x.device)
        return attack.run(model, x, foolbox.criteria.Misclassification(y)).detach()


@registered_as("fab-mn")
class FABMinimumNorm(MinimumNormAttack):
    def budget(self) -> float:
        return 2 * (self.n_iter + 1) * max(1, self.n_restarts)

    def minimal(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from pyautoattack.fab_pt import FABAttack_PT

        from .autoattack import library_attack

        names = ("n_iter", "alpha_max", "eta", "beta")
        atk = library_attack(self, FABAttack_PT, x, *names, eps=self.restart_radius, n_restarts=1)
        best, best_size = x.clone(), torch.full((len(x),), math.inf, dtype=torch.float64, device=x.device)
        with torch.no_grad():
            for restart in range(max(1, self.n_restarts)):
                adv = atk.attack_single_run(x, y, use_rand_start=restart > 0, is_targeted=False)
                size = perturbation_size(adv, x, self.norm)
                size[(self.model(adv).argmax(1) == y) | (size == 0)] = math.inf
                better = size < best_size
                best[better], best_size[better] = adv[better], size[better]
        return best

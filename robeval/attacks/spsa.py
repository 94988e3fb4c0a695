"""SPSA (Uesato et al. 2018), batched over examples *and* samples.

Why our own: torchattacks' SPSA (from advertorch) evaluates the perturbed copies sample-chunk by
sample-chunk and re-expands the whole batch for every chunk, which on small models spends most of
its time outside the model; its defaults (eps 0.3, 1 iteration) are also a trap.  This version
draws independent Rademacher directions per example, evaluates the +/- pairs of as many examples
and samples as fit in ``max_batch`` images in one forward pass, runs Adam element-wise on the
perturbation, and keeps each example's best iterate (lowest margin), so a point once fooled stays
fooled.  It runs under ``torch.inference_mode`` (it needs no autograd at all): on this project's
2-core AVX2 CPU that made it 1.4x faster than under ``no_grad`` (benchmarks/spsa_vs_torchattacks.py,
9.47 s -> 6.72 s), with the same records.  ``samples`` counts evaluated inputs per step as in cleverhans' SPSA, which the
Elliptical-Attention paper used: 128 samples = 64 antithetic +/- pairs (torchattacks' ``nb_sample``
counts pairs instead, so its 128 means 256 forward passes per step).
With ``early_stop`` (the default) an example that was correctly classified stops being optimised once
its top-1 is fooled, as Square and AutoAttack's cascade do: its top-1 outcome cannot change (the
best iterate is kept), and the saved forward passes go to the examples still standing.  Examples
misclassified from the start run every iteration, so their top-5 is still measured under attack.
"""

from __future__ import annotations

import torch

from .base import PER_EXAMPLE, Attack, margin
from .convergence import ITERATIONS
from .registry import register_attack

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


@register_attack(
    "spsa",
    title="SPSA",
    implementation="robeval (batched SPSA + Adam)",
    kind="black-box",
    norms=("Linf",),
    randomness=PER_EXAMPLE,
)
class SPSA(Attack):
    """gradient-free: finite differences along random +/-1 directions, Adam on the margin loss

    Its convergence curve sees the start at position 0 and step ``k``'s new iterate at position ``k``
    (the pass that decides whether it is the example's best)."""

    curve_axis, curve_setting = ITERATIONS, "iterations"
    defaults = dict(
        iterations=40, samples=128, lr=0.01, delta=0.01, max_batch=1024, random_start=False, early_stop=True
    )
    iterations: int
    samples: int
    lr: float
    delta: float
    max_batch: int
    random_start: bool
    early_stop: bool

    def directions(self, x: torch.Tensor, pairs: int, gens: list | None) -> torch.Tensor:
        """``[pairs, B, ...]`` random signs (int8 0/1), each example's from its own generator when given."""
        if gens is None:
            return torch.randint(0, 2, (pairs, *x.shape), device=x.device, dtype=torch.int8)
        return torch.stack(
            [torch.randint(0, 2, (pairs, *x.shape[1:]), generator=g, device=x.device, dtype=torch.int8) for g in gens],
            dim=1,
        )

    @torch.inference_mode()
    def estimate_gradient(self, x: torch.Tensor, y: torch.Tensor, gens: list | None = None) -> torch.Tensor:
        """SPSA estimate of d margin / d x for each example of ``x`` (``gens``: one generator per example)."""
        b = x.shape[0]
        pairs = self.samples // 2  # an even count of at least 2 (robeval.settings)
        signs = self.directions(x, pairs, gens)
        grad = torch.zeros_like(x)
        per_chunk = max(1, self.max_batch // (2 * b))
        done = 0
        while done < pairs:
            k = min(per_chunk, pairs - done)
            v = signs[done : done + k].to(x.dtype).mul_(2).sub_(1)
            shifted = torch.cat([x + self.delta * v, x - self.delta * v]).flatten(0, 1)
            m = margin(self.model(shifted), y.repeat(2 * k)).view(2, k, b)
            df = (m[0] - m[1]) / (2.0 * self.delta)  # [k, b]
            grad += (df.view(k, b, *[1] * (x.dim() - 1)) * v).sum(0)
            done += k
        return grad / pairs

    def budget(self) -> float:
        return self.iterations * (self.samples + 1) + 1

    def curve_budget(self) -> int:
        return self.iterations

    @torch.inference_mode()
    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x_adv = self.random_init(x) if self.random_start else x.clone()
        best = x_adv.clone()
        logits = self.model(best)
        self.saw(0, logits, y)
        best_margin = margin(logits, y)
        exp_avg = torch.zeros_like(x)
        exp_sq = torch.zeros_like(x)
        active = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
        misclassified_from_start = best_margin <= 0
        gens = self.example_generators(x.device, "directions")
        beta1, beta2 = ADAM_BETAS
        for step in range(1, self.iterations + 1):
            if self.early_stop:
                active = misclassified_from_start | (best_margin > 0)
            idx = active.nonzero().squeeze(1)
            if idx.numel() == 0:
                break
            xa, ya = x_adv[idx], y[idx]
            g = self.estimate_gradient(xa, ya, None if gens is None else [gens[int(i)] for i in idx])
            m1 = exp_avg[idx].mul_(beta1).add_(g, alpha=1 - beta1)
            m2 = exp_sq[idx].mul_(beta2).addcmul_(g, g, value=1 - beta2)
            exp_avg[idx], exp_sq[idx] = m1, m2
            denom = (m2 / (1 - beta2**step)).sqrt_().add_(ADAM_EPS)
            xa = self.project(xa - self.lr * (m1 / (1 - beta1**step)) / denom, x[idx])
            x_adv[idx] = xa
            logits = self.model(xa)
            self.saw(step, logits, ya, idx)
            cur = margin(logits, ya)
            better = cur < best_margin[idx]
            best[idx[better]] = xa[better]
            best_margin[idx[better]] = cur[better]
        return best

"""SPSA (Uesato et al. 2018), batched over examples *and* directions.

``samples`` counts antithetic +/- pairs; the two procedures (``standard``, ``nielsen2024`` with its
``estimate_at_2x`` slip from cleverhans' PyTorch SPSA, the authors' ``ImageAttack/spsa.py``) and what
each costs: see docs/attacks.md, section SPSA.  Both run Adam (torch's defaults: betas 0.9/0.999, eps
1e-8, the step count's bias corrections) on the perturbation against the margin
``z_y - max_{j != y} z_j``, and project onto the eps ball and the input box after every step, as
cleverhans does.

Why our own: torchattacks' SPSA (from advertorch) evaluates the perturbed copies sample-chunk by
sample-chunk and re-expands the whole batch for every chunk, shares one direction across the
examples of a batch, and its defaults (eps 0.3, 1 iteration) are a trap; cleverhans' attacks one image
at a time.  This version draws independent Rademacher directions per example from the example's own
generator (records do not depend on the batch size), evaluates the +/- pairs of as many examples and
directions as fit in ``max_batch`` images (and the memory of 1,024 ImageNet images) in one forward
pass, and runs under ``torch.inference_mode`` (it needs no autograd at all).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import Attack, margin
from .convergence import is_watched, reading_at
from .registry import registered_as

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
# A forward pass holds at most as many input values as 1,024 ImageNet images (3 x 224 x 224): the
# memory ``max_batch`` images of that size take.  Smaller images go ``max_batch`` at a time: on 8x8
# digits a pass of 1,024 cost about half per image what one of 8,192 did on a quiet 2-core CPU, where the
# larger pass leaves the caches (benchmarks/demo_run.py; benchmarks/RESULTS.md).
MAX_PASS_VALUES = 1024 * 3 * 224 * 224


@dataclass
class Search:
    """One call's state, row by row: the images, the iterates and their Adam moments, the points the
    call will return with their margins, and what each row has cost so far."""

    x: torch.Tensor
    y: torch.Tensor
    x_adv: torch.Tensor
    exp_avg: torch.Tensor
    exp_sq: torch.Tensor
    kept: torch.Tensor  # the best iterate per row (with ``keep_best``)
    kept_margin: torch.Tensor  # the margin of the point returned: best or current (+inf: not evaluated)
    misclassified_from_start: torch.Tensor
    gens: list | None  # one generator per row (None: the forked global RNG)
    evaluations: torch.Tensor  # model evaluations each row has cost
    steps: torch.Tensor  # iterations each row has run

    def running(self, early_stop: bool) -> torch.Tensor | None:
        """The rows the next step optimises (None: every row).  Examples misclassified from the start
        run every iteration, so that their top-5 is measured under attack."""
        if not early_stop:
            return None
        active = self.misclassified_from_start | (self.kept_margin > 0)
        return None if bool(active.all()) else active.nonzero().squeeze(1)


@registered_as("spsa")
class SPSA(Attack):
    """Its convergence curve sees the start at position 0 and step ``k``'s new iterate at position ``k``."""

    marks_positions = True  # its finite differences run between the iterates' evaluations
    iterations: int
    samples: int
    lr: float
    delta: float
    max_batch: int
    random_start: bool
    keep_best: bool
    early_stop: bool
    estimate_at_2x: bool
    # after a call: the model evaluations and the iterations each of its rows cost (the attack's own
    # passes; an example stopped early by ``early_stop`` shows fewer of both)
    evaluations: torch.Tensor | None = None
    steps: torch.Tensor | None = None

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
        """SPSA estimate of d margin / d x for each example of ``x`` from ``samples`` +/- pairs, each
        example's directions from its own generator of ``gens`` (2 x samples evaluations per example)."""
        b, pairs = x.shape[0], self.samples
        signs = self.directions(x, pairs, gens)
        grad = torch.zeros_like(x)
        most = max(1, self.images_per_pass(x) // (2 * b))
        per_chunk = -(-pairs // -(-pairs // most))  # as few passes as fit, of equal size (no small last one)
        for done in range(0, pairs, per_chunk):
            k = min(per_chunk, pairs - done)
            v = signs[done : done + k].to(x.dtype).mul_(2).sub_(1)
            dv = v.mul(self.delta)
            shifted = torch.cat([x + dv, x - dv]).flatten(0, 1)
            m = margin(self.model(shifted), y.repeat(2 * k)).view(2, k, b)
            df = (m[0] - m[1]).div_(2.0 * self.delta)  # [k, b]
            grad += (df.view(k, b, *[1] * (x.dim() - 1)) * v).sum(0)
        return grad.div_(pairs)

    def images_per_pass(self, x: torch.Tensor) -> int:
        """At most ``max_batch`` images and :data:`MAX_PASS_VALUES` input values per forward pass."""
        return max(2, min(self.max_batch, MAX_PASS_VALUES // max(1, x[0].numel())))

    def tracks_iterates(self) -> bool:
        """Whether each new iterate is evaluated: for the best iterate, the early stop or a watched call."""
        return self.keep_best or self.early_stop or is_watched(self.model)

    def budget(self) -> float:
        """At most this many forward passes per example (the iterates' evaluations included)."""
        return self.iterations * (2 * self.samples + 1) + 1

    def curve_budget(self) -> int:
        return self.iterations

    @torch.inference_mode()
    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        search = self.start(x, y)
        for step in range(1, self.iterations + 1):
            rows = search.running(self.early_stop)
            if rows is not None and rows.numel() == 0:
                break
            self.step(search, step, rows)
        self.evaluations, self.steps = search.evaluations, search.steps
        return search.kept if self.keep_best else search.x_adv

    def start(self, x: torch.Tensor, y: torch.Tensor) -> Search:
        """The search at its start: the image or a uniform random point of the ball, evaluated when tracked."""
        x_adv = self.random_init(x) if self.random_start else x.clone()
        n = x.shape[0]
        kept_margin = torch.full((n,), float("inf"), device=x.device)
        evaluations = torch.zeros(n, dtype=torch.long, device=x.device)
        if self.tracks_iterates():
            with reading_at(self.model, 0):
                logits = self.model(x_adv)
            kept_margin = margin(logits, y)
            evaluations += 1
        return Search(
            x=x,
            y=y,
            x_adv=x_adv,
            exp_avg=torch.zeros_like(x),
            exp_sq=torch.zeros_like(x),
            kept=x_adv.clone(),
            kept_margin=kept_margin,
            misclassified_from_start=kept_margin <= 0,
            gens=self.example_generators(x.device, "directions"),
            evaluations=evaluations,
            steps=torch.zeros(n, dtype=torch.long, device=x.device),
        )

    def step(self, s: Search, step: int, rows: torch.Tensor | None) -> None:
        """One Adam step on ``rows`` (None: every row) from an SPSA gradient estimate, projected."""
        at = slice(None) if rows is None else rows
        xa, ya, x0 = s.x_adv[at], s.y[at], s.x[at]
        gens = s.gens if rows is None or s.gens is None else [s.gens[int(i)] for i in rows]
        g = self.estimate_gradient(2 * x0 if self.estimate_at_2x else xa, ya, gens)
        beta1, beta2 = ADAM_BETAS
        m1 = s.exp_avg[at].mul_(beta1).add_(g, alpha=1 - beta1)
        m2 = s.exp_sq[at].mul_(beta2).addcmul_(g, g, value=1 - beta2)
        s.exp_avg[at], s.exp_sq[at] = m1, m2  # rows picked by index are copies (every row: views, kept)
        denom = (m2 / (1 - beta2**step)).sqrt_().add_(ADAM_EPS)
        xa = self.project(xa - self.lr * (m1 / (1 - beta1**step)) / denom, x0)
        s.x_adv[at] = xa
        s.evaluations[at] += 2 * self.samples
        s.steps[at] += 1
        if self.tracks_iterates():
            self.judge(s, step, rows, xa, ya)

    def judge(self, s: Search, step: int, rows: torch.Tensor | None, xa: torch.Tensor, ya: torch.Tensor) -> None:
        """Evaluate the new iterates of ``rows`` (None: every row): the curve sees them, and each row
        keeps its best point (or, without ``keep_best``, the current iterate's margin)."""
        with reading_at(self.model, step, rows):
            logits = self.model(xa)
        cur = margin(logits, ya)
        at = slice(None) if rows is None else rows
        s.evaluations[at] += 1
        if not self.keep_best:
            s.kept_margin[at] = cur
            return
        better = cur < s.kept_margin[at]
        where = better if rows is None else rows[better]
        s.kept[where], s.kept_margin[where] = xa[better], cur[better]

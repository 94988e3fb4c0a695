"""One model's attacks on one batch: each (eps, attack) unit seeded, counted, verified against the
threat model and turned into records.  Minimum-norm attacks search once per batch and serve every
eps from that search.  A long attack reports its progress inside the unit (model passes spent
against its budget)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..attacks import create
from ..attacks.convergence import grid, robust_along
from ..attacks.minimum_norm import MinimumNormAttack, fooled_within, minimal_norms
from ..attacks.transfer import TransferAttack
from ..eps import Eps
from ..norms import perturbation_norms
from ..precision import Precision, crafting, strict_fp32
from .attack_guards import (
    AttackBoundsError,
    PassCounter,
    attack_with_halving,
    derive_seed,
    topk_hits,
    verify_adversarial,
)
from .cascade import Cascade
from .plan import ModelJob, RunPlan
from .precision_check import PrecisionCheck
from .progress import throttled
from .unit_records import BatchOutcome, Unit, UnitCurve, add_records

Logits = Callable[[torch.Tensor, str], torch.Tensor]  # the checked, gradient-free forward pass


def curves_omitted(precision: Precision) -> str | None:
    """Why a run crafting in ``precision`` records no convergence curves (None: it records them)."""
    if not precision.reduced:
        return None
    return (
        f"no convergence curves under --precision {precision.name}: the attacks' own passes are not the "
        "strict-fp32 passes the records count, so a curve would not end at the records' robust accuracy "
        "(a --precision fp32 run records them)"
    )


def attack_failure(attack: str, eps: str, batch: int, exc: Exception) -> str:
    """One line for an attack that raised: what, where in the run, and where in the code."""
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    if isinstance(exc, AttackBoundsError):
        return f"{text} (eps {eps}, batch {batch})"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"attack {attack} failed at eps {eps}, batch {batch}: {type(exc).__name__}: {text}{where}"


@dataclass
class MinimumNormFound:
    points: torch.Tensor  # the smallest fooling point per example (clean image where none was found)
    logits: torch.Tensor  # the target's logits on them (at each eps a row takes these or the clean ones)
    norms: torch.Tensor  # its size (0: misclassified clean, inf: none found)
    passes: tuple[float, float]  # forward / backward passes per example of the search


@dataclass
class BatchAttack:
    """What the units of one batch share: the images as attacked, labels, clean logits and records."""

    b: int
    xa: torch.Tensor
    y: torch.Tensor
    clean_logits: torch.Tensor
    base: dict  # the record fields every unit of the batch shares (model, batch, example, label, clean hits)


# Told of every unit's points once they are checked against the threat model: (the batch as attacked,
# eps, attack, the adversarial points).  The gallery keeps the images a run's records describe.
CraftObserver = Callable[["BatchAttack", Eps, str, torch.Tensor], None]


class AttackUnits:
    """The attacks of ``job`` under ``plan`` on the counted ``target``, one per (eps, attack); under a
    reduced precision each white-box attack crafts again in fp32 on ``check.model`` (the model as
    counted, its passes uncounted) for the examples ``check`` samples.  ``observers`` are told of each
    unit's points (:data:`CraftObserver`); the records never depend on them."""

    def __init__(
        self,
        job: ModelJob,
        plan: RunPlan,
        counted: PassCounter,
        logits: Logits,
        outcome: BatchOutcome,
        check: PrecisionCheck,
        source=None,
    ) -> None:
        self.job, self.plan, self.counted, self.logits, self.outcome = job, plan, counted, logits, outcome
        self.check = check
        self.attacks = {(e.text, a): self._create(a, e, counted) for e in plan.config.eps for a in job.attacks}
        for attack in self.attacks.values():
            if isinstance(attack, TransferAttack):  # transfer attacks craft on the run's source model
                attack.source = source
        self.checkers = {
            (e.text, a): self._create(a, e, check.model)
            for e in plan.config.eps
            for a in job.attacks
            if check.covers(a)
        }
        self.cascade = Cascade(job.attacks, self._records) if plan.config.cascade else None
        self.with_curves = curves_omitted(plan.precision) is None
        self.curves: dict[tuple[int, str, str], UnitCurve | None] = {}  # (batch, eps, attack): this call's
        self.found: dict[tuple[int, str], MinimumNormFound] = {}  # minimum-norm searches of the current batch
        self.progress: Callable[[Unit, float], None] | None = None
        self.observers: list[CraftObserver] = []

    def _create(self, attack: str, eps: Eps, model):
        config = self.plan.config
        clip = self.plan.protocol.box(attack)
        return create(
            attack, model, eps.value, norm=config.norm, seed=config.seed, clip=clip, **self.plan.settings[attack]
        )

    def records(self, columns: dict[str, list], batch: BatchAttack, eps: Eps, attack: str) -> UnitCurve | None:
        """Run one unit into ``columns`` (under ``--cascade``: on the examples still robust); returns its
        convergence curve (None: its attack draws none, or the run records none)."""
        self.curves, key = {}, (batch.b, eps.text, attack)
        if self.cascade is None:
            self._records(columns, batch, eps, attack)
            return self.curves.get(key)
        attacked = self.cascade.records(columns, batch, eps, attack)
        self.outcome.count(self.outcome.attacked, f"{self.job.name}|{eps.text}|{attack}", attacked)
        return self._cascade_curve(self.curves.get(key), eps, attack, len(batch.y))

    def _cascade_curve(self, curve: UnitCurve | None, eps: Eps, attack: str, n: int) -> UnitCurve | None:
        """Under ``--cascade`` an attack runs on the examples every earlier attack left robust: the
        others count as fooled from its start (the unit's rows are the whole batch)."""
        if curve is not None:
            return UnitCurve(curve.positions, curve.robust, n)
        attacker = self.attacks[(eps.text, attack)]
        if not self._watched(attacker):
            return None
        positions = grid(attacker.curve_budget())  # it attacked no example
        return UnitCurve(positions, [0] * len(positions), n)

    def _watched(self, attacker) -> bool:
        return self.with_curves and getattr(attacker, "curve_axis", None) is not None

    def _curve(self, eps: Eps, attack: str, robust: torch.Tensor) -> UnitCurve | None:
        """The unit's curve from its attack's watched calls; the records' own pass on the returned points
        is the last look, at the end of the budget (for PGD the only look at its last iterate)."""
        attacker = self.attacks[(eps.text, attack)]
        observed, attacker.observed = getattr(attacker, "observed", None), None
        if not observed:
            return None
        counts = robust_along(observed, attacker.curve_budget(), robust)
        return None if counts is None else UnitCurve(grid(attacker.curve_budget()), counts, len(robust))

    def _seeding(self, attacker, batch, eps: Eps, attack: str) -> tuple[int, list[int] | None]:
        """The seed and example indices of an attack call: per unit and per example, or under ``--cascade``
        AutoAttack's own seeding for attacks from its code."""
        if self.cascade is not None and attacker.library_draws:
            return self.plan.config.seed, None
        return derive_seed(self.plan.config.seed, attack, eps.text, batch.b), batch.base["example"]

    def _records(self, columns: dict[str, list], batch, eps: Eps, attack: str) -> None:
        """One unit's records into ``columns``; its attack's points checked against the threat model."""
        x_adv, adv_logits, (fwd, bwd), min_norm = self._run(batch, eps, attack)
        verify_adversarial(attack, x_adv, batch.xa, eps.value, self.plan.config.norm, self.plan.protocol.box(attack))
        for observe in self.observers:
            observe(batch, eps, attack, x_adv)
        if adv_logits is None:
            adv_logits = self.logits(x_adv, f"{attack} images (batch {batch.b})")
        adv1, adv5 = topk_hits(adv_logits, batch.y)
        self.curves[(batch.b, eps.text, attack)] = self._curve(eps, attack, adv1)
        linf, l2 = perturbation_norms(x_adv, batch.xa)
        add_records(
            columns,
            **batch.base,
            attack=attack,
            eps=eps.text,
            eps_value=eps.value,
            adv_top1=adv1.tolist(),
            adv_top5=adv5.tolist(),
            adv_pred=adv_logits.argmax(1).tolist(),
            linf=linf.tolist(),
            l2=l2.tolist(),
            forward_passes=fwd + 1.0,
            backward_passes=bwd,
            min_norm=min_norm,
            fp32_top1=self._timed_fp32_check(batch, eps, attack),
        )

    def _timed_fp32_check(self, batch, eps: Eps, attack: str) -> list[float]:
        """:meth:`_fp32_check`, its time kept apart in run.json (``model|eps|attack|fp32-check``)."""
        tick = time.perf_counter()
        hits = self._fp32_check(batch, eps, attack)
        if (eps.text, attack) in self.checkers:
            self.outcome.time(f"{self.job.name}|{eps.text}|{attack}|fp32-check", time.perf_counter() - tick)
        return hits

    def _fp32_check(self, batch: BatchAttack, eps: Eps, attack: str) -> list[float]:
        """The unit's attack crafted again in strict fp32 on the batch's sampled examples (same seed,
        same per-example draws): each one's counted top-1 hit, NaN for the others."""
        out = [float("nan")] * len(batch.y)
        rows = self.check.rows(batch.base["example"]) if (eps.text, attack) in self.checkers else []
        if not rows:
            return out
        idx = torch.tensor(rows, device=batch.y.device)
        x, labels = batch.xa[idx], self._labels(batch, attack)[idx]
        checker = self.checkers[(eps.text, attack)]
        seed, examples = self._seeding(checker, batch, eps, attack)
        examples = None if examples is None else [examples[r] for r in rows]
        with strict_fp32():
            x_adv = attack_with_halving(checker, x, labels, seed, self.outcome, examples)
        verify_adversarial(attack, x_adv, x, eps.value, self.plan.config.norm, self.plan.protocol.box(attack))
        hits = self.logits(x_adv, f"{attack} images crafted in fp32 (batch {batch.b})").argmax(1) == batch.y[idx]
        for r, hit in zip(rows, hits.tolist()):
            out[r] = float(hit)
        return out

    def _labels(self, batch: BatchAttack, attack: str) -> torch.Tensor:
        return batch.clean_logits.argmax(1) if self.plan.protocol.label_source(attack) == "predicted" else batch.y

    def _run(self, batch: BatchAttack, eps: Eps, attack: str):
        """The unit's points, their logits when already known, passes per example and minimal norms."""
        attacker = self.attacks[(eps.text, attack)]
        if isinstance(attacker, MinimumNormAttack):  # read from the batch's one search: no pass of its own
            found = self._minimum_norm(batch, attack, attacker)
            kept = fooled_within(found.norms, eps.value)
            x_adv = torch.where(kept.view(-1, *[1] * (batch.xa.dim() - 1)), found.points, batch.xa)
            return (
                x_adv,
                torch.where(kept[:, None], found.logits, batch.clean_logits),
                found.passes,
                found.norms.tolist(),
            )
        self.counted.reset()
        self._listen((self.job.name, eps.text, attack, batch.b), attacker, len(batch.y))
        attacker.observed = [] if self._watched(attacker) else None
        try:
            seed, examples = self._seeding(attacker, batch, eps, attack)
            with crafting(self.plan.precision):
                x_adv = attack_with_halving(
                    attacker, batch.xa, self._labels(batch, attack), seed, self.outcome, examples
                )
        finally:
            self.counted.listener = None
        n = len(batch.y)
        return x_adv, None, (self.counted.forward_images / n, self.counted.backward_images / n), float("nan")

    def _listen(self, unit: Unit, attacker, n: int) -> None:
        """Report progress inside the unit: forward passes spent against the attack's budget."""
        budget = attacker.budget()
        if self.progress is None or not budget:
            return
        report = self.progress
        self.counted.listener = throttled(lambda passes: report(unit, n * min(1.0, passes / (budget * n))))

    def _minimum_norm(self, batch: BatchAttack, attack: str, attacker: MinimumNormAttack) -> MinimumNormFound:
        """A minimum-norm attack's search on the batch: run once (seeded without eps) and evaluated once,
        kept while the batch's other eps read it; its passes are reported under every eps it serves."""
        key = (batch.b, attack)
        if key not in self.found:
            self.found = {k: v for k, v in self.found.items() if k[0] == batch.b}  # only this batch's searches
            self.counted.reset()
            labels = self._labels(batch, attack)
            seed = derive_seed(self.plan.config.seed, attack, batch.b)
            with crafting(self.plan.precision):
                points = attack_with_halving(
                    attacker.find_points, batch.xa, labels, seed, self.outcome, batch.base["example"]
                )
            passes = (self.counted.forward_images / len(labels), self.counted.backward_images / len(labels))
            logits = self.logits(points, f"{attack} images (batch {batch.b})")
            norms = minimal_norms(
                batch.xa, points, batch.clean_logits.argmax(1), logits.argmax(1), labels, self.plan.config.norm
            )
            self.found[key] = MinimumNormFound(points, logits, norms, passes)
        return self.found[key]

"""One unit's records: an attack on a batch, its points checked against the threat model, counted and
evaluated; and the steps the engine's loop composes around it.

* :func:`run_unit`: the clean row, or one attack, with the steps around it: a minimum-norm attack's one
  search per batch, the fp32 re-check of a reduced ``--precision``, the convergence curve.
* :func:`cascade_unit`: ``--cascade`` (docs/speed.md, section AutoAttack's cascade).  A batch's state is
  rebuilt from its earlier attacks when a resumed run starts in the middle of it (deterministic; nothing
  is stored twice).
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..attacks.convergence import CurveWatch, Fooling, grid, reading, robust_along
from ..attacks.minimum_norm import MinimumNormAttack, fooled_within, search_norms, within_eps
from ..core.defaults import CLEAN
from ..core.eps import Eps
from ..core.errors import UserError
from ..core.norms import perturbation_norms
from ..core.precision import float32_math
from ..core.records import RECORD_COLUMNS, Columns, Unit, UnitCurve, unit_columns
from ..core.seeds import derive_seed
from .attack_guards import AttackBoundsError, ModelFailure, is_out_of_memory, topk_hits, verify_adversarial
from .model_run import Batch, ModelRun
from .run_info import RunLog


@dataclass
class UnitRecords:
    """What a unit gives: its records (one row per example of its batch), its convergence curve, the
    points its attack returned (the gallery crafts them again), the seconds it took and, under
    ``--cascade``, the examples its attack attacked."""

    key: Unit
    records: Columns
    curve: UnitCurve | None = None
    points: torch.Tensor | None = None
    seconds: float = 0.0
    attacked: int | None = None


@dataclass
class Points:
    """An attack's points on a batch, with what the records take from their making: model passes per
    example (forward, backward), the target's logits when already known, each example's minimal norm
    (minimum-norm attacks; a search's, kept on its batch, a tensor: 0 misclassified clean, inf none
    found, its point then the clean image) and the convergence readings of the attack's calls."""

    points: torch.Tensor
    passes: tuple[float, float]
    logits: torch.Tensor | None = None
    min_norm: torch.Tensor | list[float] | float = math.nan
    readings: list[Fooling] = field(default_factory=list)


def attack_failure(attack: str, eps: str, batch: int, exc: Exception) -> str:
    """One line for an attack that raised: what, where in the run, and where in the code."""
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    if isinstance(exc, AttackBoundsError):
        return f"{text} (eps {eps}, batch {batch})"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"attack {attack} failed at eps {eps}, batch {batch}: {type(exc).__name__}: {text}{where}"


def batch_records(
    base: dict[str, Any], eps: Eps, attack: str, hits: tuple, pred: list, norms: tuple, passes: tuple, **rest: Any
) -> Columns:
    """A unit's records, one row per example of its batch: the fields the batch's units share (``base``:
    :meth:`~.model_run.ModelRun.shared_fields`), top-1 and top-5 ``hits``, the predicted class, the
    perturbation's size (Linf, L2), the model passes (forward, backward) and ``rest``."""
    return unit_columns(
        **base,
        attack=attack,
        eps=eps.text,
        eps_value=eps.value,
        adv_top1=hits[0],
        adv_top5=hits[1],
        adv_pred=pred,
        linf=norms[0],
        l2=norms[1],
        forward_passes=passes[0],
        backward_passes=passes[1],
        **rest,
    )


def clean_records(batch: Batch, eps: Eps, attack: str, forward_passes: float) -> Columns:
    """Records of ``batch`` as its clean pass left it (no perturbation), under the name ``attack``."""
    hits, pred = (batch.base["clean_top1"], batch.base["clean_top5"]), batch.clean_logits.argmax(1).tolist()
    return batch_records(batch.base, eps, attack, hits, pred, (0.0, 0.0), (forward_passes, 0.0))


def run_unit(model: ModelRun, batch: Batch, eps: Eps, attack: str) -> UnitRecords:
    """One unit's records: the clean row (its time the batch's clean pass), or an attack's points
    checked against the threat model and evaluated in strict fp32.  An attack that raises stops this
    model (:class:`ModelFailure`, naming where)."""
    key = model.key(eps.text, attack, batch.b)
    if attack == CLEAN:
        seconds, batch.clean_seconds = batch.clean_seconds, 0.0
        return UnitRecords(key, clean_records(batch, eps, CLEAN, forward_passes=1.0), seconds=seconds)
    try:
        searches = isinstance(model.attacks[(eps.text, attack)], MinimumNormAttack)
        found = searched_points(model, batch, eps, attack) if searches else attack_points(model, batch, eps, attack)
        box = model.plan.protocol.box(attack)
        verify_adversarial(attack, found.points, batch.xa, eps.value, model.config.norm, box)
        what = f"{attack} images (batch {batch.b})"
        logits = found.logits if found.logits is not None else model.logits(found.points, what)
        adv1, adv5 = topk_hits(logits, batch.y)
        norms = tuple(n.tolist() for n in perturbation_norms(found.points, batch.xa))
        passes = (found.passes[0] + 1.0, found.passes[1])  # the records' own pass counts
        fp32_top1 = fp32_recheck(model, batch, eps, attack)
        hits, pred = (adv1.tolist(), adv5.tolist()), logits.argmax(1).tolist()
        records = batch_records(
            batch.base, eps, attack, hits, pred, norms, passes, min_norm=found.min_norm, fp32_top1=fp32_top1
        )
        return UnitRecords(key, records, unit_curve(model, eps, attack, found.readings, adv1), found.points)
    except (ModelFailure, UserError):
        raise
    except Exception as exc:
        raise ModelFailure(attack_failure(attack, eps.text, batch.b, exc)) from exc


def attack_points(model: ModelRun, batch: Batch, eps: Eps, attack: str) -> Points:
    """The unit's attack called on the batch: seeded, its passes counted, its progress told."""
    attacker = model.attacks[(eps.text, attack)]
    seed, examples = model.seeding(batch, eps, attack)
    n = len(batch.y)
    model.counted.reset()
    with model.progress(model.key(eps.text, attack, batch.b), attacker, n), float32_math(model.plan.precision.tf32):
        x_adv, readings = craft(attacker, batch.xa, model.labels(batch, attack), seed, examples, model.log)
    passes = (model.counted.forward_images / n, model.counted.backward_images / n)
    return Points(x_adv, passes, readings=readings)


def craft(
    attack, x: torch.Tensor, y: torch.Tensor, seed: int, examples: list[int] | None, log: RunLog
) -> tuple[torch.Tensor, list[Fooling]]:
    """``attack(x, y)`` with the convergence reading of its call (when its model is watched); on
    out-of-memory the batch halved and each half crafted again (recursively), ``log.oom_splits``
    counting the splits; ``examples``: the rows' data-set indices."""
    try:
        with reading(getattr(attack, "model", None), y) as fooling:
            x_adv = attack(x, y, seed=seed, examples=examples)
        return x_adv, [] if fooling is None else [fooling]
    except Exception as exc:
        if not is_out_of_memory(exc) or len(y) <= 1:
            raise
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    log.oom_splits += 1
    half = len(y) // 2
    lo, hi = (None, None) if examples is None else (examples[:half], examples[half:])
    x_lo, read_lo = craft(attack, x[:half], y[:half], derive_seed(seed, "lo"), lo, log)
    x_hi, read_hi = craft(attack, x[half:], y[half:], derive_seed(seed, "hi"), hi, log)
    return torch.cat([x_lo, x_hi]), read_lo + read_hi


def searched_points(model: ModelRun, batch: Batch, eps: Eps, attack: str) -> Points:
    """A minimum-norm attack's points at ``eps``, read from the batch's one search (run on the batch's
    first eps, seeded without eps): where an example's smallest fooling point lies within eps, that
    point and its logits, else the clean image; the search's passes are reported under every eps."""
    if attack not in batch.searches:
        attacker = model.attacks[(eps.text, attack)]
        model.counted.reset()
        labels, seed = model.labels(batch, attack), derive_seed(model.config.seed, attack, batch.b)
        with float32_math(model.plan.precision.tf32):
            points, _ = craft(attacker.find_points, batch.xa, labels, seed, batch.examples, model.log)
        passes = (model.counted.forward_images / len(labels), model.counted.backward_images / len(labels))
        logits = model.logits(points, f"{attack} images (batch {batch.b})")
        norms = search_norms(
            batch.xa, points, batch.clean_logits.argmax(1), logits.argmax(1), labels, model.config.norm
        )
        batch.searches[attack] = Points(points, passes, logits, norms)
    search = batch.searches[attack]
    x_adv = within_eps(batch.xa, search.points, search.min_norm, eps.value)
    logits = torch.where(fooled_within(search.min_norm, eps.value)[:, None], search.logits, batch.clean_logits)
    return Points(x_adv, search.passes, logits, search.min_norm.tolist())


def fp32_recheck(model: ModelRun, batch: Batch, eps: Eps, attack: str) -> list[float]:
    """Under a reduced precision: the unit's attack crafted again in strict fp32 on the batch's sampled
    examples (same seed, same per-example draws), each one's counted top-1 hit, NaN for the others;
    its time kept apart in run.json (``model|eps|attack|fp32-check``)."""
    out, checker = [math.nan] * len(batch.y), model.checkers.get((eps.text, attack))
    if checker is None:
        return out
    limit = model.recheck_share * 2**31  # the sample: each example's own draw (derive_seed's 31 bits) below it
    rows = [i for i, e in enumerate(batch.examples) if derive_seed(model.config.seed, "fp32-check", e) < limit]
    if not rows:
        return out
    tick = time.perf_counter()
    idx = torch.tensor(rows, device=batch.y.device)
    x, labels = batch.xa[idx], model.labels(batch, attack)[idx]
    seed, examples = model.seeding(batch, eps, attack)
    with float32_math():
        x_adv, _ = craft(checker, x, labels, seed, None if examples is None else [examples[r] for r in rows], model.log)
    verify_adversarial(attack, x_adv, x, eps.value, model.config.norm, model.plan.protocol.box(attack))
    hits = model.logits(x_adv, f"{attack} images crafted in fp32 (batch {batch.b})").argmax(1) == batch.y[idx]
    for r, hit in zip(rows, hits.tolist()):
        out[r] = float(hit)
    model.log.timings[f"{model.job.name}|{eps.text}|{attack}|fp32-check"] += time.perf_counter() - tick
    return out


def unit_curve(
    model: ModelRun, eps: Eps, attack: str, readings: list[Fooling], robust: torch.Tensor
) -> UnitCurve | None:
    """The unit's convergence curve from its attack's readings; the records' own pass on the returned
    points is the last look, at the end of the budget (for PGD the only look at its last iterate)."""
    budget = model.attacks[(eps.text, attack)].curve_budget() if readings else 0
    counts = robust_along(readings, budget, robust)
    return None if counts is None else UnitCurve(grid(budget), counts, len(robust))


def cascade_unit(model: ModelRun, batch: Batch, eps: Eps, attack: str) -> UnitRecords:
    """``attack``'s records under ``--cascade`` (module docstring); the examples it does not attack count
    as fooled from its curve's start."""
    if attack == CLEAN:
        return run_unit(model, batch, eps, attack)
    before = batch.cascade.get(eps.text) or clean_records(batch, eps, "", forward_passes=0.0)
    rows = [i for i, hit in enumerate(before["adv_top1"]) if hit]
    unit = run_unit(model, batch.rows(rows), eps, attack) if rows else None
    records = batch.cascade[eps.text] = carried_over(before, attack, unit, rows)
    key = model.key(eps.text, attack, batch.b)
    return UnitRecords(key, records, cascade_curve(model, eps, attack, unit, len(batch.y)), attacked=len(rows))


def carried_over(before: Columns, attack: str, ran: UnitRecords | None, rows: Sequence[int]) -> Columns:
    """The records of an attack of a chain: the examples at ``rows`` as its unit ``ran`` on them recorded
    them, the others as the attacks before it left them (the same outcome and point) under ``attack``'s
    name, no passes spent, no search or re-check."""
    n = len(before["example"])
    records = {c: list(v) for c, v in before.items()}
    records.update(attack=[attack] * n, forward_passes=[0.0] * n, backward_passes=[0.0] * n)
    records.update(min_norm=[math.nan] * n, fp32_top1=[math.nan] * n)
    if ran is not None:
        for j, i in enumerate(rows):
            for c in RECORD_COLUMNS:
                records[c][i] = ran.records[c][j]
    return records


def cascade_curve(model: ModelRun, eps: Eps, attack: str, unit: UnitRecords | None, n: int) -> UnitCurve | None:
    """An attack of the cascade draws its curve on the examples it attacked; the batch's others count as
    fooled from its start (so the curve's examples are the batch's)."""
    if unit is not None and unit.curve is not None:
        return UnitCurve(unit.curve.positions, unit.curve.robust, n)
    attacker = model.attacks[(eps.text, attack)]
    if not isinstance(attacker.model, CurveWatch):
        return None
    positions = grid(attacker.curve_budget())  # it attacked no example
    return UnitCurve(positions, [0] * len(positions), n)

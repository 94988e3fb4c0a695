"""``--cascade``: AutoAttack's way of running a suite.  On each batch the attacks run in the run's
order, each only on the examples that are correctly classified and that every earlier attack failed
to fool; an example once fooled keeps the record of the attack that fooled it (and spends no more
passes).  So each attack's row is the robust accuracy after it and every attack before it, and the
last row is the worst case (``any``) at the cost AutoAttack pays.

Draws: attacks that come from AutoAttack's code (``Attack.library_draws``) draw as AutoAttack does
(its seed is the run's ``--seed``, reset for every call, as ``AutoAttack(seed=...)`` does), so on the
same images, batch and seed the robust examples equal those of AutoAttack's
``run_standard_evaluation``; the other attacks keep their per-example draws, so for them the cascade's
worst case equals the full run's.  A batch's state is rebuilt from its earlier attacks when a resumed
run starts in the middle of it (deterministic; nothing is stored twice).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..defaults import RECORD_COLUMNS
from ..eps import Eps
from .unit_records import add_clean_records, new_columns

Columns = dict[str, list]
AttackRecords = Callable[[Columns, "SubBatch", Eps, str], None]

CASCADE_RANDOMNESS = (
    "--cascade: AutoAttack's own draws, seeded by --seed and reset for every call as in AutoAttack(seed=...): "
    "each batch's robust examples equal those of AutoAttack's run_standard_evaluation on that batch "
    "(AutoAttack re-batches the examples still robust across the data set; robeval keeps its batches, "
    "so the two agree example by example where the data fits one batch); records depend on the batch size"
)


@dataclass
class SubBatch:
    """The rows of a batch that an attack of the cascade runs on (the shape of batch_attacks.BatchAttack)."""

    b: int
    xa: torch.Tensor
    y: torch.Tensor
    clean_logits: torch.Tensor
    base: dict


def sub_batch(batch, rows: list[int]) -> SubBatch:
    idx = torch.tensor(rows, dtype=torch.long, device=batch.y.device)
    base = {k: ([v[r] for r in rows] if isinstance(v, list) else v) for k, v in batch.base.items()}
    return SubBatch(batch.b, batch.xa[idx], batch.y[idx], batch.clean_logits[idx], base)


def clean_state(batch, eps: Eps) -> Columns:
    """Before the first attack: every example as the clean pass left it (misclassified ones are done)."""
    columns = new_columns()
    add_clean_records(columns, batch, eps, "", forward_passes=0.0)
    return columns


def carried_over(previous: Columns, attack: str) -> Columns:
    """``previous`` as the records of ``attack`` for examples it does not attack: same outcome and
    point, no passes spent."""
    out = {c: list(v) for c, v in previous.items()}
    n = len(out["example"])
    out["attack"] = [attack] * n
    out["forward_passes"] = out["backward_passes"] = [0.0] * n
    out["min_norm"] = out["fp32_top1"] = [float("nan")] * n
    return out


class Cascade:
    """The cascade of one model over ``order``; ``attack_records`` runs one attack on a sub-batch into
    columns (batch_attacks.AttackUnits, with the cascade's seeding)."""

    def __init__(self, order: list[str], attack_records: AttackRecords) -> None:
        self.order = order
        self.attack_records = attack_records
        self.states: dict[tuple[int, str], dict[str, Columns]] = {}  # (batch, eps) -> attack -> its records
        self.attacked: dict[tuple[int, str, str], int] = {}  # (batch, eps, attack) -> examples it attacked

    def records(self, columns: Columns, batch, eps: Eps, attack: str) -> int:
        """Append ``attack``'s records on ``batch`` to ``columns``; returns how many examples it attacked."""
        state = self._through(batch, eps, attack)
        for c in RECORD_COLUMNS:
            columns[c].extend(state[c])
        return self.attacked[(batch.b, eps.text, attack)]

    def _through(self, batch, eps: Eps, attack: str) -> Columns:
        key = (batch.b, eps.text)
        if key not in self.states:
            self.states = {k: v for k, v in self.states.items() if k[0] == batch.b}  # this batch only
            self.states[key] = {"": clean_state(batch, eps)}
        states = self.states[key]
        if attack in states:
            return states[attack]
        position = self.order.index(attack)
        before = "" if position == 0 else self.order[position - 1]
        if before not in states:  # a resumed run starting mid-batch: rebuild the earlier attacks
            self._through(batch, eps, before)
        previous = states[before]
        rows = [i for i, hit in enumerate(previous["adv_top1"]) if hit]
        state = carried_over(previous, attack)
        if rows:
            fresh = new_columns()
            self.attack_records(fresh, sub_batch(batch, rows), eps, attack)
            for j, i in enumerate(rows):
                for c in RECORD_COLUMNS:
                    state[c][i] = fresh[c][j]
        states[attack] = state
        self.attacked[(batch.b, eps.text, attack)] = len(rows)
        return state

"""The fast protocol's audit as facts and rules (docs/protocols.md, section fast: the pass, the audit,
escalation).  Torch-free: the protocol's registration reads it before torch loads.

The sample: each survivor is in it when ``u = derive_seed(seed, "audit", example) / 2**31`` falls below
``rate``, decided before any audit attack runs, so a batch runs its audit as soon as its survivors are
known, and, given its size, the sample is a uniform draw from the survivors (what the Clopper-Pearson
limit assumes), whatever the attacks did to them.  Its size is random (Binomial(S, rate)); a fixed size
would need every survivor known first.

After an escalated APGD-T, the sample stands for FAB-T and Square: the APGD-T stages draw their starts
per example, so a point's outcome does not depend on whether it was sampled, and the sampled points
still robust are a uniform sample of the new survivors; the bound holds with ``m`` = those points and
``d`` = 0 (:class:`AuditCounts`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.errors import UserError
from ...core.seeds import derive_seed

if TYPE_CHECKING:
    from ...options import EvalConfig

FAST_PASS = ("apgd-ce", "apgd-t-malt")  # on every correctly classified example, in this order
AUDIT_STAGES = ("apgd-t-rest", "fab-t", "square")  # on the sample, after the pass, in AutoAttack's order
# The audit's stages that draw as AutoAttack's own code draws them (--cascade's draws, seeded by --seed,
# on the rows of the call): exactly as AutoAttack runs them.  The pass and apgd-t-rest draw per example.
LIBRARY_DRAWS = ("fab-t", "square")
FAST_TARGETS = 3  # apgd-t-malt's n_target_classes (= apgd-t-rest's skip_malt_targets): measured, see below
AUDIT_RATE = 0.05  # the share of survivors audited: measured, see below
# benchmarks/fast_vs_autoattack.py (benchmarks/RESULTS.md): on both digits demo models at 8/255 and 16/255,
# 100 and 449 digits, k = 3 and rate 0.05 spent 0.10-0.22x AutoAttack's model passes where the audit broke
# nothing, 0.26-0.29x where it escalated APGD-T's remaining targets; k = 9 (every APGD-T target) 0.22-0.32x
_SCALE = 2**31  # derive_seed's range: 31 bits


def audit_sample(seed: int, survivors: Iterable[int], rate: float) -> list[int]:
    """The survivors (data-set indices) that the audit attacks, in the order given: each one whose uniform
    number ``u`` (module docstring) falls below ``rate``."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"the audit rate must lie in [0, 1], got {rate}")
    return [int(e) for e in survivors if derive_seed(seed, "audit", int(e)) / _SCALE < rate]


def escalated_stages(broke: Iterable[str]) -> tuple[str, ...]:
    """The audit stages to run on every survivor, given the stages that broke an audited point: all of
    them when FAB-T or Square did (the result is then AutoAttack's), APGD-T's remaining targets alone
    when only they did, none when the audit broke nothing."""
    broke = set(broke)
    unknown = broke - set(AUDIT_STAGES)
    if unknown:
        raise ValueError(f"not audit stages: {sorted(unknown)}")
    if broke - {"apgd-t-rest"}:
        return AUDIT_STAGES
    return ("apgd-t-rest",) if broke else ()


@dataclass(frozen=True)
class AuditCounts:
    """One model's audit at one eps, counted over all its batches: ``audited`` sampled survivors, and
    after each stage of ``stages`` how many of them an audit attack had fooled (``fooled``, cumulative:
    the audit units' records, each stage on the points the ones before left robust)."""

    stages: tuple[str, ...]
    audited: int
    fooled: tuple[int, ...]

    @property
    def broke(self) -> dict[str, int]:
        """Stage -> the audited points it broke."""
        return {s: now - before for s, before, now in zip(self.stages, (0, *self.fooled), self.fooled)}

    @property
    def escalated(self) -> tuple[str, ...]:
        return escalated_stages(s for s, d in self.broke.items() if d)

    @property
    def full(self) -> bool:
        """Every stage escalated: the result is AutoAttack's, no bound needed."""
        return len(self.escalated) == len(self.stages)

    @property
    def standing(self) -> int:
        """m: the audited points still robust after the escalated stages, which the stages not escalated
        ran on (the sample the bound reads)."""
        return self.audited - (self.fooled[len(self.escalated) - 1] if self.escalated else 0)

    @property
    def standing_broken(self) -> int:
        """d: the points of :attr:`standing` a stage not escalated broke (0 unless every stage escalated)."""
        return self.fooled[-1] - (self.fooled[len(self.escalated) - 1] if self.escalated else 0)


def check_audited(config: EvalConfig, name: str, attacks: tuple[str, ...]) -> None:
    """The run's options under the audited protocol ``name`` (``attacks``: its own): it runs them as a
    cascade of its own (pass, audit, escalation) on the examples of the data, and its audit's APGD-T skips
    exactly the targets its pass ran."""
    if config.shift is not None:
        raise UserError(f"{name} measures AutoAttack's worst case: run --shift under --protocol standard")
    if list(config.attacks) != list(attacks):
        raise UserError(f"{name} runs its own attacks ({', '.join(attacks)}): drop --attacks")
    if config.cascade:
        raise UserError(f"{name} runs its attacks as a cascade of its own (a pass, then an audit): drop --cascade")
    ran = config.settings["apgd-t-malt"]["n_target_classes"]
    skipped = config.settings["apgd-t-rest"]["skip_malt_targets"]
    if ran != skipped:
        raise UserError(
            f"{name}: apgd-t-rest.skip_malt_targets ({skipped}) must be apgd-t-malt.n_target_classes ({ran}), the "
            "targets the pass ran (--set both)"
        )

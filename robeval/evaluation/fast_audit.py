"""The fast protocol's audit: which surviving examples it attacks, with what, and what its breaks escalate.

The fast pass (APGD-CE, then ``apgd-t-malt`` on the ``FAST_TARGETS`` best MALT-ranked targets) leaves
``S`` of ``n`` examples robust.  The audit runs on a sample of those survivors what AutoAttack would
still run on them, in AutoAttack's order, each stage on the sampled points still robust:
``AUDIT_STAGES`` = AutoAttack's APGD-T targets the pass skipped (``apgd-t-rest``), FAB-T, Square.  The
share it breaks bounds what AutoAttack would still have broken (:mod:`robeval.results.audit_bound`).

The sample: each survivor is in it when its own uniform number ``u = derive_seed(seed, "audit",
*salt, example) / 2**31`` falls below ``rate`` -- a Bernoulli(rate) draw per example, decided from the
run seed and the example's index alone.  So a batch can run its audit as soon as its survivors are
known, the sample does not depend on the batch size, the batch order, ``--nproc`` or a resume, and the
sample, given its size, is a uniform draw from the survivors (what the Clopper-Pearson limit assumes),
whatever the attacks did to them.  Its size is random (Binomial(S, rate)); a fixed size would need
every survivor known first, a second pass over the batches before any audit could start.

Escalation (:func:`escalated_stages`): when FAB-T or Square breaks an audited point, every stage runs
on every survivor and the result is AutoAttack's (the issue's rule: such a model resists the gradient
attacks in a way only AutoAttack's whole run settles).  When only APGD-T's remaining targets break one,
only they run on every survivor (with k = 3 on 10 classes, 6 targets x about 200 passes per point against
about 7,500 for FAB-T and Square): the pass truncated APGD-T by design, and the sample, still a
Bernoulli sample of the fewer survivors left, stands for FAB-T and Square, which broke none of it, so
the bound holds with d = 0 and m = the sampled points still robust.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..seeds import derive_seed

FAST_PASS = ("apgd-ce", "apgd-t-malt")  # on every correctly classified example, in this order
AUDIT_STAGES = ("apgd-t-rest", "fab-t", "square")  # on the sample, after the pass, in AutoAttack's order
FAST_TARGETS = 3  # apgd-t-malt's n_target_classes (= apgd-t-rest's skip_malt_targets): measured, see below
AUDIT_RATE = 0.05  # the share of survivors audited: measured, see below
# benchmarks/fast_vs_autoattack.py (benchmarks/RESULTS.md): on both digits demo models at 8/255 and 16/255,
# 100 and 449 digits, k = 3 and rate 0.05 spent 0.10-0.22x AutoAttack's model passes where the audit broke
# nothing, 0.26-0.29x where it escalated APGD-T's remaining targets; k = 9 (every APGD-T target) 0.22-0.32x
_SCALE = 2**31  # derive_seed's range: 31 bits


def audit_draw(seed: int, example: int, *salt: Any) -> float:
    """The example's uniform number in [0, 1), from the run seed and its data-set index."""
    return derive_seed(seed, "audit", *salt, int(example)) / _SCALE


def audit_sample(seed: int, survivors: Iterable[int], rate: float = AUDIT_RATE, *salt: Any) -> list[int]:
    """The survivors (data-set indices) that the audit attacks, in the order given."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"the audit rate must lie in [0, 1], got {rate}")
    return [int(e) for e in survivors if audit_draw(seed, e, *salt) < rate]


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

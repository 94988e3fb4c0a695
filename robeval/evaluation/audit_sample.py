"""Which surviving examples the fast protocol's audit attacks: a seeded Bernoulli sample.

The fast protocol (APGD-CE, then APGD-T on MALT-ranked targets) leaves ``S`` of ``n`` examples
robust; FAB-T, Square and the APGD-T targets the pass skipped then run, exactly as AutoAttack runs
them, on a uniform sample of those survivors only, and the share the audit breaks bounds what
AutoAttack would still have broken (:mod:`robeval.results.audit_bound`).

Each survivor is in the sample when its own uniform number ``u = derive_seed(seed, "audit", *salt,
example) / 2**31`` falls below ``rate``: a Bernoulli(rate) draw per example, decided from the run seed
and the example's index alone.  So a batch can run its audit as soon as its survivors are known, the
sample does not depend on the batch size, the batch order, ``--nproc`` or a resume, and the sample,
given its size, is a uniform draw from the survivors (what the Clopper-Pearson limit assumes).  The
size is random (Binomial(S, rate)); a fixed size would need every survivor known first, that is a
second pass over the batches before any audit could start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..seeds import derive_seed

AUDIT_RATE = 0.1  # the share of survivors audited: benchmarks/fast_vs_autoattack.py measured the choice
_SCALE = 2**31  # derive_seed's range: 31 bits


def audit_draw(seed: int, example: int, *salt: Any) -> float:
    """The example's uniform number in [0, 1), from the run seed and its data-set index."""
    return derive_seed(seed, "audit", *salt, int(example)) / _SCALE


def audit_sample(seed: int, survivors: Iterable[int], rate: float = AUDIT_RATE, *salt: Any) -> list[int]:
    """The survivors (data-set indices) that the audit attacks, in the order given."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"the audit rate must lie in [0, 1], got {rate}")
    return [int(e) for e in survivors if audit_draw(seed, e, *salt) < rate]

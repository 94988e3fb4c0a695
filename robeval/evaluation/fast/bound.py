"""The fast protocol's printed bound on AutoAttack's robust accuracy, from its audit.

The fast pass leaves ``survivors`` (S) of ``examples`` (n) robust, so its robust accuracy is S/n.
AutoAttack would run more attacks on those S (the APGD-T targets the pass skipped, FAB-T, Square) and
break some share ``q`` of them; its robust accuracy on these examples is then S/n - (S/n) q.  The audit
runs those attacks on a uniform sample of ``audited`` (m) survivors and breaks ``broken`` (d) of them.
With U the one-sided 95% Clopper-Pearson upper limit of d/m (exact: the p at which seeing d or fewer
breaks in m has probability 5%), q <= U with at least 95% confidence, so

    AutoAttack's robust accuracy >= S/n - (S/n) x U.

With d = 0, U = 1 - 0.05^(1/m), about 3/m.  The bound is on AutoAttack as the fast run draws it
(APGD-CE and APGD-T from the run's random starts): what another seed's starts would break is
AutoAttack's own seed-to-seed spread, which no audit of the fast run measures.
"""

from __future__ import annotations

from dataclasses import dataclass

CONFIDENCE = 0.95  # one-sided


def clopper_pearson_upper(broken: int, audited: int, confidence: float = CONFIDENCE) -> float:
    """The exact one-sided upper confidence limit of the rate ``broken / audited`` (1.0 with no audit
    or when every audited point broke)."""
    if not 0 <= broken <= audited:
        raise ValueError(f"need 0 <= broken <= audited, got {broken} of {audited}")
    if broken == audited:
        return 1.0
    from scipy.special import betaincinv  # (beta.ppf's own function: scipy.stats imports in half a second)

    return float(betaincinv(broken + 1, audited - broken, confidence))


@dataclass(frozen=True)
class AuditBound:
    """An audit's counts and what they bound."""

    examples: int  # n: the examples evaluated
    survivors: int  # S: robust after the fast pass
    audited: int  # m: survivors in the audit's sample
    broken: int  # d: audited survivors an audit attack fooled

    def __post_init__(self) -> None:
        if not 0 <= self.broken <= self.audited <= self.survivors <= self.examples or self.examples == 0:
            raise ValueError(f"need 0 <= broken <= audited <= survivors <= examples > 0, got {self}")

    @property
    def fast(self) -> float:
        """The fast pass's robust accuracy, S/n."""
        return self.survivors / self.examples

    @property
    def upper_break_rate(self) -> float:
        """U: the 95% upper limit of the share of survivors AutoAttack's remaining attacks break."""
        return clopper_pearson_upper(self.broken, self.audited)

    @property
    def bound(self) -> float:
        """At least this is AutoAttack's robust accuracy on these examples (95% confidence)."""
        return self.fast - self.fast * self.upper_break_rate

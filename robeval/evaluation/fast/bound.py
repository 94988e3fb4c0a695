"""The fast protocol's printed bound on AutoAttack's robust accuracy (docs/protocols.md, section fast:
The bound).  U, the one-sided Clopper-Pearson upper limit of d/m, is exact: the p at which seeing d or
fewer breaks in m has probability 5%.
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

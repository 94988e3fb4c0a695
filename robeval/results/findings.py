"""The soundness checks' types and registry: each check (robeval.results.indicators) is one registration of
:data:`CHECKS` whose judgement of one model of a run is a :class:`Finding`.  Two kinds: checks of the
attacks, RAISED where the attacks may have failed (the run's flags), and checks of the claim, whose CAVEAT
says what the numbers cannot claim (one checkpoint, recipes, a wide bound) and is never a flag.

The thresholds are tests that a change of one example never passes: a gap counts when it exceeds its
points *and* :data:`MIN_EXAMPLES` examples (with 50 examples one example is 2 points, more than the
1-point gap a run of thousands is judged by).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pandas as pd

from ..core.registry import Registry

OK, RAISED, NOT_RUN, NOT_APPLICABLE = "ok", "RAISED", "not run", "n/a"  # RAISED: the attacks may have failed
CAVEAT = "CAVEAT"  # a limit on what the numbers can claim (a check of the claim's): no sign of a failed attack, no flag
MIN_EXAMPLES = 2  # a gap of fewer examples than this is one example's luck, never a finding
MASKING_GAP = 1.0  # percentage points


@dataclass(frozen=True)
class Finding:
    """One check's judgement of one model: ``status`` (ok / RAISED / not run / n/a, or a check of the claim's
    CAVEAT), the ``evidence`` from the run (for "not run": the command that gives it), the ``advice`` a raised
    one or a caveat carries, and a caveat's ``gist``: the few words its verdict names it by."""

    status: str
    evidence: str
    advice: str = ""
    check: str = ""  # the registration's name: the flag's name when raised
    model: str = ""
    gist: str = ""

    @property
    def raised(self) -> bool:
        return self.status == RAISED

    @property
    def caveat(self) -> bool:
        return self.status == CAVEAT

    def as_flag(self) -> dict[str, str]:
        """The finding as run.json stores a flag (check, model, message, advice)."""
        return {"check": self.check, "model": self.model, "message": self.evidence, "advice": self.advice}


@dataclass
class Evidence:
    """What the checks read: the run's summary (with its evidence runs' rows), run.json's ``model_checks``
    and ``models``, per example the minimal norms its minimum-norm attacks found (model, attack, min_norm),
    and the summary of a run of the other restart protocol on the same examples (the last two may be empty)."""

    summary: pd.DataFrame
    model_checks: dict[str, dict[str, Any]]
    models: dict[str, dict[str, Any]]
    norms: pd.DataFrame
    companion: pd.DataFrame


Judge = Callable[[str, pd.DataFrame, Evidence], Finding]


@dataclass(frozen=True)
class Check:
    """A registration: ``title``, the checklist's wording (what a sound evaluation shows); ``advice``, what a
    raised finding or a caveat carries unless the judgement gives its own; ``claim``: a check of the claim."""

    title: str
    covers: str
    judge: Judge
    advice: str
    claim: bool = False

    def finding(self, name: str, model: str, rows: pd.DataFrame, evidence: Evidence) -> Finding:
        found = self.judge(model, rows, evidence)
        if (found.raised and self.claim) or (found.caveat and not self.claim):  # a bug: RAISED says attacks failed
            raise AssertionError(f"check {name} of the {'claim' if self.claim else 'attacks'} found {found.status}")
        advice = (found.advice or self.advice) if found.raised or found.caveat else ""
        return replace(found, check=name, model=model, advice=advice)


CHECKS: Registry[Check] = Registry("soundness check")


J = TypeVar("J", bound=Judge)


def check(name: str, title: str, covers: str, advice: str = "", claim: bool = False) -> Callable[[J], J]:
    """Register a judgement as check ``name`` (``claim``: a check of what the numbers can claim, whose
    findings are caveats); the checklist shows the checks in registration order."""

    def decorate(judge: J) -> J:
        CHECKS.add(name, Check(title, covers, judge, advice, claim))
        return judge

    return decorate


def judged(raised: bool, evidence: str, advice: str = "") -> Finding:
    return Finding(RAISED if raised else OK, evidence, advice)


def caveat(gist: str, evidence: str, advice: str = "") -> Finding:
    """A caveat on the claim: ``gist``, the few words the verdict names it by, and its ``evidence``."""
    return Finding(CAVEAT, evidence, advice, gist=gist)


def observed(lines: list[tuple[str, bool]], none: str, advice: str = "") -> Finding:
    """A finding from observations (text, raised?): not run without any, else raised by the raised
    ones (their text the evidence), else ok with every observation as evidence."""
    if not lines:
        return Finding(NOT_RUN, none)
    raised = [text for text, bad in lines if bad]
    return judged(bool(raised), "; ".join(raised or [text for text, _ in lines]), advice)


def beyond(gap: float, n: int, points: float = MASKING_GAP) -> bool:
    """Whether a gap (percentage points on ``n`` examples) exceeds ``points`` and is at least
    :data:`MIN_EXAMPLES` examples."""
    return gap > points and gap * n / 100.0 >= MIN_EXAMPLES - 1e-9

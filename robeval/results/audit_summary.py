"""An audited protocol's audit (``fast``) read back from a run's records: per model and eps what the audit
sampled and broke, what escalated, and the bound on AutoAttack's robust accuracy (:mod:`.audit_bound`), as
summary columns and one line of words that every caption, ``robeval run``, ``robeval check`` and the report print.

The counts come from the audit units (``audit:<stage>``, robeval.results.records: one record per audited
example); the survivors from the records of the audit's last stage, as every table reads them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..evaluation.fast_audit import AuditCounts
from ..evaluation.protocols import PROTOCOLS, Protocol
from .audit_bound import AuditBound
from .records import audit_unit


@dataclass(frozen=True)
class FastAudit:
    """One model's audit at one eps: ``examples`` evaluated, ``survivors`` robust after every stage, and
    the audit's ``counts``."""

    examples: int
    passed: int  # robust after the protocol's pass (the audit samples these)
    survivors: int
    counts: AuditCounts

    @property
    def bound(self) -> AuditBound | None:
        """The bound, on the audited points the stages not escalated ran on; None when everything
        escalated (the result is AutoAttack's)."""
        if self.counts.full:
            return None
        return AuditBound(self.examples, self.survivors, self.counts.standing, self.counts.standing_broken)

    def describe(self) -> str:
        """The audit in one line: the sample, what broke it, what escalated, the bound or that none is needed."""
        counts, n, bound = self.counts, self.examples, self.bound
        broke = ", ".join(f"{stage} {d}" for stage, d in counts.broke.items() if d) or "none of them"
        line = (
            f"robust {100 * self.survivors / n:.2f}% (not AutoAttack's run); the audit sampled {counts.audited} of the "
            f"{self.passed} examples its pass left robust, broke {broke}"
        )
        if bound is None:
            return line + "; so every stage ran on every survivor: the result is AutoAttack's (no bound needed)"
        if counts.escalated:
            line += f"; so {', '.join(counts.escalated)} ran on every survivor"
        return (
            f"{line}; AutoAttack's robust accuracy on these examples >= {100 * bound.bound:.2f}% (one-sided 95%: "
            f"{100 * bound.fast:.2f} x (1 - U), U = {bound.upper_break_rate:.4f}, the Clopper-Pearson "
            f"limit of {bound.broken} broken of {bound.audited} audited)"
        )


def audited_protocol(config: dict[str, Any]) -> Protocol | None:
    """A run's protocol when it is audited (None: not audited, or a protocol this robeval lacks)."""
    protocol = PROTOCOLS.get(config.get("protocol", ""))
    return protocol if protocol is not None and protocol.audit_stages else None


def robust(rows: pd.DataFrame) -> int:
    return int(rows["adv_top1"].astype(bool).sum())


def fast_audits(records: pd.DataFrame, protocol: Protocol) -> dict[tuple[str, str], list[FastAudit]]:
    """(model, eps) -> the audit of each of its members (in member order), where the records hold the
    audit's last stage."""
    stages = protocol.audit_stages
    out: dict[tuple[str, str], list[FastAudit]] = {}
    last = records[records["attack"] == stages[-1]]
    for (model, eps, member), rows in last.groupby(["model", "eps", "member"], sort=True):
        mine = records[(records["model"] == model) & (records["eps"] == eps) & (records["member"] == member)]
        units = [mine[mine["attack"] == audit_unit(s)] for s in stages]
        counts = AuditCounts(stages, len(units[0]), tuple(len(u) - robust(u) for u in units))
        audit = FastAudit(len(rows), robust(mine[mine["attack"] == protocol.pass_end]), robust(rows), counts)
        out.setdefault((str(model), str(eps)), []).append(audit)
    return out


def mean_bound(audits: list[FastAudit]) -> float:
    """The bound in % of a model's row: its one member's, or the mean of its members' bounds (each
    one-sided 95% for its member; a member whose audit escalated everything counts its own robust
    accuracy, which is AutoAttack's)."""
    values = [a.bound.bound if a.bound else a.survivors / a.examples for a in audits]
    return 100 * sum(values) / len(values) if any(a.bound for a in audits) else float("nan")


def describe_members(audits: list[FastAudit]) -> str:
    """The audit of a model in words: its one member's, or each member's in turn and then the model's bound
    (one text: a summary cell; :func:`audit_lines` says each part on a line of its own)."""
    if len(audits) == 1:
        return audits[0].describe()
    parts = [f"member {i + 1}: {a.describe()}" for i, a in enumerate(audits)]
    bound = mean_bound(audits)  # NaN: every member escalated everything
    model = (
        "every member's result is AutoAttack's"
        if math.isnan(bound)
        else f"AutoAttack's mean robust accuracy >= {bound:.2f}% (the mean of the members' bounds)"
    )
    return "; ".join([*parts, f"over its {len(audits)} members: {model}"])


MEMBER_PARTS = re.compile(r"; (?=(?:member \d+|over its \d+ members): )")  # where describe_members joined them


def add_audit_columns(summary: pd.DataFrame, records: pd.DataFrame, config: dict[str, Any]) -> None:
    """The audit's columns on every row of an audited run's summary, from its (model, eps)'s audits
    (summed over a model's members; the bound in %, NaN where none is needed or the audit is not stored
    yet)."""
    protocol = audited_protocol(config)
    if protocol is None:
        return
    audits = fast_audits(records, protocol)
    found = [audits.get((str(m), str(e)), []) for m, e in zip(summary["model"], summary["eps"])]
    summary["audited"] = [sum(a.counts.audited for a in f) for f in found]
    summary["audit_broken"] = [sum(a.counts.fooled[-1] for a in f) for f in found]
    summary["escalated"] = [",".join(dict.fromkeys(s for a in f for s in a.counts.escalated)) for f in found]
    summary["aa_bound"] = [mean_bound(f) if f else float("nan") for f in found]
    summary["audit"] = [describe_members(f) if f else "" for f in found]


def audit_lines(summary: pd.DataFrame, eps: str | None = None) -> list[str]:
    """The audit lines of each model (at ``eps``, else at every eps) of an audited run's rows: one, or one
    per member and one with the model's bound."""
    if "audit" not in summary:
        return []
    rows = summary if eps is None else summary[summary["eps"] == eps]
    found = dict.fromkeys((r.model, r.eps, r.protocol, r.audit) for r in rows.itertuples() if r.audit)
    return [f"{protocol} protocol, {model} eps {e}: {part}" for model, e, protocol, text in found
            for part in MEMBER_PARTS.split(text)]  # fmt: skip

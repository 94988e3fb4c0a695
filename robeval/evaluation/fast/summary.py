"""An audited protocol's audit read back from a run's records (docs/protocols.md, section fast).  The
counts come from the audit units (``audit:<stage>``, robeval.core.records: one record per audited
example); the survivors from the records of the audit's last stage, as every table reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...core.defaults import ANY, Names, Phrases, names_in
from ...core.records import audit_unit
from ..protocols import PROTOCOLS, Protocol
from .audit import AuditCounts
from .bound import CONFIDENCE, AuditBound


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


def describe_members(audits: list[FastAudit]) -> Phrases:
    """The audit of a model in words: its one member's, or each member's in turn and then the model's bound
    (a summary cell shows them as one text; :func:`audit_lines` says each on a line of its own)."""
    if len(audits) == 1:
        return Phrases([audits[0].describe()])
    parts = [f"member {i + 1}: {a.describe()}" for i, a in enumerate(audits)]
    bound = mean_bound(audits)  # NaN: every member escalated everything
    model = (
        "every member's result is AutoAttack's"
        if math.isnan(bound)
        else f"AutoAttack's mean robust accuracy >= {bound:.2f}% (the mean of the members' bounds)"
    )
    return Phrases([*parts, f"over its {len(audits)} members: {model}"])


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
    summary["escalated"] = [Names(dict.fromkeys(s for a in f for s in a.counts.escalated)) for f in found]
    summary["aa_bound"] = [mean_bound(f) if f else float("nan") for f in found]
    summary["audit"] = [describe_members(f) if f else Phrases() for f in found]


def audit_lines(summary: pd.DataFrame, eps: str | None = None) -> list[str]:
    """The audit lines of each model (at ``eps``, else at every eps) of an audited run's rows: one, or one
    per member and one with the model's bound; then a warning where the bound is too wide to say much."""
    if "audit" not in summary:
        return []
    rows = summary if eps is None else summary[summary["eps"] == eps]
    found = dict.fromkeys((r.model, r.eps, r.protocol, names_in(r.audit)) for r in rows.itertuples())
    lines = [f"{protocol} protocol, {model} eps {e}: {part}" for model, e, protocol, parts in found
             for part in parts]  # fmt: skip
    worst = rows[rows["attack"] == ANY] if (rows["attack"] == ANY).any() else rows.iloc[0:0]
    return lines + [w for r in worst.to_dict("records") if (w := wide_bound_warning(r)) is not None]


BOUND_WIDTH = 2.0  # points: a bound further below the fast result than this says little, and is warned of


def wide_bound(row: dict[str, Any]) -> tuple[float, int] | None:
    """How far a row's bound on AutoAttack's robust accuracy lies below its fast result (points), and the
    examples that would bring it within :data:`BOUND_WIDTH`, where it is wider than that (None: no bound,
    or within it).  The caption's warning and the checklist's caveat (robeval.results.indicators) read it."""
    fast, bound = float(row["top1"]), float(row.get("aa_bound", math.nan))
    if math.isnan(bound) or fast - bound <= BOUND_WIDTH:
        return None
    return fast - bound, examples_for_width(fast / 100, PROTOCOLS[row["protocol"]].audit_rate, BOUND_WIDTH / 100)


def wide_bound_warning(row: dict[str, Any]) -> str | None:
    """A warning when a row's bound on AutoAttack's robust accuracy is more than :data:`BOUND_WIDTH` points
    below its fast result, with the examples that would bring it within that width."""
    wide = wide_bound(row)
    if wide is None:
        return None
    (gap, needed), fast, bound, n = wide, float(row["top1"]), float(row["aa_bound"]), int(row["n"])
    return (
        f"warning: {row['protocol']} protocol, {row['model']} eps {row['eps']}: the bound is {gap:.1f} points "
        f"below the result ({bound:.2f}% against {fast:.2f}%), wider than {BOUND_WIDTH:g} points, so it says little on "
        f"{n} examples; about {needed:,} examples would bring it within {BOUND_WIDTH:g} points (at this robust "
        "accuracy, if the audit breaks none of its sample)"
    )


def examples_for_width(robust: float, rate: float, width: float) -> int:
    """The examples n at which the bound is ``width`` below a robust accuracy ``robust`` (fractions) when the
    audit samples ``rate`` of the survivors and breaks none: ``robust x U(0, m) <= width`` with U the
    Clopper-Pearson limit of 0 of m, ``1 - 0.05^(1/m)``, and m = rate x robust x n."""
    if robust <= width:
        return 0
    audited = math.log(1 - CONFIDENCE) / math.log(1 - width / robust)
    return math.ceil(audited / (rate * robust))

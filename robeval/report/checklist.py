"""The soundness findings of a run (robeval.results.soundness) as ``robeval check`` prints them and as
the checklist document ``robeval check --report FILE`` writes: per model every check's status (ok /
RAISED / not run / n/a) and evidence, then a verdict line.  Nothing is judged here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from ..registry import Registry
from ..results.findings import CHECKS, RAISED, Finding
from ..results.soundness import JudgedRun, ModelFindings
from ..results.stored_run import StoredRun
from .captions import incomplete_parts
from .naming import attack_title

CHECKLIST_INTRO = (
    "Indicators after Carlini et al. 2019 (On Evaluating Adversarial Robustness) and Pintor et al. 2022 "
    "(Indicators of Attack Failure). Status: ok, RAISED (a sign the attacks failed), not run (the run lacks "
    "the evidence; the command that gives it is named)."
)


def verdict(one: ModelFindings) -> str:
    """The verdict line of one model: its raised checks, or how many judged it."""
    raised = [CHECKS[f.check].title for f in one.raised]
    text = (
        f"RAISED: {'; '.join(raised)}" if raised else f"no indicator of a failed attack among the {one.checked} checked"
    )
    return text + (f" ({one.not_run} not run)" if one.not_run else "")


def shown(finding: Finding) -> str:
    """A finding's evidence, with what to do when it is raised."""
    return f"{finding.evidence} — {finding.advice}" if finding.status == RAISED and finding.advice else finding.evidence


def evidence_note(evidence: Sequence[StoredRun]) -> list[str]:
    """The runs made for this one's checklist, with what they ran (``check --report --run-missing``)."""
    return [
        f"Large-eps evidence from run {r.run_id} ({', '.join(attack_title(a) for a in r.config['attacks'])} at "
        f"{', '.join(dict.fromkeys(r.summary['eps']))}, same models and examples)."
        for r in evidence
    ]


def checklist_markdown(
    run_id: str, protocol: str, summary: pd.DataFrame, models: list[ModelFindings], evidence: Sequence[StoredRun] = ()
) -> str:
    """The checklist document (Markdown) of a run's findings; ``summary``: its own (what it left incomplete)."""
    lines = [f"# Evaluation checklist: run {run_id} (protocol {protocol})", "", CHECKLIST_INTRO, ""]
    lines += [f"**{part}.**\n" for part in incomplete_parts(summary)]
    for one in models:
        lines += [f"## {one.model}", "", "| indicator | covers | status | evidence |", "|---|---|---|---|"]
        lines += [
            f"| {CHECKS[f.check].title} | {CHECKS[f.check].covers} | {f.status} | {shown(f)} |" for f in one.findings
        ]
        lines += ["", f"**Verdict for {one.model}: {verdict(one)}.**", ""]
    notes = evidence_note(evidence)
    return "\n".join(lines) + ("\n" + "\n".join(notes) + "\n" if notes else "")


@dataclass
class Soundness:
    """``robeval check``'s answer: a stored run's findings, judged with its evidence runs (the data:
    ``judged.models``, ``flags``), rendered as ``robeval check`` prints it (``render("md")``, ``str``)
    or as the checklist document (``render("checklist")``)."""

    judged: JudgedRun

    @property
    def flags(self) -> list[Finding]:
        return self.judged.flags

    def render(self, format: str = "md") -> str:
        return RENDERINGS.get(format)(self.judged)

    def __str__(self) -> str:
        return self.render()


def check_lines(judged: JudgedRun) -> str:
    """What ``robeval check`` prints: the run, then the lines under every table with its flags."""
    from .diagnostics import diagnostic_lines

    run = judged.run
    flags = [f.as_flag() for f in judged.flags]
    lines = [
        f"Run {run.run_id} ({run.protocol}, {run.status}):",
        *diagnostic_lines({**run.info, "flags": flags}, run.summary),
    ]
    return "\n".join(lines) + "\n"


def checklist_document(judged: JudgedRun) -> str:
    run = judged.run
    return checklist_markdown(run.run_id, run.protocol, run.summary, judged.models, judged.evidence)


RENDERINGS: Registry[Callable[[JudgedRun], str]] = Registry("check format")
RENDERINGS.add("md", check_lines)
RENDERINGS.add("checklist", checklist_document)

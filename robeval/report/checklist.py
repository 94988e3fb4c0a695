"""The soundness findings of a run (robeval.results.soundness) as ``robeval check`` prints them (with
the lines under every table) and as the checklist document (docs/soundness.md, "The checklist").
Nothing is judged here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..core.errors import lookup
from ..evaluation.fast.summary import audit_lines
from ..results.findings import CHECKS, Finding
from ..results.indicators import adaptive_gaps
from ..results.soundness import JudgedRun, ModelFindings
from .document import Document, Heading, Lines, Paragraph, Table, to_html, to_markdown
from .files import skipped_note
from .grid import Status
from .naming import attack_title, incomplete_parts

CHECKLIST_INTRO = (
    "Indicators of a failed attack after Carlini et al. 2019 (On Evaluating Adversarial Robustness) and Pintor "
    "et al. 2022 (Indicators of Attack Failure), each what a sound evaluation shows. Status: ok, RAISED (not "
    "shown: a sign the attacks may have failed), not run (the run lacks the evidence; the command that gives it is "
    "named), n/a (it does not apply). Then what the claim stands on: ok, or CAVEAT (a limit on what the numbers "
    "can claim: one checkpoint, training recipes that differ or are unknown, a wide bound on AutoAttack; no sign "
    "that an attack failed, never a flag)."
)


def verdict(one: ModelFindings) -> str:
    """The verdict line of one model: its raised indicators (each not shown) or how many judged it, then the
    gist of each caveat on its claim."""
    raised = "; ".join(CHECKS[f.check].title for f in one.raised)
    text = (
        f"RAISED, not shown: {raised}" if raised else f"no indicator of a failed attack among the {one.checked} checked"
    )
    text += f" ({one.not_run} not run)" if one.not_run else ""
    caveats = ", ".join(dict.fromkeys(f.gist for f in one.caveats))
    return text + (f"; CAVEAT: {caveats}" if caveats else "")


def shown(finding: Finding) -> str:
    """A finding's evidence, with what to do when it is raised or a caveat."""
    return f"{finding.evidence} — {finding.advice}" if finding.advice else finding.evidence


def findings_tables(one: ModelFindings) -> list[Table]:
    """One model's findings, the checks of the attacks (``indicator``) apart from those of the claim
    (``claim``): each check's title, what it covers, its status and evidence."""
    return [
        Table((kind, "covers", "status", "evidence"), rows, "llll", text_columns=range(4))
        for kind, findings in (("indicator", one.indicators), ("claim", one.claims))
        if (rows := [[CHECKS[f.check].title, CHECKS[f.check].covers, Status(f.status), shown(f)] for f in findings])
    ]


def checklist_document(judged: JudgedRun) -> Document:
    """The checklist document of a run's findings, first what the run left incomplete."""
    run = judged.run
    return [
        Heading(f"Evaluation checklist: run {run.run_id} (protocol {run.protocol})", 1),
        Paragraph(CHECKLIST_INTRO),
        *(Paragraph(f"{part}.", strong=True) for part in incomplete_parts(run.summary)),
        *checklist_section(judged, in_report=False),
    ]


def checklist_section(judged: JudgedRun, in_report: bool = True) -> Document:
    """Per model its findings' tables under its name and its verdict, then the runs made as evidence: the
    checklist's body, or (``in_report``) ``robeval report``'s checklist section, a model named with its run."""
    document: Document = []
    for one in judged.models:
        heading = Heading(f"{one.model} (run {judged.run.run_id})", 3) if in_report else Heading(one.model)
        said = f"Verdict: {verdict(one)}." if in_report else f"Verdict for {one.model}: {verdict(one)}."
        document += [heading, *findings_tables(one), Paragraph(said, strong=True, css="verdict")]
    notes = [  # the runs made for this one's checklist, with what they ran (check --report --run-missing)
        f"Large-eps evidence from run {r.run_id} ({', '.join(attack_title(a) for a in r.config['attacks'])} at "
        f"{', '.join(dict.fromkeys(r.summary['eps']))}, same models and examples)."
        for r in judged.evidence
    ]
    return document + ([Lines(notes)] if notes else [])


@dataclass
class Soundness:
    """``robeval check``'s answer: a stored run's findings, judged with its evidence runs (the data:
    ``judged.models``, ``flags``, ``caveats``), rendered as ``robeval check`` prints it (``render("md")``, ``str``)
    or as the checklist document (``render("checklist")``; ``"html"``: its tables in ``robeval report``):
    each a document (:data:`DOCUMENTS`), in its format."""

    judged: JudgedRun

    @property
    def flags(self) -> list[Finding]:
        return self.judged.flags

    @property
    def caveats(self) -> list[Finding]:
        return self.judged.caveats

    def render(self, format: str = "md") -> str:
        document = lookup(DOCUMENTS, format, "check format")(self.judged)
        return to_html(document) if format == "html" else to_markdown(document)

    def __str__(self) -> str:
        return self.render()


def diagnostic_lines(run: dict[str, Any], summary: pd.DataFrame) -> list[str]:
    """What is said under every results table (``robeval run``, ``robeval check``): the image files a run
    could not read, stopped models, adaptive gaps, soundness flags and caveats (its run.json facts and summary).  An
    audited protocol's audit and bound are its tables' caption's (robeval.report.naming.caption_parts), said once."""
    note = skipped_note(run)
    lines = [note] if note else []
    lines += [f"Stopped model {model}: {message}" for model, message in run.get("failed_models", {}).items()]
    gaps = adaptive_gaps(summary)
    if not gaps.empty:
        lines.append("Adaptive attack (gradients through M) vs default:")
        lines += [
            f"  {r.model} eps {r.eps} {r.attack}: top-1 {r.top1_default:.2f} -> {r.top1_adaptive:.2f} (gap {r.gap:+.2f})"
            for r in gaps.itertuples()
        ]
    flags = run.get("flags", [])
    if not flags:
        lines.append("Soundness checks: no flags (robeval check RUN --report FILE: every check with its evidence)")
    else:
        lines += [f"Soundness checks: {len(flags)} flag(s)"]
        lines += [f"  [{f['check']}] {f['model']}: {f['message']} — {f['advice']}" for f in flags]
    return lines + caveat_lines(run.get("caveats", []))


CAPTIONED = ("wide-bound",)  # caveats an audited protocol's tables' caption states (audit_lines): said there once


def caveat_lines(caveats: list[dict[str, str]]) -> list[str]:
    """The caveats on the claim under the flags, never counted as one: a line per caveat said alike of
    several models (those the caption above, or check's audit lines, already said are not said again)."""
    said: dict[tuple[str, str, str], list[str]] = {}
    for found in caveats:
        if found["check"] not in CAPTIONED:
            said.setdefault((found["check"], found["message"], found["advice"]), []).append(found["model"])
    head = [f"Caveats on the claim (no sign of a failed attack): {len(said)}"] if said else []
    return head + [
        f"  [{check}] {', '.join(models)}: {message} — {advice}" for (check, message, advice), models in said.items()
    ]


def check_document(judged: JudgedRun) -> Document:
    """What ``robeval check`` prints: the run, an audited protocol's audit and bound, then the lines under every
    table with its flags (Markdown lines: a name shows as it is wherever the text is pasted)."""
    run, flags, caveats = judged.run, [f.as_flag() for f in judged.flags], [f.as_flag() for f in judged.caveats]
    lines = diagnostic_lines({**run.info, "flags": flags, "caveats": caveats}, run.summary)
    audit = audit_lines(run.summary)  # an audited protocol (fast): what its tables' caption says, here without a table
    return [Lines([f"Run {run.run_id} ({run.protocol}, {run.status}):", *audit, *lines])]


# what Soundness.render shows: check's lines, the checklist (both Markdown), the report's section (HTML)
DOCUMENTS = {"md": check_document, "checklist": checklist_document, "html": checklist_section}

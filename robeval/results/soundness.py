"""Every registered soundness check (robeval.results.indicators) over a run, model by model.

A run is judged together with its evidence runs (the PGD runs at large eps ``check --report
--run-missing`` makes for it) and with the newest run of the other restart protocol on the same
examples, both found in its store; at the end of a run (:func:`run_findings`, what run.json stores)
only its own records are at hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..store import Store, StoredRun
from . import indicators  # noqa: F401  (importing it registers every check)
from .findings import CHECKS, NOT_RUN, Evidence, Finding
from .runs import load_run, minimum_norm_records, restart_companion
from .summary import add_model_columns


@dataclass
class ModelFindings:
    """One model's finding of every check, in registration order: the checks of the attacks
    (:attr:`indicators`), then those of the claim (:attr:`claims`)."""

    model: str
    findings: list[Finding]

    @property
    def indicators(self) -> list[Finding]:
        return [f for f in self.findings if not CHECKS[f.check].claim]

    @property
    def claims(self) -> list[Finding]:
        return [f for f in self.findings if CHECKS[f.check].claim]

    @property
    def raised(self) -> list[Finding]:
        return [f for f in self.findings if f.raised]

    @property
    def caveats(self) -> list[Finding]:
        return [f for f in self.findings if f.caveat]

    @property
    def not_run(self) -> int:
        return sum(f.status == NOT_RUN for f in self.indicators)

    @property
    def checked(self) -> int:
        """The checks of the attacks that judged the model (ok, RAISED or not applicable to it)."""
        return len(self.indicators) - self.not_run


def judge_summary(
    summary: pd.DataFrame,
    info: dict[str, Any] | None = None,
    records: pd.DataFrame | None = None,
    companion: pd.DataFrame | None = None,
) -> list[ModelFindings]:
    """Every check's finding for every model of a run (an adaptive copy is a model too), from the
    :class:`Evidence` at hand (a check that reads a missing part is not run)."""
    info = info or {}
    summary = summary if "adaptive" in summary else add_model_columns(summary.copy())  # (a summary made by hand)
    norms = pd.DataFrame(columns=["model", "attack", "min_norm"]) if records is None else minimum_norm_records(records)
    companion = pd.DataFrame() if companion is None else companion
    ev = Evidence(summary, info.get("model_checks", {}), info.get("models", {}), norms, companion)
    return [ModelFindings(m, [c.finding(name, m, summary[summary["model"] == m], ev) for name, c in CHECKS.items()])
            for m in dict.fromkeys(summary["model"])]  # fmt: skip


def run_findings(
    summary: pd.DataFrame, info: dict[str, Any], records: pd.DataFrame | None = None
) -> dict[str, list[dict[str, str]]]:
    """The raised findings (``flags``: the attacks may have failed) and the ``caveats`` on the claim of a run
    as run.json stores them, from what the API's summarising has at hand."""
    judged = judge_summary(summary, info, records)
    return {"flags": [f.as_flag() for one in judged for f in one.raised],
            "caveats": [f.as_flag() for one in judged for f in one.caveats]}  # fmt: skip


@dataclass
class JudgedRun:
    """A stored run's findings, judged with its evidence runs (named, with the eps they added)."""

    run: StoredRun
    evidence: list[StoredRun]
    models: list[ModelFindings]

    @property
    def flags(self) -> list[Finding]:
        return [f for one in self.models for f in one.raised]

    @property
    def caveats(self) -> list[Finding]:
        return [f for one in self.models for f in one.caveats]


def judge_stored(store: Store, run: StoredRun) -> JudgedRun:
    """``run`` of ``store`` judged with its evidence runs (oldest first) and its restart companion from the store."""
    extra = [load_run(store, r) for r, config in store.finished_runs() if config.get("evidence_for") == run.run_id]
    both = [run, *extra]
    summary = pd.concat([r.summary for r in both], ignore_index=True)
    records = pd.concat([r.records for r in both], ignore_index=True)
    return JudgedRun(run, extra, judge_summary(summary, run.info, records, restart_companion(store, run)))

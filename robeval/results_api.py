"""``robeval.open_run`` and ``Run``: see docs/python.md, section Reading a stored run back.

A store named by its path is opened for each read and closed after it (nothing is held open, nothing is
written but what a method is asked to write).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .core.defaults import DEFAULT_STORE
from .core.errors import UserError
from .results.runs import StoredRun, combine, minimal_norms, resolve_runs, table_records
from .store import Store, existing_store

if TYPE_CHECKING:
    from .report.checklist import Soundness
    from .report.comparison import Comparison


def open_run(run_id: str | list[str] | None = None, store: str | Path | Store = DEFAULT_STORE) -> Run:
    """The stored run ``run_id`` of ``store`` (several ids: those runs, combined as one table combines
    them), or with no id the newest finished run with the runs made to complete its evidence (``check
    --run-missing``).  A missing store or an unknown run is a one-line :class:`~robeval.errors.UserError`
    and creates nothing."""
    ids = [run_id] if isinstance(run_id, str) else list(run_id or [])
    with existing_store(store) as db:
        runs = resolve_runs(db, ids)
        path = db.path
    evidence = 0 if ids else len(runs) - 1
    return Run(
        store if isinstance(store, Store) else path, runs, _notes(runs, path, named=bool(ids)), evidence_runs=evidence
    )


def pair_runs(store: str | Path, a: str, b: str) -> tuple[list[str], str | None]:
    """The runs ``robeval compare A B`` opens, and what it says of its choice on its first line: the runs
    ``RUN_ID:MODEL`` sides name (nothing to say); else, for two models, the newest finished run that
    evaluated both (robeval.results.runs.run_of_pair: refused in one line when such runs differ in
    protocol, eps, ...)."""
    from .report.comparison import names_run
    from .results.runs import run_of_pair
    from .robustbench_ext.leaderboard import is_model_info_path

    named = list(dict.fromkeys(r.partition(":")[0] for r in (a, b) if names_run(r) and not is_model_info_path(r)))
    if named or any(is_model_info_path(r) or names_run(r) for r in (a, b)):
        return named, None
    with existing_store(store) as db:
        run_id, why = run_of_pair(db, a, b)
    return [run_id], why


def _notes(runs: list[StoredRun], path: Path, named: bool) -> list[str]:
    """What a reader must know of the runs taken: which, when none was named; those not finished."""
    notes = []
    if not named:
        extra = (
            f" with {', '.join(r.run_id for r in runs[1:])} (made by check --run-missing for it)" if runs[1:] else ""
        )
        notes.append(
            f"Using the newest finished run {runs[0].run_id}{extra} in {path} "
            "(name run ids to choose others; `robeval runs` lists them)"
        )
    for run in runs:
        if run.status != "finished":
            state = "is still running" if run.status == "running" else run.status
            notes.append(
                f"warning: run {run.run_id} {state}: what follows covers only the units it finished "
                "(`robeval runs` shows its progress)"
            )
    return notes


@dataclass
class Checklist:
    """The evaluation checklist of a run as written: its text, its file, the findings it renders, and the
    large-eps run made for it."""

    text: str
    path: Path
    checked: Soundness
    evidence_run: str | None = None  # the run ``--run-missing`` made (None: none was needed or asked for)


@dataclass
class Run:
    """A run as its store holds it: made now (:func:`robeval.evaluate`) or read back (:func:`open_run`;
    several runs named: combined as one table combines them).  The last ``evidence_runs`` of ``runs``
    are runs made to complete the first one's evidence (``check --run-missing``): its tables take them in,
    its ``records`` do not (``records_with_evidence`` does)."""

    store: Path | Store
    runs: list[StoredRun]
    notes: list[str] = field(default_factory=list)  # which run was taken, runs not finished (the CLI's stderr)
    evidence_runs: int = 0
    files: dict[str, Path] = field(default_factory=dict)  # the run files written for it (csv, md, json)
    # the run's own facts, from its first run
    run_id: str = field(init=False)
    status: str = field(init=False)  # running | finished | interrupted | failed
    protocol: str = field(init=False)
    config: dict = field(init=False)  # its stored configuration (what --resume compares)

    def __post_init__(self) -> None:
        first = self.runs[0]
        self.run_id, self.status, self.protocol = first.run_id, first.status, first.protocol
        self.config = first.config

    @cached_property
    def info(self) -> dict:
        """Its description as run.json has it: what the store keeps (versions, checkpoints, timings, the
        model checks), and what its records give, the same for a run made now and one read back: the
        soundness flags and notes, the passes per image, an audited protocol's audit lines."""
        from .evaluation.fast.summary import audit_lines
        from .results.soundness import run_findings
        from .results.summary import passes_per_image

        stored = dict(self.runs[0].info)
        if self.runs[0].summary.empty:  # nothing stored yet (a worker of a distributed run: rank 0 reads them)
            return stored
        derived = {
            **run_findings(self.summary, stored, self.records),
            "passes_per_image": passes_per_image(self.summary),
        }
        audit = audit_lines(self.summary)  # an audited protocol (fast): its audit and the bound, as under its tables
        return {**stored, **derived, **({"audit": audit} if audit else {})}

    @cached_property
    def records(self) -> pd.DataFrame:
        """The per-example records of the run (of each run named), with the run each comes from (``run_id``)."""
        return _records(self.runs[: len(self.runs) - self.evidence_runs])

    @cached_property
    def curves(self) -> pd.DataFrame:
        """The convergence-curve points the run stored (one row per unit and point, a run_id column
        first; robeval.results.convergence sums them over batches)."""
        with existing_store(self.store) as db:
            parts = [
                db.curves(r.run_id).assign(run_id=r.run_id) for r in self.runs[: len(self.runs) - self.evidence_runs]
            ]
        frame = pd.concat(parts, ignore_index=True)
        return frame[["run_id", *frame.columns.drop("run_id")]]

    @cached_property
    def records_with_evidence(self) -> pd.DataFrame:
        """:attr:`records` and those of the runs made to complete its evidence (other eps)."""
        return _records(self.runs)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per model x attack x eps, the runs combined (refused in one line when unlike)."""
        return combine(self.runs)

    def table(
        self,
        format: str = "md",
        *,
        top1_only: bool = False,
        attacks: str | Sequence[str] | None = None,
        names: Mapping[str, str] | Sequence[str] | None = None,
        bold: bool = True,
    ) -> str:
        """The paper table in ``format``: ``robeval table``, its ``--top1-only``, ``--attacks`` and ``--name``
        (docs/results.md); ``names`` also as ``{"digits-deit-diff": "DiffAttn"}``.  ``bold``: a column's
        best in bold where the claim test separates it from the runner-up (else a footnote mark)."""
        from .report.paper import TableOptions, render

        options = TableOptions.of(top1_only, attacks, names, bold)
        return render(self.summary, format, options, table_records(self.runs))  # bold: each cell's own records

    def compare(self, a: str, b: str, seed: int = 0) -> Comparison:
        """``robeval compare A B`` (docs/python.md).  A model of this run is named as it is; ``RUN_ID:MODEL``
        names one of another run, a bare name not in this run the newest finished run that has it."""
        from .report.comparison import comparison

        with existing_store(self.store) as db:
            return comparison(db, self._ref(a), self._ref(b), seed=seed)

    def _ref(self, ref: str) -> str:
        """``ref`` as the store's readers take it: a model of these runs named with its run's id."""
        from .report.comparison import names_run
        from .robustbench_ext.leaderboard import is_model_info_path

        if is_model_info_path(ref) or names_run(ref):
            return ref
        owner = next((r for r in self.runs if ref in set(r.records["model"])), None)
        return ref if owner is None else f"{owner.run_id}:{ref}"

    def plot(self, out: str | Path = Path("results") / "plots") -> list[Path]:
        """``robeval plot``: the figures as PNG and SVG files in the folder ``out``."""
        from .report.files import prepare_out_dir
        from .report.plots import make_plots
        from .results.runs import convergence_curves

        folder = prepare_out_dir(Path(out))
        with existing_store(self.store) as db:
            curves = convergence_curves(db, self.runs)
        return make_plots(self.summary, folder, minimal_norms(self.runs), curves)

    def check(self) -> Soundness:
        """``robeval check``: the findings, judged with the run's evidence runs (docs/python.md)."""
        from .report.checklist import Soundness
        from .results.soundness import judge_stored

        with existing_store(self.store) as db:
            return Soundness(judge_stored(db, self.runs[0]))

    def checklist(self, out: str | Path, evidence: Run | None = None) -> Checklist:
        """The evaluation checklist (Markdown) written to ``out``: ``robeval check --report FILE``.
        ``evidence``: the run made first to complete its evidence (``--run-missing``:
        :func:`robeval.api.large_eps_run`), named in what it returns."""
        from .core.atomic_files import atomic_write
        from .report.files import check_out_file

        path = check_out_file(Path(out))
        checked = self.check()
        text = checked.render("checklist")
        atomic_write(path, text)
        return Checklist(text, path, checked, None if evidence is None else evidence.run_id)

    def report(
        self,
        out: str | Path = Path("results") / "report.html",
        gallery_attack: str | None = None,
        gallery_size: int = 6,
        baseline: str | None = None,
        code: Sequence[str] = (),
    ) -> Path:
        """One self-contained HTML page of the runs (tables, figures, checklist, every model compared with
        ``baseline`` (default the first model; of several runs, every pair of models), a gallery of every
        model with ``gallery_size`` regenerated examples under ``gallery_attack``, configuration): ``robeval
        report``.  ``code``: the user's code (``PATH.py:CALLABLE=NAME``) the gallery may import to build a
        model of the run again; a model of the user's code not named here is not drawn (reading a store never
        imports code it names)."""
        from .core.atomic_files import atomic_write
        from .report.html_page import html_report

        path = check_report_out(Path(out), gallery_size)
        with existing_store(self.store) as db:
            page = html_report(
                db,
                self.runs,
                gallery_attack=gallery_attack,
                gallery_size=gallery_size,
                baseline=baseline,
                code=tuple(code),
            )
        return atomic_write(path, page)


def _records(runs: list[StoredRun]) -> pd.DataFrame:
    return pd.concat([r.records.assign(run_id=r.run_id) for r in runs], ignore_index=True)[
        ["run_id", *runs[0].records.columns]
    ]


def check_report_out(out: Path, gallery_size: int) -> Path:
    """The report's file and gallery size, checked before any work (one line each)."""
    from .report.files import check_out_file

    if out.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--out {out}: the report is an HTML file; name it *.html")
    if gallery_size < 0:
        raise UserError(f"--gallery-size must be 0 or more, got {gallery_size}")
    return check_out_file(out)

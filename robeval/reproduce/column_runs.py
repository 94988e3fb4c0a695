"""A table whose columns are runs of their own (docs/reproduce.md, "What a table is"): one ordinary stored
run per column, through the same ``evaluate`` as ``robeval run``.  The table's folder is named by the first
column's run id where ``out`` holds ``{run_id}``.

Layout ``runs-as-columns``: a cell is its column's measure of the row's model in that column's run; a
column that does not apply is ``n/a`` throughout (its note, in the caption, says why).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..core.defaults import CLEAN, RUN_ID_FIELD
from ..core.errors import UserError
from ..report.grid import Measured
from ..report.naming import caption_parts, is_condition
from ..shifts.catalog import SEVERITIES
from ..shifts.metrics import corruption_metrics
from .render import Reproduction, Request, caption, write
from .tables import Column, PaperTable

if TYPE_CHECKING:
    from ..store import Store

PER_COLUMN = ("data", "models", "attacks", "eps")  # what every column's run sets itself


NA = "n/a"


def _top1(rows: pd.DataFrame, imagenet: bool) -> tuple[object, str]:
    """Clean top-1; where the model has several members their mean ± std, a
    :class:`~robeval.report.grid.Measured` that each format writes its own way."""
    clean = rows[rows["attack"] == CLEAN]
    if not len(clean):
        return NA, ""
    value = Measured.of(clean.iloc[0].to_dict(), "top1")
    return (value if value.std is not None else str(value)), ""


def _corruption(field: str) -> Callable[[pd.DataFrame, bool], tuple[str, str]]:
    """A measure read from the run's corruption metrics (robeval.shifts.metrics); its note when it is None."""

    def measure(rows: pd.DataFrame, imagenet: bool) -> tuple[str, str]:
        metrics = corruption_metrics(rows, None, imagenet)
        value = None if metrics is None else getattr(metrics, field)
        return (NA, metrics.note if metrics else "") if value is None else (f"{value:.2f}", "")

    return measure


# A column's measure: (the model's summary rows in the column's run, ImageNet or not) -> (cell, note)
MEASURES: dict[str, Callable[[pd.DataFrame, bool], tuple[object, str]]] = {
    "top1": _top1,
    "mce": _corruption("mce"),
    "mean-error": _corruption("mean_error"),
}


def runs_grid(table: PaperTable, summaries: dict[str, pd.DataFrame], digits: bool) -> tuple[pd.DataFrame, list[str]]:
    """Rows = the table's rows, columns = its columns; and the notes of cells that could not be filled."""
    out = pd.DataFrame(index=[r.label for r in table.rows])
    notes: list[str] = []
    for column in table.table_columns(digits):
        if not column.runs:
            out[column.title] = NA
            continue
        summary = summaries[column.key]
        cells = [
            MEASURES[column.measure](summary[summary["model"] == m], not digits)
            for m in table.column_models(column, digits)
        ]
        out[column.title] = [cell for cell, _ in cells]
        notes += [f"{column.title}: {note}" for _, note in cells if note]
    return out, list(dict.fromkeys(notes))


def run_parts(column: Column, summary: pd.DataFrame) -> list[str]:
    """What one column's run was: its data and n, protocol, random weights, what it lacks; the
    severities when not all five."""
    eps = summary["eps"].iloc[0]
    parts = caption_parts(summary[summary["eps"] == eps], eps, top5=False)[1:]
    severities = sorted({int(s) for s in summary[is_condition(summary)]["severity"]})
    if severities and tuple(severities) != SEVERITIES:
        parts.append(f"severities {', '.join(map(str, severities))} only (the table's: 1-5)")
    run = summary["run_id"].iloc[0] if "run_id" in summary else None
    return [f"{column.key}{f' (run {run})' if run else ''}: " + ", ".join(parts)]


def check_request(req: Request) -> None:
    """One line for options a column sets itself, unknown ``--data-for`` keys, and missing data."""
    table = req.table
    fixed = set(PER_COLUMN).union(*(c.options for c in table.columns + table.digits_columns))
    clash = sorted(fixed & set(req.options)) + (["eps"] if req.eps else [])
    if clash:
        raise UserError(
            f"{table.name} sets {', '.join('--' + k.replace('_', '-') for k in clash)} for each column itself"
        )
    keys = table.data_keys(digits=False)
    unknown = sorted(set(req.data_for) - set(keys))
    if unknown:
        raise UserError(f"--data-for {unknown[0]}: {table.name}'s columns read {', '.join(keys)}")
    needed = [c.data for c in table.columns if c.runs and c.data and not c.published]
    missing = [k for k in dict.fromkeys(needed) if k not in req.data_for]
    if not req.digits and missing:
        raise UserError(
            f"{table.name} is missing "
            + ", ".join(f"--data-for {k}=PATH" for k in missing)
            + " (each column reads its own data; without any --data-for it runs its digits version)"
        )


def run_options(req: Request, column: Column) -> dict[str, Any]:
    """The options of ``column``'s run: the request's, the column's own, its data and its models."""
    options = {**req.options, **column.options}
    if column.published:  # a published data set: --data-for gives the folder of its files
        options["data"] = column.published
        if column.data in req.data_for:
            options["data_dir"] = req.data_for[column.data]
    else:
        options["data"] = req.data_for[column.data] if column.data else "digits"
    models = req.table.column_models(column, req.digits)
    checkpoints = {m: p for m, p in req.checkpoints.items() if m in models}
    return dict(
        options, models=models, attacks="none", protocol=req.protocol or req.table.protocol, checkpoints=checkpoints
    )


def newest_matching_run(store: str | Path | Store, options: dict[str, Any]) -> str | None:
    """The newest run in ``store`` (finished or not) with the configuration ``options`` give, if any."""
    from ..evaluation.plan import planned_identity
    from ..options import newest_matching
    from ..store import Store, existing_store

    if not isinstance(store, Store) and not Path(store).exists():
        return None  # no store yet: nothing to continue
    with existing_store(store) as opened:
        runs = opened.runs()
    newest_first = [(r.id, json.loads(r.config)) for r in runs.iloc[::-1].itertuples()]
    return newest_matching(newest_first, planned_identity(options))


def resume_points(req: Request, columns: list[Column], resume: str | None) -> dict[str, str]:
    """Column key -> the stored run it continues (a finished one is taken as it is: nothing is redone)."""
    if resume is None:
        return {}
    store = req.options.get("store")
    if store is None:
        raise UserError("--resume needs a results store")
    found = {c.key: newest_matching_run(store, run_options(req, c)) for c in columns}
    points = {k: v for k, v in found.items() if v is not None}
    if not points or (resume != "latest" and resume not in points.values()):
        what = "" if resume == "latest" else f" {resume}"
        raise UserError(f"--resume{what}: no run of {req.table.name}'s columns with these options in {store}")
    return points


def column_runs(req: Request) -> Reproduction:
    """One stored run per column, then the table in its layout (``runs-as-columns``)."""
    check_request(req)
    table = req.table
    columns = [c for c in table.table_columns(req.digits) if c.runs]
    resume = req.options.pop("resume", None)
    points = resume_points(req, columns, resume)
    folder, results = req.out, {}
    for column in columns:
        out = None if folder is None else f"{folder}/{column.key}"
        results[column.key] = req.evaluate(**run_options(req, column), out=out, resume=points.get(column.key))
        if folder is not None:
            folder = folder.replace(RUN_ID_FIELD, results[column.key].run_id)
    summaries = {key: result.summary for key, result in results.items()}
    grid, notes = runs_grid(table, summaries, req.digits)
    parts = [p for c in columns for p in run_parts(c, summaries[c.key])] + notes
    phrases = caption(table, req.digits, extra=parts)
    return write(Reproduction(table, phrases, grid, {}, None, results), folder)

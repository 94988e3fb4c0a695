"""Tables whose columns are stored runs of their own (layout ``runs-as-columns``): a shift per column
(ImageNet-R, -A, -C), or a data set per column (MNIST, CIFAR-100, ImageNet).  A cell is its column's
measure of the row's model in that column's run; a column that does not apply is ``n/a`` throughout
(its note, in the caption, says why)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ..core.defaults import CLEAN
from ..report.captions import caption_parts
from ..report.grid import Measured
from ..report.naming import is_condition
from ..shifts.catalog import SEVERITIES
from ..shifts.metrics import corruption_metrics
from .tables import Column, PaperTable

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


def _severities(summary: pd.DataFrame) -> list[int]:
    return sorted({int(s) for s in summary[is_condition(summary)]["severity"]})


def run_parts(column: Column, summary: pd.DataFrame) -> list[str]:
    """What one column's run was: its data and n, protocol, random weights, what it lacks; the
    severities when not all five."""
    eps = summary["eps"].iloc[0]
    parts = caption_parts(summary[summary["eps"] == eps], eps, top5=False)[1:]
    severities = _severities(summary)
    if severities and tuple(severities) != SEVERITIES:
        parts.append(f"severities {', '.join(map(str, severities))} only (the table's: 1-5)")
    run = summary["run_id"].iloc[0] if "run_id" in summary else None
    return [f"{column.key}{f' (run {run})' if run else ''}: " + ", ".join(parts)]

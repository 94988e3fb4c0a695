"""A paper table in its own layout, as a document (Markdown, CSV and LaTeX), from a run's summary or a profile;
what a reproduction was asked for (resolved) and what it made, and the writing of its table files.

The efficiency tables come from one :func:`robeval.evaluation.profiling.profile` of the table's distinct
models (a model filling several rows is profiled once); every caption states their units
(:func:`profile_parts`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.atomic_files import atomic_write
from ..core.defaults import CLEAN
from ..evaluation.protocols import PROTOCOLS
from ..report.document import Document, Grid
from ..report.files import prepare_out_dir
from ..report.formats import FORMATS
from ..report.naming import attack_title, caption_parts
from .tables import PaperTable


def caption(
    table: PaperTable,
    digits: bool,
    summary: pd.DataFrame | None = None,
    eps: str = "",
    extra: tuple[str, ...] | list[str] = (),
) -> list[str]:
    """The caption's phrases: the table's title and source, then (attack and accuracy tables) the run's
    own — threat model, data, protocol, random weights, what is incomplete — as every robeval table
    states them, then ``extra`` (what a profile or the columns' runs were), the table's and its columns'
    notes, and what the digits version changes."""
    parts = [table.title, f"source: {table.source}", *extra]
    notes = list(table.notes)
    if summary is not None and not PROTOCOLS.require(summary["protocol"].iloc[0]).valid_threat_model:
        notes.insert(0, "--protocol standard gives the valid threat model")
    if digits:
        notes.append(
            "embedded digits demo: each row is the digits version of the paper's model"
            + (f", at eps {eps} (the paper: {table.eps})" if table.kind == "attacks" and eps != table.eps else "")
        )
    notes += [c.note for c in table.table_columns(digits) if c.note] + list(table.digits_notes if digits else ())
    run_parts = caption_parts(summary, eps, top5=table.kind == "attacks") if summary is not None else []
    return [*parts, *run_parts, *notes]


TOPK, METRICS = ("Top-1", "Top-5"), ("top1", "top5")


def model_grid(table: PaperTable, summary: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Rows = models (the paper's labels), columns = (Clean and each attack, Top-1 / Top-5)."""
    s, attacks = summary.set_index(["model", "attack"]), (CLEAN, *table.attacks)
    columns = pd.MultiIndex.from_tuples([(attack_title(a), k) for a in attacks for k in TOPK])
    cells = [
        [f"{s.loc[(model, a), metric]:.2f}" if (model, a) in s.index else "" for a in attacks for metric in METRICS]
        for model in labels
    ]
    return pd.DataFrame(cells, index=list(labels.values()), columns=columns)


def attack_grid(table: PaperTable, summary: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Rows = Clean and the attacks, columns = (model label, Top-1 / Top-5): the model grid turned."""
    grid = model_grid(table, summary, labels)
    return grid.T.unstack(1).reindex(list(dict.fromkeys(grid.columns.get_level_values(0))))


def accuracy_grid(table: PaperTable, summary: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Rows = models; clean Top-1, parameters, and accuracy per parameter against the first row:
    ``(top-1 / top-1 of the first) / (parameters / parameters of the first)``."""
    from ..models import count_parameters

    clean = summary[summary["attack"] == CLEAN].set_index("model")
    top1 = [float(clean.loc[m, "top1"]) for m in labels]
    params = [count_parameters(m) for m in labels]
    out = pd.DataFrame(index=list(labels.values()))
    out["Top-1 (%)"] = [f"{a:.2f}" for a in top1]
    out["Params (M)"] = [f"{p / 1e6:.2f}" if p >= 1e6 else f"{p / 1e6:.4f}" for p in params]
    out["Accuracy/param"] = [
        f"{(a / top1[0]) / (p / params[0]):.3f}" if top1[0] else "n/a" for a, p in zip(top1, params)
    ]
    return out


LAYOUTS = {"attacks-as-rows": attack_grid, "models-as-rows": model_grid, "accuracy-per-parameter": accuracy_grid}


# (column title, its value from a profile row, digits shown)
EFFICIENCY_COLUMNS: tuple[tuple[str, Callable[[pd.Series], float], int], ...] = (
    ("Speed (it/s)", lambda r: r["forward_backward_img_s"] / r["batch_size"], 2),
    ("Max memory (MB)", lambda r: r["pass_memory_MB"], 1),
    ("FLOPs/sample (G)", lambda r: r["gflops_per_image"], 3),
    ("Params (M)", lambda r: r["params_M"], 2),
)
PROFILE_MEASURES: dict[str, Callable[[pd.Series], float]] = {  # a Column's measure in a profile table
    "latency-ms": lambda r: 1000.0 / r["forward_img_s"],
}


def _number(value, digits: int) -> str:
    """``digits`` decimals; below 1, four significant digits (the digits demo's models are tiny)."""
    if value is None or pd.isna(value):
        return "n/a"
    return f"{value:,.{digits}f}" if abs(value) >= 1 else f"{value:.4g}"


def _cell(value, reference, digits: int) -> str:
    """The value, with its change (%) against ``reference`` when there is one."""
    text = _number(value, digits)
    if text == "n/a" or reference is None or pd.isna(reference) or not reference:
        return text
    return f"{text} ({100.0 * (value - reference) / reference:+.1f}%)"


def efficiency_grid(table: PaperTable, profile: pd.DataFrame, digits: bool) -> pd.DataFrame:
    """Rows = the table's rows, columns = speed, memory, FLOPs, parameters; a row with ``against``
    shows its change against that row."""
    by_model, model_of = profile.set_index("model"), {r.label: r.model(digits) for r in table.rows}
    out = pd.DataFrame(index=[r.label for r in table.rows])
    for title, value, shown in EFFICIENCY_COLUMNS:
        measured = {label: value(by_model.loc[model]) for label, model in model_of.items()}
        out[title] = [_cell(measured[r.label], measured[r.against] if r.against else None, shown) for r in table.rows]
    return out


def latency_grid(table: PaperTable, profile: pd.DataFrame, digits: bool) -> pd.DataFrame:
    """Rows = the table's rows, columns = the table's columns, each a family of models (one per row)."""
    by_model = profile.set_index("model")
    out = pd.DataFrame(index=[r.label for r in table.rows])
    for column in table.table_columns(digits):
        measure = PROFILE_MEASURES[column.measure]
        out[column.title] = [_number(measure(by_model.loc[m]), 2) for m in table.column_models(column, digits)]
    return out


PROFILE_LAYOUTS = {"efficiency": efficiency_grid, "latency-as-columns": latency_grid}


def profile_parts(table: PaperTable, profile: pd.DataFrame) -> list[str]:
    """What the figures are: units, batch, device, threads, repeats (the caption's own phrases)."""
    import torch

    first = profile.iloc[0]
    how = f"median of {first['repeats']} interleaved repeats on {first['device']} ({torch.get_num_threads()} threads)"
    if table.layout == "latency-as-columns":
        return [
            f"inference time per image (ms): forward passes alone (no gradients) at batch size {first['batch_size']}, "
            f"1000 / images per second; {how}"
        ]
    return [
        "speed (it/s): iterations per second, one iteration = a forward and a backward pass (gradients of the "
        f"weights and the input, no optimiser step) on a batch of {first['batch_size']} images; {how}",
        "max memory (MB): what one such pass adds to the memory in use (GPU: peak allocated above what was "
        "allocated before it; CPU: resident memory added, measured in a fresh process); n/a where not measured",
        "FLOPs/sample: matrix products and convolutions of one image's forward pass (a multiply-add = 2 FLOPs)",
    ]


def document(grid: pd.DataFrame, phrases: list[str]) -> Document:
    """The table as a document: its grid (rows unnamed) under its caption."""
    return [Grid(grid, phrases, corner="")]


@dataclass
class Reproduction:
    table: PaperTable
    caption: list[str]  # the caption's phrases
    grid: Any  # pandas DataFrame in the table's layout
    files: dict[str, Path]
    result: Any = None  # the Run of a one-run table (robeval.results_api.Run)
    results: dict[str, Any] | None = None  # column key -> the Run of each column's run

    @property
    def text(self) -> str:
        """The caption as one line (its phrases joined), as the Markdown file shows it."""
        return "; ".join(self.caption)


@dataclass
class Request:
    """What one reproduction was asked for, resolved: the table, its version, the checkpoints by model."""

    table: PaperTable
    digits: bool
    evaluate: Callable[..., Any]
    out: str | None
    checkpoints: dict[str, list[str]]  # each model's members
    protocol: str | None
    eps: str | None
    data: str
    data_for: dict[str, str]
    options: dict[str, Any]


def write(rep: Reproduction, folder: str | None) -> Reproduction:
    """``table.md``, ``table.csv`` and ``table.tex`` in ``folder`` (nothing when None)."""
    if folder is not None:
        where = prepare_out_dir(Path(folder))
        for written in (FORMATS["md"], FORMATS["csv"], FORMATS["latex"]):
            rep.files[written.suffix] = where / f"table.{written.suffix}"
            atomic_write(rep.files[written.suffix], written.render(document(rep.grid, rep.caption)))
    return rep

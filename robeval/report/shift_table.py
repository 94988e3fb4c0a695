"""The blocks after a paper table's attack blocks (:func:`later_blocks`): minimum-norm attacks
(docs/soundness.md, "Minimum-norm attacks"), and the distribution-shift tables in the Elliptical paper's
layout (docs/shift.md, "Metrics and tables"): the clean-image shifts, the corruption benchmarks as each is
reported (:data:`REPORTED`), then the attack columns (top-1); and each corruption's top-1 over severities.

Runs of different shifts combine into one table, each with its own columns.  A condition's accuracy does
not depend on eps; the first eps is used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..attacks import list_attacks
from ..core.defaults import CLEAN
from ..shifts.kinds import CLEAN_DATA_SHIFTS, SHIFT_KINDS
from ..shifts.metrics import CorruptionMetrics, corruption_metrics
from .document import Grid
from .naming import attack_title, column, data_label, is_condition


def minimum_norm_attacks(summary: pd.DataFrame) -> list[str]:
    """The minimum-norm attacks present in ``summary``, in registry order."""
    present = set(summary["attack"])
    return [s.name for s in list_attacks() if s.minimum_norm and s.name in present]


def size_label(value: float, norm: str) -> str:
    """A perturbation size as a table shows it: ``x/255`` in Linf, plain in L2."""
    if not np.isfinite(value):
        return "none found" if value > 0 else ""
    return f"{value * 255:.2f}/255" if norm == "Linf" else f"{value:.3f}"


def minimum_norm_grid(summary: pd.DataFrame) -> pd.DataFrame | None:
    """Rows = models; per minimum-norm attack its median minimal norm, then top-1 at each eps."""
    attacks = minimum_norm_attacks(summary)
    if not attacks:
        return None
    rows: dict[str, dict[str, str]] = {}
    for r in summary[summary["attack"].isin(attacks)].itertuples():
        cells = rows.setdefault(r.model, {})
        cells.setdefault(f"{attack_title(r.attack)} median size", size_label(float(r.median_min_norm), r.norm))
        cells[f"{attack_title(r.attack)} Top-1 @ {r.eps}"] = f"{r.top1:.2f}"
    return pd.DataFrame.from_dict(rows, orient="index").fillna("")


def minimum_norm_caption(summary: pd.DataFrame) -> list[str]:
    """The minimum-norm block's caption, phrase by phrase."""
    sel = summary[summary["attack"].isin(minimum_norm_attacks(summary))]
    return [
        f"Minimum-norm attacks: median smallest {sel['norm'].iloc[0]} perturbation that changes the top-1 decision "
        "(0 for an image already misclassified; 'none found' when over half were not fooled) and robust top-1 (%) "
        "at each eps of the run, read from the same search",
        f"n = {int(sel['n'].max())}",
        "top-5 under these attacks is measured at the decision boundary and is not a top-5 attack",
    ]


def attack_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of the ordinary attack table: clean data only, no shifted condition."""
    return summary[column(summary, "shift").isin(CLEAN_DATA_SHIFTS) & ~is_condition(summary)]


def condition_kinds(summary: pd.DataFrame) -> list[str]:
    """The shift kinds whose conditions the summary has, in order of appearance."""
    return [k for k in dict.fromkeys(column(summary[is_condition(summary)], "shift")) if k]


def model_metrics(rows: pd.DataFrame, kind: str | None = None) -> CorruptionMetrics | None:
    """Corruption metrics of one model's conditions of one shift kind (the first with conditions when
    not given; the first eps it has them at: a run of other eps combined with it has none), by that
    kind's corruption set."""
    kind = kind if kind is not None else next(iter(condition_kinds(rows)), "")
    conditions = rows[is_condition(rows) & (column(rows, "shift") == kind)]
    if conditions.empty:
        return None
    rows = rows[rows["eps"] == conditions["eps"].iloc[0]]
    conditions, shift = conditions[conditions["eps"] == rows["eps"].iloc[0]], SHIFT_KINDS.require(kind)
    clean = rows[(rows["attack"] == CLEAN) & column(rows, "shift").isin(CLEAN_DATA_SHIFTS)]
    imagenet = all(shift.on_imagenet(str(d)) for d in conditions["source"])
    clean_top1 = float(clean["top1"].iloc[0]) if len(clean) else None
    return corruption_metrics(conditions, clean_top1, imagenet, shift.corruption_set)


def _na(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


REPORTED = {  # a corruption benchmark's cells, as it is reported (ShiftKind.reported_as)
    "mce": lambda title, m: {
        f"{title} mCE": _na(m.mce),
        "Relative mCE": _na(m.relative_mce),
        "Mean corruption error": f"{m.mean_error:.2f}",
    },
    "accuracy": lambda title, m: {f"{title} Top-1": f"{m.mean_accuracy:.2f}"},
    "error": lambda title, m: {f"{title} mean error": f"{m.mean_error:.2f}"},
}
REPORTED_PHRASE = {
    "mce": "mean corruption error (%, lower is better)",
    "accuracy": "mean top-1 over the corruptions x severities run",
    "error": "mean top-1 error over the corruptions x severities run (%, lower is better)",
}


def _other_image_cells(rows: pd.DataFrame) -> dict[str, str]:
    """The clean-image shifts' (ImageNet-R, -A, -V2, -Sketch, CIFAR-10.1) top-1, clean and attacked."""
    cells: dict[str, str] = {}
    for kind in [k for k, shift in SHIFT_KINDS.items() if not shift.has_conditions]:
        mine = rows[column(rows, "shift") == kind]
        mine = mine[(mine["eps"] == mine["eps"].iloc[0]) | (mine["attack"] != CLEAN)] if len(mine) else mine
        for r in mine[~is_condition(mine)].itertuples():
            what = "" if r.attack == CLEAN else f" {attack_title(r.attack)} {r.eps}"
            cells.setdefault(f"{SHIFT_KINDS.require(kind).title}{what} Top-1", f"{r.top1:.2f}")
    return cells


def _shift_cells(rows: pd.DataFrame) -> dict[str, str]:
    cells: dict[str, str] = {}
    clean = attack_rows(rows)
    first = clean[clean["eps"] == clean["eps"].iloc[0]] if len(clean) else clean
    if len(hit := first[first["attack"] == CLEAN]):
        cells["Clean Top-1"] = f"{hit['top1'].iloc[0]:.2f}"
    cells.update(_other_image_cells(rows))
    for kind in condition_kinds(rows):
        metrics, shift = model_metrics(rows, kind), SHIFT_KINDS.require(kind)
        if metrics is not None:
            cells.update(REPORTED[shift.reported_as](shift.title, metrics))
    many_eps = clean["eps"].nunique() > 1
    for r in clean[~clean["attack"].isin([CLEAN])].itertuples():
        cells[f"{attack_title(r.attack)}{f' {r.eps}' if many_eps else ''} Top-1"] = f"{r.top1:.2f}"
    return cells


def shift_grid(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows = models; the shift columns, then the attack columns (top-1)."""
    rows = {m: _shift_cells(summary[summary["model"] == m]) for m in dict.fromkeys(summary["model"])}
    grid = pd.DataFrame.from_dict(rows, orient="index")
    return grid.loc[:, (grid.fillna("n/a") != "n/a").any()].fillna("")  # no column of n/a only


def corruption_grid(summary: pd.DataFrame) -> pd.DataFrame | None:
    """Rows = models; each corruption's top-1 averaged over its severities (first eps); with several
    corruption benchmarks in the table each column names its benchmark."""
    kinds, rows = condition_kinds(summary), {}
    for model in dict.fromkeys(summary["model"]):
        cells = {}
        for kind in kinds:
            metrics = model_metrics(summary[summary["model"] == model], kind)
            prefix = f"{SHIFT_KINDS.require(kind).title}: " if len(kinds) > 1 else ""
            for c, v in (metrics.per_corruption if metrics is not None else {}).items():
                cells[prefix + c.replace("_", " ")] = f"{v:.2f}"
        if cells:
            rows[model] = cells
    return pd.DataFrame.from_dict(rows, orient="index").fillna("") if rows else None


def _kind_part(summary: pd.DataFrame, kind: str) -> str:
    rows, shift = summary[column(summary, "shift") == kind], SHIFT_KINDS.require(kind)
    n = f"n = {int(rows['n'].max())}"
    where = f"data: {data_label(rows['data'].iloc[0])}, {n}" if "data" in rows else n
    reported = shift.has_conditions and shift.reported_as != "mce"
    phrase = f", {shift.title} as {REPORTED_PHRASE[shift.reported_as]}" if reported else ""
    return f"{kind}: {shift.description} ({where}{phrase})"


def shift_caption(summary: pd.DataFrame) -> list[str]:
    """The shift table's caption, phrase by phrase (a renderer joins them, or puts each on a line)."""
    benchmarks = condition_kinds(summary)
    mce = any(SHIFT_KINDS.require(k).reported_as == "mce" for k in benchmarks)
    parts = ["Distribution shift: top-1 accuracy (%)" + (f", ImageNet-C as {REPORTED_PHRASE['mce']}" if mce else "")]
    parts += [_kind_part(summary, kind) for kind in dict.fromkeys(column(summary, "shift")) if kind]
    metrics = [model_metrics(summary[summary["model"] == m], k) for m in summary["model"].unique() for k in benchmarks]
    parts += sorted({m.note for m in metrics if m is not None and m.note})
    if mce:
        parts.append("mCE: AlexNet-normalised as in Hendrycks & Dietterich 2019, relative mCE against the clean error")
    return parts


DETAIL_CAPTION = "Top-1 accuracy (%) per corruption, averaged over the severities run"


def later_blocks(summary: pd.DataFrame) -> list[Grid]:
    """The blocks after the attack blocks, each a grid under its caption's phrases: the minimum-norm
    block, the shift table and its per-corruption detail."""
    attacks, shifted = split(summary)
    norms = minimum_norm_grid(attacks)
    blocks = [] if norms is None else [Grid(norms, minimum_norm_caption(attacks))]
    if shifted:
        detail = corruption_grid(summary)
        blocks.append(Grid(shift_grid(summary), shift_caption(summary)))
        blocks += [Grid(detail, [DETAIL_CAPTION])] if detail is not None else []
    return blocks


def split(summary: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The rows of the attack blocks, and whether a shift block follows.  A shift run without
    attacks has no attack block (its clean accuracy is the shift table's first column)."""
    if not (column(summary, "shift") != "").any():
        return summary, False
    main = attack_rows(summary)
    return (main if (main["attack"] != CLEAN).any() else main.iloc[0:0]), True

"""The distribution-shift tables, in the Elliptical paper's layout: rows = models; columns ImageNet-R
and ImageNet-A (top-1, logits restricted to their 200 classes), ImageNet-C (mCE, or the unnormalised
mean corruption error where mCE does not apply), then the attack columns (top-1) when the runs have
them; and a detail table of each corruption's top-1 averaged over its severities.

Runs of different shifts combine into one table (``robeval table RUN_C RUN_A RUN_R``): each
contributes its own columns.  A condition's accuracy does not depend on eps; the first eps is used.
"""

from __future__ import annotations

import pandas as pd

from ..defaults import CLEAN
from ..shifts.catalog import parse_condition
from ..shifts.kinds import get_shift
from ..shifts.metrics import CorruptionMetrics, corruption_metrics
from .naming import attack_title, data_label

CLASS_SETS = (("imagenet-r", "ImageNet-R"), ("imagenet-a", "ImageNet-A"))
CLEAN_DATA_SHIFTS = ("", "corruptions")  # runs whose clean and attack rows are on the clean data


def shift_of(summary: pd.DataFrame) -> pd.Series:
    return summary["shift"].fillna("") if "shift" in summary.columns else pd.Series("", index=summary.index)


def has_shift(summary: pd.DataFrame) -> bool:
    return bool((shift_of(summary) != "").any())


def is_condition(summary: pd.DataFrame) -> pd.Series:
    return summary["attack"].map(lambda a: parse_condition(a) is not None)


def attack_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of the ordinary attack table: clean data only, no shifted condition."""
    return summary[shift_of(summary).isin(CLEAN_DATA_SHIFTS) & ~is_condition(summary)]


def model_metrics(rows: pd.DataFrame) -> CorruptionMetrics | None:
    """Corruption metrics of one model's rows (first eps)."""
    rows = rows[rows["eps"] == rows["eps"].iloc[0]]
    conditions = rows[is_condition(rows)]
    if conditions.empty:
        return None
    clean = rows[(rows["attack"] == CLEAN) & shift_of(rows).isin(CLEAN_DATA_SHIFTS)]
    imagenet = bool((conditions["data"] != "digits").all()) if "data" in conditions else False
    return corruption_metrics(conditions, float(clean["top1"].iloc[0]) if len(clean) else None, imagenet)


def _shift_cells(rows: pd.DataFrame) -> dict[str, str]:
    cells: dict[str, str] = {}
    clean = attack_rows(rows)
    first = clean[clean["eps"] == clean["eps"].iloc[0]] if len(clean) else clean
    if len(hit := first[first["attack"] == CLEAN]):
        cells["Clean Top-1"] = f"{hit['top1'].iloc[0]:.2f}"
    for kind, title in CLASS_SETS:
        hit = rows[(shift_of(rows) == kind) & (rows["attack"] == CLEAN)]
        if len(hit):
            cells[f"{title} Top-1"] = f"{hit['top1'].iloc[0]:.2f}"
    metrics = model_metrics(rows)
    if metrics is not None:
        cells["ImageNet-C mCE"] = "n/a" if metrics.mce is None else f"{metrics.mce:.2f}"
        cells["Relative mCE"] = "n/a" if metrics.relative_mce is None else f"{metrics.relative_mce:.2f}"
        cells["Mean corruption error"] = f"{metrics.mean_error:.2f}"
    many_eps = clean["eps"].nunique() > 1
    for r in clean[~clean["attack"].isin([CLEAN])].itertuples():
        cells[f"{attack_title(r.attack)}{f' {r.eps}' if many_eps else ''} Top-1"] = f"{r.top1:.2f}"
    return cells


def shift_grid(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows = models; the shift columns, then the attack columns (top-1)."""
    rows = {m: _shift_cells(summary[summary["model"] == m]) for m in dict.fromkeys(summary["model"])}
    columns = [
        c
        for c in dict.fromkeys(c for cells in rows.values() for c in cells)
        if any(cells.get(c, "n/a") != "n/a" for cells in rows.values())
    ]  # no column of n/a only
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).fillna("")


def corruption_grid(summary: pd.DataFrame) -> pd.DataFrame | None:
    """Rows = models; each corruption's top-1 averaged over its severities (first eps)."""
    rows = {}
    for model in dict.fromkeys(summary["model"]):
        metrics = model_metrics(summary[summary["model"] == model])
        if metrics is not None:
            rows[model] = {c.replace("_", " "): f"{v:.2f}" for c, v in metrics.per_corruption.items()}
    return pd.DataFrame.from_dict(rows, orient="index").fillna("") if rows else None


def shift_caption(summary: pd.DataFrame) -> str:
    parts = ["Distribution shift: top-1 accuracy (%), ImageNet-C as mean corruption error (%, lower is better)"]
    for kind in [k for k in dict.fromkeys(shift_of(summary)) if k]:
        rows = summary[shift_of(summary) == kind]
        where = (
            f"data: {data_label(rows['data'].iloc[0])}, n = {int(rows['n'].max())}"
            if "data" in rows
            else f"n = {int(rows['n'].max())}"
        )
        parts.append(f"{kind}: {get_shift(kind).description} ({where})")
    notes = {
        m.note
        for m in (model_metrics(summary[summary["model"] == x]) for x in dict.fromkeys(summary["model"]))
        if m is not None and m.note
    }
    parts += sorted(notes)
    parts.append("mCE: AlexNet-normalised as in Hendrycks & Dietterich 2019, relative mCE against the clean error")
    return "; ".join(parts)


DETAIL_CAPTION = "Top-1 accuracy (%) per corruption, averaged over the severities run"


def shift_blocks(summary: pd.DataFrame, render_grid) -> str:
    """The shift table and the per-corruption detail, each rendered by ``render_grid(grid, caption)``."""
    blocks = [render_grid(shift_grid(summary), shift_caption(summary))]
    detail = corruption_grid(summary)
    if detail is not None:
        blocks.append(render_grid(detail, DETAIL_CAPTION))
    return "\n\n".join(blocks)


def split(summary: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The rows of the attack blocks, and whether a shift block follows.  A shift run without
    attacks has no attack block (its clean accuracy is the shift table's first column)."""
    if not has_shift(summary):
        return summary, False
    main = attack_rows(summary)
    return (main if (main["attack"] != CLEAN).any() else main.iloc[0:0]), True

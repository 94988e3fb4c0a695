"""Paper tables: rows = models, column groups = attacks (Top-1, Top-5), best per column in bold.

Formats: Markdown, LaTeX (a ``table`` with a plain ``tabular``; no packages needed), CSV, JSON, and
RobustBench's model-info JSON (:mod:`.robustbench`).
Several eps values give one block per eps; a minimum-norm block and the shift tables follow.
This module assembles the blocks; the grids are rendered by :mod:`.grid`, named by :mod:`.naming`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..defaults import ANY, SUMMARY_COLUMNS
from ..registry import Registry
from . import grid as grids
from . import robustbench
from .captions import caption
from .minimum_norm import minimum_norm_block
from .naming import attack_title, latex_escape, ordered_attacks
from .shift_table import shift_blocks, split

TOPK = (("top1", "Top-1"), ("top5", "Top-5"))
Renderer = Callable[[pd.DataFrame], str]


@dataclass(frozen=True)
class TableFormat:
    render: Renderer
    note: str = ""  # what a format's reader must know, said on stderr (not in the file)


FORMATS: Registry[TableFormat] = Registry("table format")


def table_format(name: str, note: str = "") -> Callable[[Renderer], Renderer]:
    def decorate(fn: Renderer) -> Renderer:
        FORMATS.add(name, TableFormat(fn, note))
        return fn

    return decorate


def worst_cases_comparable(rows: pd.DataFrame) -> bool:
    """Whether every model's ``any`` is the worst case over the same attacks (else none is bolded)."""
    worst = rows[rows["attack"] == ANY]
    return "any_over" not in worst or worst["any_over"].fillna("").nunique() <= 1


def attack_grid(summary: pd.DataFrame, eps: str) -> tuple[pd.DataFrame, set]:
    """One eps block: rows = models, columns = (attack title, Top-1 / Top-5), and the cells to bold
    (the best of each column, when more than one model is compared on comparable columns)."""
    sel = summary[summary["eps"] == eps]
    models, attacks = list(dict.fromkeys(sel["model"])), ordered_attacks(sel)
    values = {(r.model, r.attack, m): float(getattr(r, m)) for r in sel.itertuples() for m, _ in TOPK}
    columns = pd.MultiIndex.from_tuples([(attack_title(a), k) for a in attacks for _, k in TOPK])
    cells = [
        [f"{values[(m, a, key)]:.2f}" if (m, a, key) in values else "" for a in attacks for key, _ in TOPK]
        for m in models
    ]
    bold = set()
    comparable = [a for a in attacks if a != ANY or worst_cases_comparable(sel)]
    for a in comparable if len(models) > 1 else []:
        for key, title in TOPK:
            scores = {m: values[(m, a, key)] for m in models if (m, a, key) in values}
            best = max(scores.values(), default=None)
            bold |= {(m, (attack_title(a), title)) for m, v in scores.items() if v == best}
    return pd.DataFrame(cells, index=models, columns=columns), bold


def _blocks(
    summary: pd.DataFrame, render_grid, attack_caption: Callable[[pd.DataFrame, str], str], shift_render
) -> str:
    """Every block of the table: one per eps, the minimum-norm block, the shift tables."""
    full, (summary, shifted) = summary, split(summary)
    blocks = []
    for eps in dict.fromkeys(summary["eps"]):
        grid, bold = attack_grid(summary, eps)
        blocks.append(render_grid(grid, attack_caption(summary, eps), bold=bold))
    blocks += [b for b in [minimum_norm_block(summary, shift_render)] if b]
    if shifted:
        blocks.append(shift_blocks(full, shift_render))
    return "\n\n".join(blocks) + "\n"


@table_format("md")
def to_markdown(summary: pd.DataFrame) -> str:
    return _blocks(summary, grids.to_markdown, caption, grids.to_markdown)


@table_format("latex")
def to_latex(summary: pd.DataFrame) -> str:
    def latex_caption(rows: pd.DataFrame, eps: str) -> str:
        return caption(rows, eps, latex=True)

    def shift_render(grid: pd.DataFrame, text: str, **kw) -> str:
        return grids.to_latex(grid, latex_escape(text), **kw)

    return _blocks(summary, grids.to_latex, latex_caption, shift_render)


@table_format("html")
def to_html(summary: pd.DataFrame) -> str:
    """The Markdown table's blocks as HTML tables (what ``robeval report`` embeds)."""
    return _blocks(summary, grids.to_html, caption, grids.to_html)


@table_format("csv")
def to_csv(summary: pd.DataFrame) -> str:
    ordered = SUMMARY_COLUMNS + [c for c in summary.columns if c not in SUMMARY_COLUMNS]
    return summary[ordered].to_csv(index=False)


@table_format("json")
def to_json(summary: pd.DataFrame) -> str:
    """Standard JSON: a missing number (NaN) is null, an unbounded one (a minimum-norm attack that
    found nothing) the string "inf"."""

    def plain(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None if math.isnan(value) else str(value)
        return value

    rows = [{k: plain(v) for k, v in row.items()} for row in summary.to_dict(orient="records")]
    return json.dumps(rows, indent=2, default=str, allow_nan=False) + "\n"


table_format("robustbench", note=robustbench.NOTE)(robustbench.to_model_info)


def render(summary: pd.DataFrame, fmt: str) -> str:
    return FORMATS.get(fmt).render(summary)

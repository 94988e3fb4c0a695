"""Paper tables: rows = models, column groups = attacks (Top-1, Top-5), best per column in bold.

Formats: Markdown, LaTeX (a ``table`` with a plain ``tabular``; no packages needed), CSV, JSON.
Several eps values give one block per eps.
"""

from __future__ import annotations

import json
import math
from typing import Callable

import pandas as pd

from ..attacks import list_attacks
from .tables import caption, latex_escape  # noqa: F401  (latex_escape: used by the other renderers)

FORMATS: dict[str, Callable[[pd.DataFrame], str]] = {}
ROW_TITLES = {"clean": "Clean", "any": "Any (worst case)"}  # the two columns that are no attack


def attack_title(attack: str) -> str:
    """How tables and plots name a column: the attack's registered title."""
    if attack in ROW_TITLES:
        return ROW_TITLES[attack]
    spec = next((s for s in list_attacks() if s.name == attack), None)
    return spec.title if spec is not None and spec.title else attack


def column_order() -> list[str]:
    return ["clean", *(s.name for s in list_attacks()), "any"]


def table_format(name: str):
    def decorate(fn: Callable[[pd.DataFrame], str]) -> Callable[[pd.DataFrame], str]:
        FORMATS[name] = fn
        return fn

    return decorate


def ordered_attacks(summary: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(summary["attack"]))
    order = column_order()
    return [a for a in order if a in present] + [a for a in present if a not in order]


def grid(summary: pd.DataFrame, eps: str) -> tuple[list[str], list[str], dict[tuple[str, str, str], float], dict[tuple[str, str], float]]:
    """Models, attacks, values[(model, attack, 'top1'|'top5')] and best[(attack, metric)] for one eps."""
    sel = summary[summary["eps"] == eps]
    models = list(dict.fromkeys(sel["model"]))
    attacks = ordered_attacks(sel)
    values = {(r.model, r.attack, m): float(getattr(r, m)) for r in sel.itertuples() for m in ("top1", "top5")}
    comparable = [a for a in attacks if a != "any" or worst_cases_comparable(sel)]
    best = {(a, m): max(values[(mod, a, m)] for mod in models if (mod, a, m) in values)
            for a in comparable for m in ("top1", "top5") if any((mod, a, m) in values for mod in models)}
    return models, attacks, values, best


def worst_cases_comparable(rows: pd.DataFrame) -> bool:
    """Whether every model's ``any`` is the worst case over the same attacks (else none is bolded)."""
    worst = rows[rows["attack"] == "any"]
    return "any_over" not in worst or worst["any_over"].fillna("").nunique() <= 1


def _cell(values, best, key, bold: Callable[[str], str], many: bool) -> str:
    if key not in values:
        return ""
    text = f"{values[key]:.2f}"
    best_value = best.get((key[1], key[2]))
    return bold(text) if many and best_value is not None and values[key] == best_value else text


def rows_of(summary: pd.DataFrame, eps: str, bold: Callable[[str], str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The attacks of one eps block and, per model, its Top-1/Top-5 cells (best per column in ``bold``)."""
    models, attacks, values, best = grid(summary, eps)
    many = len(models) > 1
    return attacks, [(m, [_cell(values, best, (m, a, k), bold, many) for a in attacks for k in ("top1", "top5")])
                     for m in models]


@table_format("md")
def to_markdown(summary: pd.DataFrame) -> str:
    from .minimum_norm import minimum_norm_block
    from .shift_table import markdown_grid, shift_markdown, split

    full, (summary, shifted) = summary, split(summary)
    blocks = []
    for eps in dict.fromkeys(summary["eps"]):
        attacks, rows = rows_of(summary, eps, lambda t: f"**{t}**")
        head = "| Model | " + " | ".join(f"{attack_title(a)} Top-1 | {attack_title(a)} Top-5" for a in attacks) + " |"
        rule = "|---|" + "---:|" * (2 * len(attacks))
        lines = [f"| {m} | " + " | ".join(cells) + " |" for m, cells in rows]
        blocks.append("\n".join([f"Table: {caption(summary, eps)}", "", head, rule, *lines]))
    blocks += [b for b in [minimum_norm_block(summary, markdown_grid)] if b]
    if shifted:
        blocks.append(shift_markdown(full))
    return "\n\n".join(blocks) + "\n"


@table_format("latex")
def to_latex(summary: pd.DataFrame) -> str:
    from .minimum_norm import minimum_norm_block
    from .shift_table import latex_grid, shift_latex, split

    full, (summary, shifted) = summary, split(summary)
    blocks = []
    for eps in dict.fromkeys(summary["eps"]):
        attacks, cells = rows_of(summary, eps, lambda t: rf"\textbf{{{t}}}")
        cols = "l" + "|cc" * len(attacks)
        groups = " & ".join(rf"\multicolumn{{2}}{{c}}{{{latex_escape(attack_title(a))}}}" for a in attacks)
        sub = " & ".join("Top-1 & Top-5" for _ in attacks)
        rows = [latex_escape(m) + " & " + " & ".join(row) + r" \\" for m, row in cells]
        blocks.append("\n".join([
            r"\begin{table}[t]", r"\centering", rf"\caption{{{caption(summary, eps, latex=True)}}}",
            rf"\begin{{tabular}}{{{cols}}}", r"\hline", rf"Model & {groups} \\", rf" & {sub} \\", r"\hline",
            *rows, r"\hline", r"\end{tabular}", r"\end{table}",
        ]))
    blocks += [b for b in [minimum_norm_block(summary, latex_grid)] if b]
    if shifted:
        blocks.append(shift_latex(full))
    return "\n\n".join(blocks) + "\n"


@table_format("csv")
def to_csv(summary: pd.DataFrame) -> str:
    from ..robustbench_ext.metrics import SUMMARY_COLUMNS

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


def render(summary: pd.DataFrame, fmt: str) -> str:
    from ..errors import UserError

    if fmt not in FORMATS:
        raise UserError(f"unknown table format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt](summary)

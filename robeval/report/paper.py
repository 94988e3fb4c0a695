"""Paper tables: rows = models, column groups = attacks (Top-1, Top-5), best per column in bold.

Formats: Markdown, LaTeX (a ``table`` with a plain ``tabular``; no packages needed), CSV, JSON.
Several eps values give one block per eps.
"""

from __future__ import annotations

import json
from typing import Callable

import pandas as pd

from .tables import caption

FORMATS: dict[str, Callable[[pd.DataFrame], str]] = {}
ATTACK_TITLES = {"clean": "Clean", "fgsm": "FGSM", "pgd": "PGD", "spsa": "SPSA", "apgd-ce": "APGD-CE",
                 "apgd-t": "APGD-T", "fab-t": "FAB-T", "square": "Square", "any": "Any (worst case)"}
COLUMN_ORDER = list(ATTACK_TITLES)


def table_format(name: str):
    def decorate(fn: Callable[[pd.DataFrame], str]) -> Callable[[pd.DataFrame], str]:
        FORMATS[name] = fn
        return fn

    return decorate


def ordered_attacks(summary: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(summary["attack"]))
    return [a for a in COLUMN_ORDER if a in present] + [a for a in present if a not in COLUMN_ORDER]


def grid(summary: pd.DataFrame, eps: str) -> tuple[list[str], list[str], dict[tuple[str, str, str], float], dict[tuple[str, str], float]]:
    """Models, attacks, values[(model, attack, 'top1'|'top5')] and best[(attack, metric)] for one eps."""
    sel = summary[summary["eps"] == eps]
    models = list(dict.fromkeys(sel["model"]))
    attacks = ordered_attacks(sel)
    values = {(r.model, r.attack, m): float(getattr(r, m)) for r in sel.itertuples() for m in ("top1", "top5")}
    best = {(a, m): max(values[(mod, a, m)] for mod in models if (mod, a, m) in values)
            for a in attacks for m in ("top1", "top5") if any((mod, a, m) in values for mod in models)}
    return models, attacks, values, best


def _cell(values, best, key, bold: Callable[[str], str], many: bool) -> str:
    if key not in values:
        return ""
    text = f"{values[key]:.2f}"
    return bold(text) if many and values[key] == best[(key[1], key[2])] else text


@table_format("md")
def to_markdown(summary: pd.DataFrame) -> str:
    blocks = []
    for eps in dict.fromkeys(summary["eps"]):
        models, attacks, values, best = grid(summary, eps)
        many = len(models) > 1
        head = "| Model | " + " | ".join(f"{ATTACK_TITLES.get(a, a)} Top-1 | {ATTACK_TITLES.get(a, a)} Top-5" for a in attacks) + " |"
        rule = "|---|" + "---:|" * (2 * len(attacks))
        rows = ["| " + m + " | " + " | ".join(_cell(values, best, (m, a, k), lambda t: f"**{t}**", many)
                                            for a in attacks for k in ("top1", "top5")) + " |" for m in models]
        blocks.append("\n".join([f"Table: {caption(summary, eps)}", "", head, rule, *rows]))
    return "\n\n".join(blocks) + "\n"


def latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
        text = text.replace(a, b)
    return text


@table_format("latex")
def to_latex(summary: pd.DataFrame) -> str:
    blocks = []
    for eps in dict.fromkeys(summary["eps"]):
        models, attacks, values, best = grid(summary, eps)
        many = len(models) > 1
        cols = "l" + "|cc" * len(attacks)
        groups = " & ".join(rf"\multicolumn{{2}}{{c}}{{{latex_escape(ATTACK_TITLES.get(a, a))}}}" for a in attacks)
        sub = " & ".join("Top-1 & Top-5" for _ in attacks)
        rows = [latex_escape(m) + " & " + " & ".join(_cell(values, best, (m, a, k), lambda t: rf"\textbf{{{t}}}", many)
                                                     for a in attacks for k in ("top1", "top5")) + r" \\" for m in models]
        blocks.append("\n".join([
            r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(caption(summary, eps))}}}",
            rf"\begin{{tabular}}{{{cols}}}", r"\hline", rf"Model & {groups} \\", rf" & {sub} \\", r"\hline",
            *rows, r"\hline", r"\end{tabular}", r"\end{table}",
        ]))
    return "\n\n".join(blocks) + "\n"


@table_format("csv")
def to_csv(summary: pd.DataFrame) -> str:
    from ..robustbench_ext.metrics import SUMMARY_COLUMNS

    ordered = SUMMARY_COLUMNS + [c for c in summary.columns if c not in SUMMARY_COLUMNS]
    return summary[ordered].to_csv(index=False)


@table_format("json")
def to_json(summary: pd.DataFrame) -> str:
    return json.dumps(summary.to_dict(orient="records"), indent=2, default=str) + "\n"


def render(summary: pd.DataFrame, fmt: str) -> str:
    from ..errors import UserError

    if fmt not in FORMATS:
        raise UserError(f"unknown table format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt](summary)

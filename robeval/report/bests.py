"""Which best of a table's column is a claim: bold only where the claim test separates it.

See docs/results.md, "Bold is a claim" and "Recipes: bold compares models trained alike".  The marks are
columns of the summary (``best_top1``, ``best_top5``), set from the per-example records before the table's
options rename the models; each renderer shows them its own way (robeval.report.grid).
"""

from __future__ import annotations

import pandas as pd

from ..core.defaults import ANY, names_in
from ..results.likeness import trained_apart
from ..results.statistics import member_matrix, separates
from ..results.summary import any_attack_records
from .naming import names_column

SEPARATED, NOT_SEPARATED, RECIPES_DIFFER = "separated", "not separated", "recipes differ"
METRICS = {"top1": "adv_top1", "top5": "adv_top5"}
FOOTNOTE = (
    "the column's best, not separated from the runner-up by the claim test (the 95% interval of their "
    "difference, robeval compare's, includes 0); bold: a best it separates"
)  # after the footnote mark (robeval.report.grid.MARK)
RECIPES_FOOTNOTE = (
    "recipes differ, see note: the column's best, separated from the runner-up by the claim test, but not bold, "
    "since a model of its column was trained with another recipe"
)  # after the recipes mark (robeval.report.grid.RECIPES_MARK)


def best_column(metric: str) -> str:
    return f"best_{metric}"


def mark_bests(summary: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with a best column per metric: each column's (eps, attack) best model marked separated
    or not from the runner-up, or separated but trained otherwise than a model of its column (docs/results.md);
    one model alone, or a worst case over other attacks than its neighbours', is not marked."""
    out = summary.copy()
    for metric in METRICS:
        out[best_column(metric)] = ""
    for (_, attack), rows in out.groupby(["eps", "attack"], sort=False):
        if rows["model"].nunique() < 2 or (attack == ANY and len(set(names_column(rows, "any_over"))) > 1):
            continue
        for metric in METRICS:
            shown = rows[metric].round(2)
            best = rows[shown == shown.max()]
            runner_up = rows[shown < shown.max()]
            mark = NOT_SEPARATED if len(best) > 1 else _mark(best.iloc[0], runner_up, records, metric)
            if mark == SEPARATED and any(trained_apart(best.iloc[0]["recipe"], r) for r in rows.get("recipe", ())):
                mark = RECIPES_DIFFER  # the best trained otherwise than a model of its column (or its members apart)
            out.loc[best.index, best_column(metric)] = mark
    return out


def _mark(best: pd.Series, runner_up: pd.DataFrame, records: pd.DataFrame, metric: str) -> str:
    """Whether the claim test separates ``best`` from the highest of ``runner_up`` (rows of one eps and attack)."""
    if runner_up.empty:
        return NOT_SEPARATED
    second = runner_up.loc[runner_up[metric].idxmax()]
    sides = [_outcomes(records, row, metric) for row in (second, best)]
    shared = sorted(set(sides[0].columns) & set(sides[1].columns))
    a, b = (side[shared].to_numpy(dtype=float) for side in sides)
    return SEPARATED if separates(a, b) else NOT_SEPARATED


def _outcomes(records: pd.DataFrame, row: pd.Series, metric: str) -> pd.DataFrame:
    """A summary row's per-example outcomes as members x examples (its worst case made from its attacks): the
    records of its model as the table names it, of its own run."""
    mine = records[(records["model"] == row["model"]) & (records["eps"] == row["eps"])]
    if "run_id" in records and pd.notna(row.get("run_id")):
        mine = mine[mine["run_id"] == row["run_id"]]  # the row's own run: records of two runs are never pooled
    if row["attack"] == ANY:
        mine = any_attack_records(mine, list(names_in(row.get("any_over"))))
    else:
        mine = mine[mine["attack"] == row["attack"]]
    if mine.empty:
        return pd.DataFrame()
    matrix, examples = member_matrix(mine, METRICS[metric])
    return pd.DataFrame(matrix, columns=examples)

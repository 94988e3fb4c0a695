"""How tables and figures name things: attacks by their registered titles, columns in a fixed
order, data by a short label.  The leaf every renderer imports (each format escapes what it shows:
robeval.report.escaping)."""

from __future__ import annotations

from pathlib import PurePath

import pandas as pd

from ..attacks import list_attacks
from ..core.defaults import ANY, CLEAN, Names, names_in

ROW_TITLES = {CLEAN: "Clean", ANY: "Any (worst case)"}  # the two columns that are no attack
NORM_MATH = {"Linf": r"\ell_\infty", "L2": r"\ell_2"}


def attack_title(attack: str) -> str:
    """How tables and plots name a column: the attack's registered title."""
    if attack in ROW_TITLES:
        return ROW_TITLES[attack]
    spec = next((s for s in list_attacks() if s.name == attack), None)
    return spec.title if spec is not None and spec.title else attack


def ordered_attacks(summary: pd.DataFrame) -> list[str]:
    """The attack columns: clean, the suite in its order, the other attacks, the worst case; a cascade's
    in its own order (the order its rows come in: clean, each attack after those it followed, any)."""
    present = list(dict.fromkeys(summary["attack"]))
    if len(summary) and column(summary, "cascade", False).astype(bool).all():
        return present
    order = [CLEAN, *(s.name for s in list_attacks()), ANY]
    return [a for a in order if a in present] + [a for a in present if a not in order]


def column(rows: pd.DataFrame, name: str, default: object = "") -> pd.Series:
    """``rows[name]`` with ``default`` for a missing value, or all ``default`` where the rows lack it."""
    return rows[name].fillna(default) if name in rows else pd.Series(default, index=rows.index)


def is_condition(rows: pd.DataFrame) -> pd.Series:
    """Which rows evaluate a shifted condition (robeval.results.summary's ``corruption`` column)."""
    return column(rows, "corruption") != ""


def names_column(rows: pd.DataFrame, name: str) -> list[Names]:
    """The names each of ``rows`` holds in column ``name`` (none where a row, or the rows, lack it)."""
    return [names_in(v) for v in rows[name]] if name in rows else [Names()] * len(rows)


def data_label(data: str) -> str:
    """The data as a caption names it: ``digits``, ``cifar10 (test)``, or a folder's last two path parts
    (``imagenet/val``: a run's data is a published set's name or a folder's path, never both), never a
    machine's absolute path (results.csv and run.json keep that)."""
    text = str(data)
    return "/".join(PurePath(text).parts[-2:]) if "/" in text or "\\" in text else text


def run_label(run_id: object) -> str:
    """How a file names the run its numbers come from: ``robeval run <id>``, or, for a run made without
    a results store (``benchmark()`` without ``store=``), that it was not stored."""
    if run_id is None or pd.isna(run_id) or str(run_id) in ("", "None"):
        return "robeval, no results store (its records were not kept)"
    return f"robeval run {run_id}"

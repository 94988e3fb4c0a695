"""How tables and figures name things (titles, column order, data labels) and the captions of paper-style
tables (:func:`caption_parts`): what a block measures, on which data under which protocol, what it lacks."""

from __future__ import annotations

from itertools import combinations_with_replacement
from pathlib import PurePath

import pandas as pd

from ..attacks import list_attacks
from ..core.defaults import ANY, CLEAN, NOT_ATTACKS, RANDOM_WEIGHTS, Names, names_in
from ..core.eps import eps_label
from ..core.precision import FP32
from ..evaluation.fast.summary import audit_lines
from ..evaluation.protocols import PROTOCOLS
from ..results.likeness import UNKNOWN, trained_apart
from .document import Formula

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


def measured_phrase(rows: pd.DataFrame, eps: str, top5: bool) -> str:
    """What the block measures: accuracy under attack at the budget (a :class:`Formula`: LaTeX writes the
    budget in math), or clean accuracy."""
    what = "Top-1 / top-5" if top5 else "Top-1"
    if not (len(rows) and set(rows["attack"]) - {CLEAN}):
        return f"{what} clean accuracy (%)"
    value, norm = float(rows["eps_value"].iloc[0]), rows["norm"].iloc[0]
    math = rf"${NORM_MATH.get(norm, norm)}$, $\epsilon = {eps_label(value)}$ ($\approx {value:.4g}$)"
    return Formula(
        f"{what} accuracy (%) under attack, {norm} eps = {eps} ({eps_label(value)}, {value:.6g})",
        rf"{what} accuracy (\%) under attack, {math}",
    )


def caption_parts(summary: pd.DataFrame, eps: str, top5: bool = True) -> list[str]:
    """The caption's phrases: what is measured, the threat model, the data, the protocol, and what the
    rows lack (plain text: each renderer escapes them; the budget a :class:`Formula`)."""
    sel = summary[summary["eps"] == eps]
    n = int(sel["n"].max()) if len(sel) else 0
    protocol = sel["protocol"].iloc[0] if "protocol" in sel and len(sel) else "standard"
    data = sel["data"].iloc[0] if "data" in sel and len(sel) else ""
    parts = [f"data: {data_label(data)}, n = {n}", f"protocol: {protocol}"]
    facts = PROTOCOLS.require(protocol)
    if not facts.valid_threat_model:
        parts[-1] += " (reproduction of the paper's protocol; eps in normalized units, not a pixel-space threat model)"
    if facts.audit_stages:
        parts[-1] += (
            " (AutoAttack's attacks, audited: a screening number, not AutoAttack's run nor a leaderboard entry)"
        )
    parts += [note for attack, note in facts.attack_notes.items() if attack in set(sel["attack"])]
    parts += transfer_parts(sel) + precision_parts(sel) + cascade_parts(sel, top5) + audit_lines(sel, eps)
    if (random := column(sel, "checkpoint") == RANDOM_WEIGHTS).any():
        models = ", ".join(dict.fromkeys(sel[random]["model"]))
        parts.append(f"RANDOM WEIGHTS (untrained, a smoke test): {models}")
    parts += unlike_parts(sel) + recipe_parts(sel) + incomplete_parts(sel) + any_coverage_parts(sel)
    return [measured_phrase(sel, eps, top5), *parts]


def unlike_parts(rows: pd.DataFrame) -> list[str]:
    """Runs of one table whose shared attacks ran with different settings (robeval.results.likeness):
    one line saying which, in every block, since any block may sit beside another run's."""
    return [f"NOT LIKE WITH LIKE: {note}" for note in dict.fromkeys(column(rows, "unlike")) if note]


def recipe_parts(rows: pd.DataFrame) -> list[str]:
    """The recipes of the rows' models where two of them (or the members of one) were trained otherwise
    (the summary's ``recipe`` column: robeval.results.likeness.recipe_cells): each model's values of the
    ingredients that differ; the models whose recipe is unknown, said once."""
    if "recipe" not in rows:
        return []
    cells = {model: names_in(cell) for model, cell in zip(rows["model"], rows["recipe"])}
    unknown = [model for model, cell in cells.items() if cell == (UNKNOWN,)]
    shown = "; ".join(f"{model}: {' / '.join(cell)}" for model, cell in cells.items() if cell and model not in unknown)
    apart = any(trained_apart(a, b) for a, b in combinations_with_replacement(cells.values(), 2))
    parts = [f"trained with different recipes ({shown})"] if apart else []
    return parts + ([f"recipe unknown (the weights record none): {', '.join(unknown)}"] if unknown else [])


def transfer_parts(rows: pd.DataFrame) -> list[str]:
    """Which model the transfer attacks of the rows crafted their images on."""
    pairs = dict.fromkeys(zip(rows["attack"], column(rows, "source_model")))
    return [f"{attack}: images crafted on {source}" for attack, source in pairs if source]


def cascade_parts(rows: pd.DataFrame, top5: bool) -> list[str]:
    """What the attack columns of a --cascade run mean."""
    if not column(rows, "cascade", False).astype(bool).any():
        return []
    attacks = [a for a in dict.fromkeys(rows["attack"]) if a not in NOT_ATTACKS]
    parts = [
        f"cascade (as AutoAttack): each attack ran only on the examples every earlier one ({' > '.join(attacks)}) "
        "failed to fool, so each column is the robust accuracy after it and those before"
    ]
    if top5:
        parts.append("top-5 is measured at the point that fooled top-1 (an upper bound on the worst-case top-5)")
    return parts


def precision_parts(rows: pd.DataFrame) -> list[str]:
    """How the attacks crafted, when not in strict fp32 (what is counted is strict fp32, except in
    runs stored before --precision, whose value says so)."""
    return [
        f"attacks crafted in {p}" + ("" if "(" in p else ", every prediction counted in strict fp32")
        for p in dict.fromkeys(column(rows, "precision", FP32))
        if p != FP32
    ]


def incomplete_parts(rows: pd.DataFrame) -> list[str]:
    """What the rows lack: runs that did not finish, rows short of batches, planned units with no row."""
    parts = []
    status = column(rows, "run_status", "finished")
    for run_id, state in dict.fromkeys(zip(column(rows, "run_id"), status)):
        if state != "finished":
            how = {"interrupted": "was interrupted", "running": "is still running"}.get(state, state)
            parts.append(f"INCOMPLETE: run {run_id} {how}, so these numbers cover only what it finished")
    partial = rows[column(rows, "status", "complete") != "complete"]
    short = ", ".join(f"{r.model} {r.attack} ({r.batches} batches)" for r in partial.itertuples())
    missing = "; ".join(
        f"{model}: {', '.join(units)}" for model, units in zip(rows["model"], names_column(rows, "not_run")) if units
    )
    parts += [f"partial rows: {short}"] if short else []
    return parts + ([f"not run: {missing}"] if missing else [])


def any_coverage_parts(rows: pd.DataFrame) -> list[str]:
    """When a model's worst case does not cover every attack of the block, which attacks each covers."""
    worst = rows[rows["attack"] == ANY]
    attacks = [a for a in dict.fromkeys(rows[~is_condition(rows)]["attack"]) if a not in NOT_ATTACKS]
    over = dict(zip(worst["model"], names_column(worst, "any_over")))
    if not over or all(set(v) == set(attacks) for v in over.values()):
        return []
    covers = "; ".join(f"{m}: {', '.join(v) or 'nothing'}" for m, v in over.items())
    return [f"Any (worst case) covers, per model: {covers}"]


def is_incomplete(summary: pd.DataFrame) -> bool:
    return bool(incomplete_parts(summary))

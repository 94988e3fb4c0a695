"""``robeval table RUN -f robustbench``: RobustBench's model-info JSON for a leaderboard submission.

One entry per model (and per eps when a run has several): a JSON object for one entry, a list of them
for several.  robeval fills dataset, eps, clean_acc, number_forward_passes (1: one pass per
prediction), a footnote naming the run, and autoattack_acc, but only from AutoAttack's standard
attacks with their standard settings under the standard protocol: any other run is refused in one
line that says what it lacks.  A corruption run gives corruptions_acc and corruptions_mce (``_3d`` for
ImageNet-3DCC) instead.  What a run cannot know (link, name, authors, venue, ...) is left as empty
strings for the author to fill (the command says so on stderr)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..attacks import resolve_settings
from ..defaults import ANY, CLEAN
from ..errors import UserError
from ..robustbench_ext.leaderboard import AUTHOR_FIELDS, CORRUPTION_FIELDS, MODEL_INFO_FIELDS, percent
from ..robustbench_ext.versions import STANDARD
from ..shifts.catalog import CORRUPTION_SETS, parse_condition
from .shift_table import attack_rows, is_condition, model_metrics

NOTE = f"RobustBench model info: fill {', '.join(AUTHOR_FIELDS)} (left empty: a run cannot know them) before submitting"
THREE_D = CORRUPTION_SETS.get("imagenet-3dcc").names  # corruptions whose entries take the _3d fields


def standard_problem(rows: pd.DataFrame) -> str | None:
    """Why one model's rows at one eps are no AutoAttack standard evaluation, or None when they are."""
    model, eps = rows["model"].iloc[0], rows["eps"].iloc[0]
    if rows["protocol"].iloc[0] != STANDARD.protocol:
        return f"{model} ran under protocol {rows['protocol'].iloc[0]}, not {STANDARD.protocol}"
    worst = rows[rows["attack"] == ANY]
    over = [a for a in str(worst["any_over"].iloc[0]).split(",") if a] if len(worst) else []
    missing = [a for a in STANDARD.attacks if a not in over]
    extra = [a for a in over if a not in STANDARD.attacks]
    if missing or extra:
        what = f"lacks {', '.join(missing)}" if missing else f"also ran {', '.join(extra)}"
        return (
            f"{model} at eps {eps} {what}: autoattack_acc is the worst case over {', '.join(STANDARD.attacks)} "
            f"alone (robeval run --attacks {','.join(STANDARD.attacks)} --cascade)"
        )
    for row in rows[rows["attack"].isin(STANDARD.attacks)].itertuples():
        ran, standard = json.loads(row.settings), resolve_settings(row.attack)
        changed = sorted(k for k in standard if ran.get(k, standard[k]) != standard[k])
        if changed:
            k = changed[0]
            return f"{model}: {row.attack} ran with {k}={ran[k]}, AutoAttack's standard is {k}={standard[k]}"
    return None


def _common(rows: pd.DataFrame) -> dict[str, Any]:
    """The fields every entry fills, in RobustBench's order, the author's left empty."""
    first = rows.iloc[0]
    data = str(first["data"])
    clean = rows[rows["attack"] == CLEAN]
    entry: dict[str, Any] = dict.fromkeys(MODEL_INFO_FIELDS, "")
    entry.update(
        number_forward_passes=1,
        dataset=data if "/" not in data and "\\" not in data else "imagenet",  # robeval's folders are ImageNet's
        clean_acc=percent(float(clean["top1"].iloc[0])) if len(clean) else "",
        footnote=f"robeval run {first['run_id']}: {int(first['n'])} examples, seed {first['seed']}; {first['versions']}",
    )
    return entry


def attack_entry(rows: pd.DataFrame) -> dict[str, Any]:
    """A Linf / L2 entry from one model's rows at one eps."""
    problem = standard_problem(rows)
    if problem is not None:
        raise UserError(f"no RobustBench entry: {problem}")
    entry = _common(rows)
    entry.update(
        eps=str(rows["eps"].iloc[0]), autoattack_acc=percent(float(rows[rows["attack"] == ANY]["top1"].iloc[0]))
    )
    return entry


def corruption_entry(rows: pd.DataFrame) -> dict[str, Any]:
    """A corruption entry from one model's rows: mean accuracy over the conditions run, and mCE."""
    metrics = model_metrics(rows)
    assert metrics is not None  # called for rows with conditions only
    parsed = [parse_condition(a) for a in rows["attack"]]
    suffix = "_3d" if all(p is None or p[0] in THREE_D for p in parsed) else ""
    acc_field, mce_field = CORRUPTION_FIELDS[suffix]
    entry = {k: v for k, v in _common(rows).items() if k not in ("autoattack_acc", "external")}
    entry.update(eps=None)  # RobustBench's corruption entries have no eps
    entry[acc_field] = percent(100.0 - metrics.mean_error)
    entry[mce_field] = "" if metrics.mce is None else percent(metrics.mce)
    if metrics.note:
        entry["footnote"] += f"; {metrics.note}"
    return entry


def model_info_entries(summary: pd.DataFrame) -> list[dict[str, Any]]:
    """Every entry of a summary: per model its corruption entry (a shift run) or one per eps."""
    entries = []
    for model in dict.fromkeys(summary["model"]):
        rows = summary[summary["model"] == model]
        if is_condition(rows).any():
            entries.append(corruption_entry(rows))
            continue
        plain = attack_rows(rows)
        entries += [attack_entry(plain[plain["eps"] == eps]) for eps in dict.fromkeys(plain["eps"])]
    return entries


def to_model_info(summary: pd.DataFrame) -> str:
    """The entries as JSON: one object, or a list of them."""
    entries = model_info_entries(summary)
    return json.dumps(entries[0] if len(entries) == 1 else entries, indent=2) + "\n"


def updated_model_info(path: Path, summary: pd.DataFrame) -> str:
    """RobustBench's ``to_disk``: the model's entry as ``path`` should hold it; where the file exists
    already, only the fields robeval fills are replaced (what the author filled stays)."""
    entry = model_info_entries(summary)[0]
    if path.is_file():
        try:
            existing = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise UserError(f"{path} exists and is not JSON: move it away or remove it") from None
        entry = {**existing, **{k: v for k, v in entry.items() if v not in ("", None)}}
    return json.dumps(entry, indent=2) + "\n"

"""``robeval table RUN -f robustbench``: RobustBench's model-info JSON for a leaderboard submission, its
values typed as RobustBench's own files type them (robustbench_ext.leaderboard).  Which fields are filled,
which runs are refused and which entries are marked unreliable: docs/robustbench.md, "Leaderboard entries
and published numbers"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..attacks import resolve_settings
from ..core.defaults import ANY, CLEAN, RANDOM_WEIGHTS, names_in
from ..core.errors import UserError
from ..core.json_input import load_json
from ..evaluation.protocols import PROTOCOLS, autoattack_version
from ..results.indicators import above_chance
from ..robustbench_ext.dataset_facts import examples_caveat, robustbench_dataset
from ..robustbench_ext.leaderboard import AUTHOR_FIELDS, CORRUPTION_FIELDS, MODEL_INFO_FIELDS, empty_entry, percent
from ..shifts.catalog import CORRUPTION_SETS
from .naming import column, is_condition, run_label
from .shift_table import attack_rows, model_metrics

NOTE = f"RobustBench model info: fill {', '.join(AUTHOR_FIELDS)} (left empty: a run cannot know them) before submitting"
THREE_D = CORRUPTION_SETS["imagenet-3dcc"].names  # corruptions whose entries take the _3d fields


def is_3dcc(corruptions: pd.Series) -> bool:
    """Whether every corruption of ``corruptions`` (``""``: no condition) is an ImageNet-3DCC one
    (its entry: the _3d fields)."""
    return all(c in THREE_D for c in corruptions if c)


def standard_problem(rows: pd.DataFrame) -> str | None:
    """Why one model's rows at one eps are no AutoAttack standard evaluation, or None when they are."""
    model, eps, protocol = rows[["model", "eps", "protocol"]].iloc[0]
    version = autoattack_version("standard")
    attacks = version.autoattack_version_attacks()
    if protocol in PROTOCOLS and PROTOCOLS[protocol].audit_stages:
        return (
            f"{model} ran under protocol {protocol}: a screening number (AutoAttack's attacks, audited on a sample), "
            f"not AutoAttack's run; a leaderboard entry needs robeval run --attacks {','.join(attacks)} --cascade"
        )
    if protocol != version.name:
        return f"{model} ran under protocol {protocol}, not {version.name}"
    worst = rows[rows["attack"] == ANY]
    over = list(names_in(worst["any_over"].iloc[0])) if len(worst) else []
    missing = [a for a in attacks if a not in over]
    extra = [a for a in over if a not in attacks]
    if missing or extra:
        what = f"lacks {', '.join(missing)}" if missing else f"also ran {', '.join(extra)}"
        return (
            f"{model} at eps {eps} {what}: autoattack_acc is the worst case over {', '.join(attacks)} "
            f"alone (robeval run --attacks {','.join(attacks)} --cascade)"
        )
    for row in rows[rows["attack"].isin(attacks)].itertuples():
        ran = json.loads(row.settings) if isinstance(row.settings, str) else {}  # NaN: none stored
        standard = resolve_settings(row.attack)
        k = min((s for s in standard if ran.get(s, standard[s]) != standard[s]), default=None)  # the first changed
        if k is not None:
            return f"{model}: {row.attack} ran with {k}={ran[k]}, AutoAttack's standard is {k}={standard[k]}"
    return None


def caveats(rows: pd.DataFrame) -> list[str]:
    """Why one model's entry is no leaderboard number, of those docs/robustbench.md lists (empty: none known)."""
    first = rows.iloc[0]
    found = [f"the model has {RANDOM_WEIGHTS}"] if (column(rows, "checkpoint") == RANDOM_WEIGHTS).any() else []
    if "selection" in rows:
        caveat = examples_caveat(str(first["source"]), str(first["split"]), str(first["selection"]), int(first["n"]))
        found += [caveat] if caveat else []
    chance = above_chance(str(first["model"]), rows)
    return found + ([chance.evidence] if chance.raised else [])


def _common(rows: pd.DataFrame) -> dict[str, Any]:
    """The fields every entry fills, in RobustBench's order, the author's left empty."""
    first = rows.iloc[0]
    clean = rows[rows["attack"] == CLEAN]
    warned = caveats(rows)
    run = f"{run_label(first['run_id'])}: {int(first['n'])} examples, seed {first['seed']}; {first['versions']}"
    return {
        **empty_entry(),
        "number_forward_passes": 1,
        "dataset": robustbench_dataset(str(first["source"])),
        "clean_acc": percent(float(clean["top1"].iloc[0])) if len(clean) else "",
        "footnote": f"Not a leaderboard number: {'; '.join(warned)}. {run}" if warned else run,
        "unreliable": bool(warned),
    }


def attack_entry(rows: pd.DataFrame) -> dict[str, Any]:
    """A Linf / L2 entry from one model's rows at one eps."""
    if (problem := standard_problem(rows)) is not None:
        raise UserError(f"no RobustBench entry: {problem}")
    worst = float(rows[rows["attack"] == ANY]["top1"].iloc[0])
    return {**_common(rows), "eps": str(rows["eps"].iloc[0]), "autoattack_acc": percent(worst)}


def corruption_entry(rows: pd.DataFrame) -> dict[str, Any]:
    """A corruption entry from one model's rows: mean accuracy over the conditions run, and mCE."""
    metrics = model_metrics(rows)
    assert metrics is not None  # called for rows with conditions only
    acc_field, mce_field = CORRUPTION_FIELDS["_3d" if is_3dcc(rows["corruption"]) else ""]
    common = _common(rows)
    entry = {k: common[k] for k in MODEL_INFO_FIELDS[: MODEL_INFO_FIELDS.index("reported") + 1]}
    entry.update(eps=None)  # RobustBench's corruption entries have no eps
    entry[acc_field] = percent(100.0 - metrics.mean_error)
    entry[mce_field] = "" if metrics.mce is None else percent(metrics.mce)
    entry["footnote"] = common["footnote"] + (f"; {metrics.note}" if metrics.note else "")
    if common["unreliable"]:  # RobustBench's corruption entries carry the field only to mark one
        entry["unreliable"] = True
    return entry


def model_info_entries(summary: pd.DataFrame) -> list[dict[str, Any]]:
    """Every entry of a summary: per model its corruption entry (a shift run) or one per eps."""
    entries = []
    for _, rows in summary.groupby("model", sort=False):
        if is_condition(rows).any():
            entries.append(corruption_entry(rows))
        else:  # one entry per eps
            entries += [attack_entry(plain) for _, plain in attack_rows(rows).groupby("eps", sort=False)]
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
        existing = load_json(path.read_bytes(), f"{path} (an existing model-info file)")
        if not isinstance(existing, dict):
            raise UserError(f"{path} exists and is no model-info entry (a JSON object): move it away or remove it")
        known = {k: v for k, v in entry.items() if v not in ("", None) and not (k == "unreliable" and v is False)}
        entry = {**existing, **known}  # an author's "unreliable": true stays unless robeval knows better
    return json.dumps(entry, indent=2) + "\n"

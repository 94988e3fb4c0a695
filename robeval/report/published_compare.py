"""A stored model against published numbers: ``robeval compare RUN:model path/to/Entry.json`` reads a
RobustBench model-info file as one side and compares its clean, AutoAttack and corruption accuracies
with the run's on the run's examples.

A file holds aggregate accuracies only, no per-example outcomes, so no paired test is possible: each
row gives the run's accuracy with a seeded 95% bootstrap interval over its examples, the published
value, the difference B - A, and whether the published value lies inside the run's interval.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.defaults import ANY, CLEAN
from ..core.eps import find_budget
from ..core.errors import UserError
from ..evaluation.protocols import AUTOATTACK_VERSIONS
from ..results.runs import StoredRun
from ..results.statistics import bootstrap_mean_ci
from ..results.summary import any_attack_records
from ..robustbench_ext.dataset_facts import ADVERSARIAL, CORRUPTIONS, robustbench_dataset
from ..robustbench_ext.leaderboard import info_benchmark, is_model_info_path, published_accuracy, read_model_info
from ..shifts.kinds import run_conditions
from ..store import Store
from .paired import find_model, finished_attacks
from .robustbench import is_3dcc, standard_problem

EPS_TOLERANCE = 5e-5  # a file's eps written as a rounded decimal (0.03137) is still 8/255


def _eps(info: dict, run: StoredRun, model: str, path: str) -> str:
    """The run's eps that the file's eps names (the run's first when the file has none)."""
    have = run.records.loc[run.records["model"] == model, "eps"].drop_duplicates()
    wanted = info.get("eps")
    if wanted in (None, ""):
        return str(have.iloc[0])
    found = find_budget(have, str(wanted), run.config["norm"], EPS_TOLERANCE)
    if found is None:
        raise UserError(f"{path} is for eps {wanted}; run {run.run_id} evaluated {model} at {', '.join(have)}")
    return found


def check_benchmark(info: dict, path: str, run: StoredRun) -> None:
    """One line when the file is for another data set or threat model than the run evaluated."""
    dataset, threat = info_benchmark(path, info)
    ran = robustbench_dataset(run.config["data"])
    if dataset is not None and dataset != ran:
        raise UserError(f"{path} is for data set {dataset}; run {run.run_id} evaluated {ran} ({run.data})")
    norm, shift = run.config.get("norm"), run.config.get("shift")
    if threat in ADVERSARIAL and threat != norm:
        raise UserError(f"{path} is for threat model {threat}; run {run.run_id} attacked in {norm}")
    if threat in CORRUPTIONS and not shift:
        raise UserError(f"{path} is a {threat} entry; run {run.run_id} ran no shift (robeval run --shift ...)")


def run_scores(run: StoredRun, model: str, eps: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """Per metric the run's per-example scores (1 = correct; corruptions: the mean over the conditions),
    and notes on what could not be compared."""
    records = run.records[(run.records["model"] == model) & (run.records["eps"] == eps)]
    scores = {"clean": per_example(records[records["attack"] == CLEAN])}
    members = records["member"].nunique()
    notes = [
        f"{model} has {members} members: an example's score is the mean over them, and the interval covers the "
        "sampling of examples, not the seed-to-seed variation"
    ] if members > 1 else []  # fmt: skip
    standard = list(AUTOATTACK_VERSIONS.require("standard").autoattack_version_attacks())
    finished = finished_attacks(run, model)
    missing = [a for a in standard if a not in finished]
    if missing:
        notes.append(f"no autoattack row: the run did not finish {', '.join(missing)} for {model}")
    else:
        scores["autoattack"] = per_example(any_attack_records(records, standard))
        rows = run.summary[(run.summary["model"] == model) & (run.summary["eps"] == eps)]
        problem = standard_problem(rows) if ANY in set(rows["attack"]) else None
        notes += [f"autoattack is not AutoAttack's standard evaluation here: {problem}"] if problem else []
    corruption_of = {c.name: c.corruption for c in run_conditions(run.config)}
    shifted = records[records["attack"].isin(list(corruption_of))]
    if len(shifted):
        scores["corruptions_3d" if is_3dcc(shifted["attack"].map(corruption_of)) else "corruptions"] = per_example(
            shifted
        )
    return {k: v for k, v in scores.items() if len(v)}, notes


def per_example(records: pd.DataFrame) -> np.ndarray:
    """Each example's robust top-1, the mean over a model's members where it has several."""
    return records.groupby("example", sort=False)["adv_top1"].mean().to_numpy(float)


def published_row(metric: str, scores: np.ndarray, published: float, run_is_a: bool, seed: int) -> dict:
    low, high = bootstrap_mean_ci(scores, seed)
    accuracy = 100.0 * float(scores.mean())
    diff = published - accuracy if run_is_a else accuracy - published
    values = {"run": accuracy, "ci_low": low, "ci_high": high, "published": published, "diff": diff}
    rounded = {k: round(v, 2) for k, v in values.items()}
    return {"metric": metric, "n": len(scores), **rounded, "inside_ci": bool(low <= published <= high)}


def compare_published(store: Store, ref_a: str, ref_b: str, seed: int = 0) -> pd.DataFrame:
    """One stored model (``RUN_ID:model`` or ``model``) against one model-info file, in either order."""
    run_is_a = is_model_info_path(ref_b)
    if run_is_a == is_model_info_path(ref_a):
        raise UserError("compare takes one stored model and one RobustBench model-info file (or two stored models)")
    ref, path = (ref_a, ref_b) if run_is_a else (ref_b, ref_a)
    info = read_model_info(path)
    run, model = find_model(store, ref)
    check_benchmark(info, path, run)
    eps = _eps(info, run, model, path)
    scores, notes = run_scores(run, model, eps)
    rows = [
        published_row(metric, values, published, run_is_a, seed)
        for metric, values in scores.items()
        if (published := published_accuracy(info, metric)) is not None
    ]
    labels = [f"{run.run_id}:{model}", Path(path).name]
    a, b = labels if run_is_a else labels[::-1]
    out = pd.DataFrame(rows)
    out.attrs.update(a=a, b=b, eps=eps, notes=notes, test="published")
    return out

"""Reading stored runs back as summaries: the input of every table, comparison and plot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import pandas as pd

from ..core.errors import UserError
from ..core.records import key_model
from ..evaluation.protocols import RESTART_PROTOCOLS, restarted_attacks
from ..models.recipes import member_recipes
from ..options import option_default
from ..shifts.kinds import CLEAN_DATA_SHIFTS
from ..store import (
    Store,
    StoredRun,  # (also imported from here by the readers of runs)
)
from .convergence import curves
from .likeness import Side, recipe_cells, refuse_unlike, settings_note
from .summary import run_summary


def load_run(store: Store, run_id: str, empty_ok: bool = False) -> StoredRun:
    """Run ``run_id`` of ``store`` with its records and summary (one line for a run with no records yet,
    unless ``empty_ok``: a run that just finished without any)."""
    row = store.run(run_id)
    config, info = row["config"], row["info"]
    records = store.records(run_id)
    if records.empty and not empty_ok:
        raise UserError(f"run {run_id} has no stored records yet")
    described = {**info, "run_id": run_id, "status": row["status"]}
    summary = run_summary(
        records, described, config, Counter(unit[:3] for unit in store.done_units(run_id)), store.curves(run_id)
    )
    return StoredRun(run_id, info, config, records, summary, row["status"])


def resolve_runs(store: Store, run_ids: list[str] | None) -> list[StoredRun]:
    """The named runs; when none is named, the newest finished run with the runs that complete its
    evidence (``check --run-missing``), so a bare ``robeval table`` after that command shows both."""
    if not run_ids:
        parent = {run_id: config.get("evidence_for") for run_id, config in store.finished_runs()}
        if not parent:
            raise UserError(f"no finished run in {store.path}; run `robeval run` first or name a run id")
        newest = list(parent)[-1]
        newest = parent[newest] or newest  # a run made for another's checklist stands for that run
        run_ids = [newest, *[r for r, p in parent.items() if p == newest]]
    twice = next((r for r in run_ids if run_ids.count(r) > 1), None)
    if twice is not None:  # its models would be shown beside themselves as if they were others
        raise UserError(f"run {twice} is named twice; name each run once")
    return [load_run(store, r) for r in run_ids]


# The threat model and everything else that makes two runs of one pair different evaluations: runs of a pair
# that differ in any of these are no one run, and the run taken is said by every one of them
PAIR_ASPECTS = ("protocol", "eps", "norm", "precision", "cascade", "data", "split", "attacks")


def run_of_pair(store: Store, a: str, b: str) -> tuple[str, str]:
    """The run ``robeval compare A B`` takes when neither side names one, and why, in words (each of
    :data:`PAIR_ASPECTS` of that run): the newest finished run that evaluated both models; one line listing
    the runs when several that evaluated both differ in any aspect (which was meant is the user's to say)."""
    both = [
        (r, c) for r, c in store.finished_runs() if {a, b} <= set(c.get("models", [])) and not c.get("evidence_for")
    ]
    if not both:
        raise UserError(f"no finished run in {store.path} evaluated both {a} and {b}; name each side's run (RUN:MODEL)")
    # each aspect of each run as text (a run stored before an option existed has its default)
    described = {r: {key: _aspect_text(key, c.get(key, option_default(key))) for key in PAIR_ASPECTS} for r, c in both}
    differing = [key for key in PAIR_ASPECTS if len({aspects[key] for aspects in described.values()}) > 1]

    def said(run_id: str, keys: Iterable[str]) -> str:
        return ", ".join(f"{key} {described[run_id][key]}" for key in keys)

    run_id = both[-1][0]  # the newest
    if differing:
        listed = "; ".join(f"{r} ({said(r, differing)})" for r in reversed(described))
        raise UserError(
            f"{a} and {b} are in {len(both)} finished runs that differ in {', '.join(differing)}: "
            f"{listed}; name the one meant: robeval compare {run_id}:{a} {run_id}:{b}"
        )
    also = f"; {len(both) - 1} older run(s) of the same evaluation evaluated them too" if len(both) > 1 else ""
    return (
        run_id,
        f"Compared in run {run_id} ({said(run_id, PAIR_ASPECTS)}), the newest finished run that evaluated both{also}",
    )


def _aspect_text(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if key == "split" and value is None:
        return "-"
    items = value if isinstance(value, list) else [value]
    return ",".join(str(v.get("text", v.get("value"))) if isinstance(v, dict) else str(v) for v in items) or "none"


# What a table never mixes (robeval.results.likeness): every aspect but eps (runs at other eps combine);
# data and examples only between runs of one shift; attack settings except with a run made as evidence
# for the other (``check --run-missing``'s PGD at large eps runs PGD's defaults): the caption names those.
TABLE_REFUSES = ("protocol", "threat model", "precision", "cascade")
SAME_SHIFT_REFUSES = ("data", "examples")
UNLESS_EVIDENCE_REFUSES = ("attack settings",)


def combine(runs: list[StoredRun]) -> pd.DataFrame:
    """One summary over several runs, refusing what :data:`TABLE_REFUSES` and its siblings name (one line
    naming each difference); the ``unlike`` column names what a run made as evidence for another ran
    with other settings, and the captions print it.

    Runs that differ in eps combine (16/255 added later to an 8/255 run): a model evaluated in both
    at different eps is one model of the table.  Runs of different shifts (ImageNet-C, -A, -R, clean)
    are different data by design: they combine into one shift table, each run giving its own columns."""
    first = runs[0]
    for other in runs[1:]:
        aspects = TABLE_REFUSES + (SAME_SHIFT_REFUSES if _shift(first) == _shift(other) else ())
        evidence = other.run_id == first.config.get("evidence_for") or first.run_id == other.config.get("evidence_for")
        aspects += () if evidence else UNLESS_EVIDENCE_REFUSES
        refuse_unlike(Side(first), Side(other), "a table never mixes them, it compares like with like", aspects)
    frame = _with_recipes(runs, _named_models(runs, lambda run: run.summary))
    if len(runs) > 1:
        frame = frame.assign(unlike=settings_note(runs)).sort_values("eps_value", kind="stable", ignore_index=True)
    return frame


def _with_recipes(runs: list[StoredRun], frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the ``recipe`` column (robeval.results.likeness.recipe_cells, from each member's recipe in
    its own run's run.json), keyed by the model as the table names it."""

    def recipes(run: StoredRun) -> pd.DataFrame:
        facts, models = run.info.get("models", {}), list(dict.fromkeys(run.summary["model"]))
        return pd.DataFrame(
            {"model": models, "recipes": [member_recipes(facts.get(key_model(m)[0], {})) for m in models]}
        )

    found = _named_models(runs, recipes).drop_duplicates("model")
    cells = recipe_cells(dict(zip(found["model"], found["recipes"])))
    return frame.assign(recipe=frame["model"].map(cells)) if cells else frame


def _named_models(runs: list[StoredRun], frame_of: Callable[[StoredRun], pd.DataFrame]) -> pd.DataFrame:
    """``frame_of`` each run in one frame, each model named as a combined table names it (:func:`model_labels`)."""
    named = [frame_of(run).replace({"model": labels}) for run, labels in zip(runs, model_labels(runs))]
    return pd.concat(named, ignore_index=True)


def model_labels(runs: list[StoredRun]) -> list[dict[str, str]]:
    """Per run, each of its models' label in a combined table: the same model (name, weights, shift) at
    other eps keeps its name; one evaluated twice at an eps, or with other weights, is told apart by its
    run id (a corruption run's clean and attack rows are of the clean data, as a run without a shift's
    are).  A report keys its pairs by (run, label) and colours each label alike in every figure."""
    seen: dict[tuple[str, str], tuple[str, set[str]]] = {}  # (model, data) -> (weights, eps seen)
    named = []
    for run in runs:
        labels = {}
        for model, rows in run.summary.groupby("model", sort=False):
            weights, eps = str(rows["checkpoint_sha256"].iloc[0]) + str(rows["checkpoint"].iloc[0]), set(rows["eps"])
            data = "" if _shift(run) in CLEAN_DATA_SHIFTS else _shift(run)
            known = seen.get((model, data))
            clash = known is not None and (known[0] != weights or known[1] & eps)
            labels[str(model)] = f"{model} ({run.run_id})" if clash else str(model)
            if not clash:
                seen[(model, data)] = (weights, (known[1] if known else set()) | eps)
        named.append(labels)
    return named


def table_records(runs: list[StoredRun]) -> pd.DataFrame:
    """The runs' per-example records, each with its run's id and its model named as :func:`combine` names
    it: what a table's bold is decided on (a model evaluated in two runs is two models, never one pool)."""
    return _named_models(runs, lambda run: run.records.assign(run_id=run.run_id))


def minimal_norms(runs: list[StoredRun]) -> pd.DataFrame:
    """Per model, minimum-norm attack and example: the smallest fooling perturbation found (from the
    run's first eps: the search does not depend on eps), with the models named as :func:`combine` names them."""
    return _named_models(
        runs, lambda run: minimum_norm_records(run.records)[["model", "attack", "example", "min_norm"]]
    )


def minimum_norm_records(records: pd.DataFrame) -> pd.DataFrame:
    """The records of minimum-norm searches at the first eps (one search serves every eps)."""
    found = records[records["min_norm"].notna()]
    return found[found["eps"] == found["eps"].iloc[0]] if len(found) else found


def convergence_curves(store: Store, runs: list[StoredRun]) -> pd.DataFrame:
    """The runs' convergence curves (results.convergence.curves), models named as :func:`combine` names them."""
    return _named_models(runs, lambda run: curves(store, run.run_id))


def _shift(run: StoredRun) -> str:
    return run.config.get("shift") or ""


SAME_EXAMPLES = ("data", "n_examples", "subset", "seed", "norm", "class_map", "shift")


def restart_companion(store: Store, run: StoredRun) -> pd.DataFrame:
    """The summary of the newest finished run of the other restart protocol (standard vs aa-plus) on
    the same data, examples and norm, sharing a restarted attack and a model (empty when there is
    none): what "restarts change the result" compares."""
    for run_id, config in reversed(store.finished_runs()):
        if (
            {config["protocol"], run.protocol} == set(RESTART_PROTOCOLS)  # one of each
            and all(config.get(k) == run.config.get(k) for k in SAME_EXAMPLES)
            and set(config["attacks"]) & set(run.config["attacks"]) & set(restarted_attacks())
            and set(config["models"]) & set(run.config["models"])
        ):
            return load_run(store, run_id).summary
    return pd.DataFrame()

"""Reading stored runs back as summaries: the input of every table, comparison and plot."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..defaults import CLEAN
from ..errors import UserError
from ..settings import WORK_SPLIT
from .convergence import curves
from .store import Store
from .summary import crafting_precision, run_summary


@dataclass
class StoredRun:
    run_id: str
    info: dict[str, Any]
    config: dict[str, Any]
    records: pd.DataFrame
    summary: pd.DataFrame
    status: str = "finished"  # running | finished | interrupted | failed (the store's)

    @property
    def protocol(self) -> str:
        return self.config["protocol"]

    @property
    def data(self) -> str:
        return self.info.get("data", {}).get("data", self.config.get("data", ""))


def load_run(store: Store, run_id: str) -> StoredRun:
    row = store.run(run_id)
    config, info = row["config"], row["info"]
    records = store.records(run_id)
    if records.empty:
        raise UserError(f"run {run_id} has no stored records yet")
    summary = run_summary(
        records,
        {**info, "run_id": run_id, "status": row["status"]},
        config,
        store.unit_counts(run_id),
        store.curves(run_id),
    )
    return StoredRun(run_id, info, config, records, summary, row["status"])


def resolve_runs(store: Store, run_ids: list[str] | None) -> list[StoredRun]:
    """The named runs; when none is named, the newest finished run with the runs that complete its
    evidence (``check --run-missing``), so a bare ``robeval table`` after that command shows both."""
    if not run_ids:
        finished = store.runs()
        finished = finished[finished["status"] == "finished"]
        if finished.empty:
            raise UserError(f"no finished run in {store.path}; run `robeval run` first or name a run id")
        parent = {row.id: json.loads(row.config).get("evidence_for") for row in finished.itertuples()}
        newest = list(parent)[-1]
        newest = parent[newest] or newest  # a run made for another's checklist stands for that run
        run_ids = [newest, *[r for r, p in parent.items() if p == newest]]
    return [load_run(store, r) for r in run_ids]


def _example_set(run: StoredRun) -> frozenset:
    """The examples a run evaluated (its clean rows, or every record where the data has no clean images)."""
    rec = run.records
    clean = rec[rec["attack"] == CLEAN]
    return frozenset((clean if len(clean) else rec)["example"])


# The attacks whose settings two runs must share to meet in one table or comparison.  SPSA first
# (issue 31: its ``samples`` changed meaning, and a run stored before reads as 64 pairs): the check
# is generic, so covering every attack is this tuple's change.
SETTINGS_MUST_AGREE = ("spsa",)


def settings_of(run: StoredRun) -> dict[str, dict[str, Any]]:
    """The attack settings ``run`` ran with (as the store reads them: in today's meaning)."""
    return run.info.get("attack_settings") or run.config.get("attack_settings") or {}


def settings_difference(a: StoredRun, b: StoredRun, attacks: tuple[str, ...] = SETTINGS_MUST_AGREE) -> str | None:
    """How two runs' settings of an attack both ran differ (``spsa samples 64 vs 128``), or None;
    settings that only split the work (:data:`robeval.settings.WORK_SPLIT`) do not count."""
    ours, theirs = settings_of(a), settings_of(b)
    for attack in (x for x in attacks if x in ours and x in theirs):
        keys = sorted(k for k in set(ours[attack]) | set(theirs[attack]) if k not in WORK_SPLIT)
        differ = [
            f"{k} {ours[attack].get(k)} vs {theirs[attack].get(k)}"
            for k in keys
            if ours[attack].get(k) != theirs[attack].get(k)
        ]
        if differ:
            return f"{attack} settings ({', '.join(differ)})"
    return None


def combine(runs: list[StoredRun]) -> pd.DataFrame:
    """One summary over several runs; refuses to mix protocols, norms, example sets or the settings
    of an attack both ran (:func:`settings_difference`).

    Runs that differ in eps combine (16/255 added later to an 8/255 run): a model evaluated in both
    at different eps is one model of the table.  Runs of different shifts (ImageNet-C, -A, -R, clean)
    are different data by design: they combine into one shift table, each run giving its own columns,
    so only protocol and norm must agree."""
    first = runs[0]
    for other in runs[1:]:
        checks = [
            ("protocol", first.protocol, other.protocol),
            ("norm", first.config["norm"], other.config["norm"]),
            ("precision", crafting_precision(first.config), crafting_precision(other.config)),
            ("cascade", bool(first.config.get("cascade")), bool(other.config.get("cascade"))),
        ]
        same_shift = _shift(first) == _shift(other)
        if same_shift:
            checks.append(("data", first.data, other.data))
        for what, a, b in checks:
            if a != b:
                raise UserError(
                    f"runs {first.run_id} and {other.run_id} differ in {what} ({a} vs {b}); a table never mixes them"
                )
        settings = settings_difference(first, other)
        if settings is not None:
            raise UserError(f"runs {first.run_id} and {other.run_id} differ in {settings}; a table never mixes them")
        if same_shift and _example_set(first) != _example_set(other):
            raise UserError(
                f"runs {first.run_id} and {other.run_id} evaluated different example sets; "
                "a table compares models on the same images only"
            )
    frame = pd.concat(
        [_labelled(run.summary, labels) for run, labels in zip(runs, _model_labels(runs))], ignore_index=True
    )
    return frame.sort_values("eps_value", kind="stable", ignore_index=True) if len(runs) > 1 else frame


def _model_labels(runs: list[StoredRun]) -> list[dict[str, str]]:
    """Per run, each model's name in a combined table: the same model (name, weights, shift) at other
    eps keeps its name; one evaluated twice at an eps, or with other weights, is told apart by its run id."""
    seen: dict[tuple[str, str], tuple[str, set[str]]] = {}  # (model, shift) -> (weights, eps seen)
    out = []
    for run in runs:
        labels = {}
        for model, rows in run.summary.groupby("model", sort=False):
            weights, eps = str(rows["checkpoint_sha256"].iloc[0]) + str(rows["checkpoint"].iloc[0]), set(rows["eps"])
            known = seen.get((model, _shift(run)))
            clash = known is not None and (known[0] != weights or known[1] & eps)
            labels[model] = f"{model} ({run.run_id})" if clash else model
            if not clash:
                seen[(model, _shift(run))] = (weights, (known[1] if known else set()) | eps)
        out.append(labels)
    return out


def _labelled(frame: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    return frame.assign(model=frame["model"].map(lambda m: labels.get(m, m)))


def minimal_norms(runs: list[StoredRun]) -> pd.DataFrame:
    """Per model, minimum-norm attack and example: the smallest fooling perturbation found (from the
    run's first eps: the search does not depend on eps), with the models named as :func:`combine` names them."""
    parts = []
    for run, labels in zip(runs, _model_labels(runs)):
        rec = run.records[run.records["min_norm"].notna()]
        rec = rec[rec["eps"] == rec["eps"].iloc[0]] if len(rec) else rec
        parts.append(_labelled(rec[["model", "attack", "example", "min_norm"]], labels))
    return pd.concat(parts, ignore_index=True)


def convergence_curves(store: Store, runs: list[StoredRun]) -> pd.DataFrame:
    """The runs' convergence curves (robeval.results.convergence.curves), models named as :func:`combine`
    names them."""
    parts = [_labelled(curves(store, run.run_id), labels) for run, labels in zip(runs, _model_labels(runs))]
    return pd.concat(parts, ignore_index=True)


def _shift(run: StoredRun) -> str:
    return run.config.get("shift") or ""


SAME_EXAMPLES = ("data", "n_examples", "subset", "seed", "norm", "class_map", "shift")


def restart_companion(store: Store, run: StoredRun) -> pd.DataFrame:
    """The summary of the newest finished run of the other restart protocol (standard vs aa-plus) on
    the same data, examples and norm, sharing a restarted attack and a model (empty when there is
    none): what "restarts change the result" compares."""
    from ..evaluation.protocols import RESTART_PROTOCOLS, restarted_attacks

    if run.protocol not in RESTART_PROTOCOLS:
        return pd.DataFrame()
    runs = store.runs()
    for row in runs[runs["status"] == "finished"].iloc[::-1].itertuples():
        config = json.loads(row.config)
        if config["protocol"] not in RESTART_PROTOCOLS or config["protocol"] == run.protocol:
            continue
        if (
            all(config.get(k) == run.config.get(k) for k in SAME_EXAMPLES)
            and set(config["attacks"]) & set(run.config["attacks"]) & set(restarted_attacks())
            and set(config["models"]) & set(run.config["models"])
        ):
            return load_run(store, row.id).summary
    return pd.DataFrame()

"""Per-example outcomes and the summaries computed from them (never from running counters).

A model of several members (checkpoints of one training procedure) has one row per eps and attack like
any other: each figure is first computed per member, from that member's records alone (its ``any`` the
worst case over its own attacks), then combined over the members (:data:`OVER_MEMBERS`); the columns such a
model adds (:func:`member_spread`) are docs/results.md's, "Several checkpoints per model".
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..attacks import list_attacks
from ..core.defaults import ANY, CLEAN, MEMBERS, RANDOM_WEIGHTS, STD, SUMMARY_COLUMNS, Names  # noqa: F401  (SUMMARY_COLUMNS: re-exported)
from ..core.records import RECORD_COLUMNS, audited_stage, key_model
from ..data.published import PUBLISHED
from ..evaluation.config import model_order
from ..evaluation.fast.summary import add_audit_columns, audited_protocol
from ..options import option_default
from ..robustbench_ext.dataset_facts import example_choice
from ..shifts.kinds import run_conditions
from .convergence import last_tenth
from .statistics import member_interval, member_matrix

Done = dict[tuple[str, str, str], int]  # (model, eps, attack) -> batches stored over every member
Covered = dict[tuple[str, str], list[str]]  # (model, eps) -> the attacks its worst case is over


@dataclass
class Coverage:
    """Which units of a run are stored: per (model, eps, attack) the batches done over every member, of
    ``batches`` per member in the run's plan (None for a store written before robeval recorded it: then
    the most any unit reached); ``members``: a model's checkpoints where it has several."""

    done: Done
    batches: int | None
    members: dict[str, int]

    def expected(self, model: str) -> int:
        return max(self.done.values(), default=0) if self.batches is None else self.batches * self.members.get(model, 1)

    def complete(self, model: str, eps: str, attack: str) -> bool:
        return self.done.get((model, eps, attack), 0) >= self.expected(model)


# How an example's worst case over the attacks takes each record column: what it is (first), hit only if
# every attack missed (min), the largest perturbation (max), the passes of all attacks (sum).
WORST_CASE = {
    **{column: (column, "first") for column in ("batch", "label", "clean_top1", "clean_top5")},
    **{column: (column, "min") for column in ("adv_top1", "adv_top5")},
    **{column: (column, "max") for column in ("linf", "l2")},
    **{column: (column, "sum") for column in ("forward_passes", "backward_passes")},
}


def any_attack_records(records: pd.DataFrame, attacks: list[str], covered: Covered | None = None) -> pd.DataFrame:
    """Per-example worst case over ``attacks`` (and the clean image): correct only if it survived all.

    With ``covered`` each (model, eps) takes only the attacks it finished (:func:`covered_attacks`): a worst
    case over an attack that stopped half-way would mix examples attacked and not."""
    covered = covered_attacks(records, attacks, None) if covered is None else covered
    finished = [(m, e, a) for (m, e), names in covered.items() for a in (CLEAN, *names)]
    sub = records[pd.MultiIndex.from_frame(records[["model", "eps", "attack"]]).isin(finished)]
    if sub.empty:  # no attack finished (or none was run)
        return records.iloc[0:0]
    keys = ["model", "member", "eps", "eps_value", "example"]  # each member's own worst case
    agg = sub.groupby(keys, sort=False).agg(**WORST_CASE).reset_index()
    # (a worst case is no minimum-norm search nor re-checked in fp32)
    return agg.assign(attack=ANY, adv_pred=-1, min_norm=float("nan"), fp32_top1=float("nan"))[RECORD_COLUMNS]


def covered_attacks(records: pd.DataFrame, attacks: list[str], coverage: Coverage | None) -> Covered:
    """The attacks each (model, eps)'s ``any`` row is the worst case over (finished ones, in ``attacks`` order)."""
    out: dict[tuple[str, str], set[str]] = {}
    for model, eps, attack in records[["model", "eps", "attack"]].drop_duplicates().itertuples(index=False):
        if attack in attacks and (coverage is None or coverage.complete(model, eps, attack)):
            out.setdefault((model, eps), set()).add(attack)
    return {key: [a for a in attacks if a in found] for key, found in out.items()}


def _row(model: str, eps: str, attack: str, g: dict, meta: dict, norm: str) -> dict:
    random = meta.get("weights") == "random"
    return {
        "model": model,
        "checkpoint": RANDOM_WEIGHTS if random else meta.get("checkpoint") or meta.get("weights", ""),
        "attack": attack,
        "eps": eps,
        "norm": norm,
        "n": int(g["n"]),
        **{metric: round(100.0 * float(g[metric]), 2) for metric in ("top1", "top5")},
        "eps_value": float(g["eps_value"]),
        "checkpoint_sha256": meta.get("checkpoint_sha256") or "",
        **{measure: float(g[measure]) for measure in MEASURES},
        **{count: int(g[count]) for count in FP32_COUNTS},
    }


# A summary row's figures: name -> (record column, how the unit's records combine); the measures as they are
MEASURES = {
    "mean_linf": ("linf", "mean"),
    "mean_l2": ("l2", "mean"),
    "forward_passes_per_example": ("forward_passes", "mean"),
    "backward_passes_per_example": ("backward_passes", "mean"),
    "median_min_norm": ("min_norm", "median"),  # minimum-norm attacks only (NaN elsewhere)
}
UNIT_FIGURES = {"n": ("adv_top1", "size"), "top1": ("adv_top1", "mean"), "top5": ("adv_top5", "mean"),
                "eps_value": ("eps_value", "first"), **MEASURES}  # fmt: skip

# Under a reduced --precision: examples re-checked in fp32, robust as crafted but fooled in fp32, and the reverse
FP32_COUNTS = ("fp32_checked", "fp32_fooled", "fp32_rescued")

# How a figure of a model's members combines into the model's row: their mean, the examples of the
# member that has most (a partial run), the fp32 re-check's counts summed.
OVER_MEMBERS = {**dict.fromkeys(UNIT_FIGURES, "mean"), "n": "max", **dict.fromkeys(FP32_COUNTS, "sum")}


def unit_aggregates(records: pd.DataFrame) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """Per (model, eps, attack): the figures of its summary row, per member in member order."""
    fp32 = records["fp32_top1"]
    robust = records["adv_top1"].astype(bool)
    records = records.assign(
        fp32_checked=fp32.notna(), fp32_fooled=robust & (fp32 == 0), fp32_rescued=~robust & (fp32 == 1)
    )
    per_member = (
        records.groupby(["model", "eps", "attack", "member"], sort=False)
        .agg(**UNIT_FIGURES, **{c: (c, "sum") for c in FP32_COUNTS})
        .sort_index(level="member", sort_remaining=False, kind="stable")
        .to_dict("index")
    )
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for (model, eps, attack, _), figures in per_member.items():
        out.setdefault((model, eps, attack), []).append(figures)
    return out


def member_spread(members: list[dict[str, Any]], records: pd.DataFrame) -> dict[str, Any]:
    """The columns a model of several members adds: how many, the sample std (n - 1) of their top-1 and top-5
    (%), each one's value, and the 95% interval of the mean for seeds and examples together
    (``<metric>_low``, ``<metric>_high``: robeval.results.statistics, from ``records``, every member's)."""
    out: dict[str, Any] = {MEMBERS: len(members)}
    for metric, column in (("top1", "adv_top1"), ("top5", "adv_top5")):
        values = [100.0 * float(m[metric]) for m in members]
        out[metric + STD] = round(float(pd.Series(values).std(ddof=1)), 2)
        out[f"member_{metric}"] = [round(v, 2) for v in values]
        low, high = member_interval(member_matrix(records, column)[0]) if len(members) > 1 else (math.nan,) * 2
        out[f"{metric}_low"], out[f"{metric}_high"] = round(low, 2), round(high, 2)
    return out


def summarize(
    records: pd.DataFrame, config: dict[str, Any], models_meta: dict[str, dict], coverage: Coverage
) -> pd.DataFrame:
    """One row per model x eps x attack, in the run's order of each (clean first, then the attacks, then
    ``any``, then the shifted conditions, which ``any`` does not include: a corruption is no attack).
    Each row says whether it covers every batch of the run (``status``, ``batches``); ``any`` rows name
    the finished attacks they are the worst case over (``any_over``)."""
    attacks = config["attacks"]
    over = covered_attacks(records, attacks, coverage)
    full = pd.concat([records, any_attack_records(records, attacks, over)], ignore_index=True)
    if full.empty:
        return pd.DataFrame()
    groups = unit_aggregates(full)
    several = any(len(g) > 1 for g in groups.values())
    units = full.groupby(["model", "eps", "attack"], sort=False) if several else None
    models = dict.fromkeys([*model_order(config["models"]), *records["model"]])
    eps_order = [e if isinstance(e, str) else e["text"] for e in config["eps"]]
    kinds = [CLEAN, *attacks] + ([ANY] if attacks else []) + [c.name for c in run_conditions(config)]
    rows = []
    for model, eps, attack in itertools.product(models, eps_order, kinds):
        members = groups.get((model, eps, attack))
        if members is None:
            continue
        done = attack == ANY or coverage.complete(model, eps, attack)
        figures = members[0] if len(members) == 1 else pd.DataFrame(members).agg(OVER_MEMBERS).to_dict()
        rows.append(
            {
                **_row(model, eps, attack, figures, models_meta.get(model, {}), config["norm"]),
                "status": "complete" if done else "partial",
                "any_over": Names(over.get((model, eps), [])) if attack == ANY else Names(),
                "batches": ""
                if attack == ANY
                else f"{coverage.done.get((model, eps, attack), 0)}/{coverage.expected(model)}",
                **(member_spread(members, units.get_group((model, eps, attack))) if units is not None else {}),
            }
        )
    return pd.DataFrame(rows)


def run_summary(
    records: pd.DataFrame, run: dict[str, Any], config: dict[str, Any], done_units: Done, curves: pd.DataFrame
) -> pd.DataFrame:
    """One row per model x attack x eps with the run's identity: the columns of results.csv and of
    every table, for a run that just finished and for one read back from the store alike.  ``done_units``
    (batches stored per model, eps and attack) marks the rows that do not cover the run's plan, the run's
    ``status`` every row of a run that did not finish; ``curves`` (its stored points) give the curve columns."""
    plan = run.get("plan", {})
    coverage = Coverage(done_units, plan.get("batches"), plan.get("members", {}))
    summary = summarize(records, config, run.get("models", {}), coverage)
    if summary.empty:
        return summary
    add_model_columns(summary)
    found = last_tenth(curves)  # the noise test's figures (robeval.results.convergence), NaN on rows without a curve
    keys = list(zip(summary["model"], summary["eps"], summary["attack"]))
    for i, column in enumerate(("curve_robust_90", "curve_robust_end", "curve_examples")):
        summary[column] = [float(found[k][i]) if k in found else float("nan") for k in keys]
    summary["run_status"] = run.get("status", "finished")
    summary["not_run"] = not_run(summary, plan.get("units", {}))
    add_run_columns(summary, run, config)
    add_audit_columns(summary, records, config)
    add_condition_columns(summary, config)
    # The run's data as values, beside ``data`` (its name in captions: ``cifar10 (test)``, a folder's path):
    # ``source``, the --data itself, and ``split``, a published set's ("" for data without splits).  (This and
    # the condition columns come last, so that the columns of earlier exports keep their places.)
    summary["source"] = config["data"]
    split = config.get("split") or option_default("split")  # (a run stored before --split had its default)
    summary["split"] = split if config["data"] in PUBLISHED else ""
    return summary


def add_model_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """The model each row evaluates (``base_model``) and whether it is its --adaptive evaluation
    (``adaptive``), read once from the records' model key: values every reader takes as they are."""
    keys = [key_model(str(m)) for m in summary["model"]]
    summary["base_model"], summary["adaptive"] = [k[0] for k in keys], [k[1] for k in keys]
    return summary


def add_condition_columns(summary: pd.DataFrame, config: dict[str, Any]) -> None:
    """The shifted condition a row evaluates, as values: its ``corruption`` and ``severity`` (the
    run's own conditions, by the name its records give them; ``""`` and 0 on every other row)."""
    conditions = {c.name: c for c in run_conditions(config)}
    found = [conditions.get(str(a)) for a in summary["attack"]]
    summary["corruption"] = [c.corruption if c else "" for c in found]
    summary["severity"] = [c.severity if c else 0 for c in found]


def add_run_columns(summary: pd.DataFrame, run: dict[str, Any], config: dict[str, Any]) -> None:
    """What every row of a run shares (``classes``: the number of classes its labels have)."""
    settings = run.get("attack_settings") or config.get("attack_settings", {})
    v = run.get("versions") or {}
    data = run.get("data", {})
    summary["protocol"] = config["protocol"]
    summary["precision"] = crafting_precision(config)
    summary["cascade"] = bool(config.get("cascade", False)) or audited_protocol(config) is not None  # fast: its own
    summary["data"] = data.get("data", config["data"])
    summary["selection"] = example_choice(config)
    models = run.get("models", {})
    summary["classes"] = [data.get("num_classes") or models.get(m, {}).get("num_classes") for m in summary["model"]]
    summary["seed"] = config["seed"]
    summary["settings"] = [json.dumps(settings.get(a, {}), sort_keys=True) for a in summary["attack"]]
    summary["versions"] = f"robeval {v['robeval']}; torch {v['torch']}; timm {v['timm']}" if v else ""
    summary["run_id"] = run.get("run_id")
    summary["shift"] = config.get("shift") or ""
    transfer = {spec.name for spec in list_attacks() if spec.kind == "transfer"}
    summary["source_model"] = [config.get("source_model") or "" if a in transfer else "" for a in summary["attack"]]


Passes = dict[str, dict[str, dict[str, dict[str, float]]]]  # model -> eps -> attack -> forward / backward


def passes_per_image(summary: pd.DataFrame) -> Passes:
    """model -> eps -> attack (``clean`` and shift conditions too; not ``any``, whose sums are the totals)
    -> ``{"forward": f, "backward": b}``: the mean image passes through the model per example, an attack's
    including the records' own forward pass on its points.  Times the cost of one pass on some hardware,
    the run's cost there (benchmarks/estimate_full_eval.py); run.json, ``robeval run`` and the report show them."""
    out: Passes = {}
    for r in summary[summary["attack"] != ANY].itertuples(index=False):
        out.setdefault(str(r.model), {}).setdefault(str(r.eps), {})[str(r.attack)] = {
            "forward": round(float(r.forward_passes_per_example), 4),
            "backward": round(float(r.backward_passes_per_example), 4),
        }
    return out


def crafting_precision(config: dict[str, Any]) -> str:
    """The run's ``--precision``; a run stored before it existed says what its ``--amp`` did (autocast
    for crafting *and* counting)."""
    if "precision" in config:
        return str(config["precision"])
    amp = config.get("amp", "off")
    return "fp32" if amp == "off" else f"{amp} (counted in {amp}: --amp)"


def not_run(summary: pd.DataFrame, planned: dict[str, list[str]]) -> list[Names]:
    """On each model's first row at each eps: the planned units with no row there (else empty)."""
    have = summary.groupby(["model", "eps"], sort=False)["attack"].agg(set).to_dict()
    missing = {  # an audit unit has no row
        (model, eps): Names(u for u in planned.get(model, []) if u not in rows and audited_stage(u) is None)
        for (model, eps), rows in have.items()
    }
    first = ~summary.duplicated(["model", "eps"])
    return [missing[key] if f else Names() for key, f in zip(zip(summary["model"], summary["eps"]), first)]

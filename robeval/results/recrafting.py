"""Stored adversarial examples of a run crafted again: which ones (the run, models, attack, eps and
examples checked and chosen: :func:`plan_recrafting`, cheap), then crafting them through the engine
(robeval.evaluation.regenerate) and checking each regenerated record against the stored one
(:func:`recraft`).  ``robeval examples`` and the HTML report's gallery draw what this returns
(robeval.report.gallery); nothing here draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.eps import find_budget
from ..core.errors import UserError
from ..core.records import key_model
from ..data.labels import LabelSpace
from ..evaluation.config import model_order
from ..evaluation.protocols import refusal
from ..evaluation.regenerate import Check, Crafted, check, regenerate
from ..models.user_code import check_stored_code
from ..references import is_reference, split_label
from ..store import Store, existing_store
from .runs import StoredRun, load_run
from .selection import Selection, select_examples


@dataclass
class RecraftPlan:
    """Examples of a stored run checked and chosen, not yet crafted."""

    run: StoredRun
    models: list[str]
    attack: str
    eps: str
    records: pd.DataFrame  # every model's records under (attack, eps)
    selection: Selection
    options: dict[str, Any] = field(default_factory=dict)  # device, data_dir, trust_checkpoint, threads, allowed_code


@dataclass
class Recrafted:
    """The crafted examples of a :class:`RecraftPlan` and the check of each against its stored record."""

    plan: RecraftPlan
    crafted: dict[tuple[str, int], Crafted]  # (model, example) -> its images and regenerated record
    checks: list[Check]
    label_space: LabelSpace
    batches: list[int]  # the run's batches attacked again
    batch_size: int

    @property
    def examples(self) -> list[int]:
        """The chosen examples crafted for every drawn model."""
        return [e for e in self.plan.selection.examples if all((m, e) in self.crafted for m in self.plan.models)]

    @property
    def mismatches(self) -> list[Check]:
        return [c for c in self.checks if not c.equal]


def plan_recrafting(
    store: str | Path | Store,
    run_id: str,
    models: list[str] | None,
    attack: str,
    eps: str | None,
    select: str | None,
    examples: str | None,
    max_examples: int,
    **options: Any,
) -> RecraftPlan:
    """The run, models, attack, eps and examples, checked (one-line UserError otherwise); nothing is
    crafted yet.  ``models``: of the run (default every one with records under the attack), a model of
    the user's code named by its code too (``PATH.py:CALLABLE=NAME``, or ``PATH.py:CALLABLE`` where that
    is its name): the only way its code is imported; ``eps``: one of the
    run's (default its only one); ``select`` / ``examples``: robeval.results.selection's."""
    models, named_code = _named_code(models)
    options = {**options, "allowed_code": tuple(named_code)}
    with existing_store(store) as db:
        run = load_run(db, run_id)
    reason = refusal(attack, run.config)
    if reason is not None:
        raise UserError(reason)
    if attack not in run.config["attacks"]:
        raise UserError(f"run {run_id} has no attack {attack!r} (its attacks: {', '.join(run.config['attacks'])})")
    eps_text = _run_eps(run, eps)
    records = run.records[(run.records["attack"] == attack) & (run.records["eps"] == eps_text)]
    records = records[records["member"] == 0]  # a model of several checkpoints is drawn by its first
    drawn = _run_models(run, records, models, attack, eps_text)
    bases = sorted({key_model(m)[0] for m in drawn})
    check_stored_code({**run.config, "models": bases}, named_code)  # before anything is made
    selection = select_examples(records, drawn, select, examples, max_examples)
    return RecraftPlan(run, drawn, attack, eps_text, records, selection, options)


def recraft(plan: RecraftPlan) -> Recrafted:
    """Craft the plan's examples again (the engine, from their seeds: the wanted examples by stored batch,
    on as many CPU threads as the run used unless told otherwise) and check each against its record."""
    rows = plan.records[plan.records["example"].isin(plan.selection.examples)]
    batches = {int(b): sorted(set(map(int, examples))) for b, examples in rows.groupby("batch")["example"]}
    options = {k: v for k, v in plan.options.items() if v is not None}  # threads None: the run's
    crafted, label_space, batch_size = regenerate(
        plan.run.config, plan.run.info, plan.models, plan.attack, plan.eps, batches, **options
    )
    stored = plan.records.set_index(["model", "example"])
    checks = [check(c, stored.loc[(c.model, c.example)].to_dict()) for c in crafted]
    return Recrafted(plan, {(c.model, c.example): c for c in crafted}, checks, label_space, sorted(batches), batch_size)


def _named_code(models: list[str] | None) -> tuple[list[str] | None, list[str]]:
    """The models' names, and the code among them named as ``REFERENCE[=NAME]`` (robeval.references)."""
    if models is None:
        return None, []
    pairs = [split_label(m) for m in models]
    return [label or reference for reference, label in pairs], [r for r, _ in pairs if is_reference(r)]


def _run_eps(run: StoredRun, eps: str | None) -> str:
    """The run's eps named by ``eps`` (as written, or the same value), or its only one."""
    stored = list(run.config["eps"])
    if eps is None:
        if len(stored) > 1:
            raise UserError(f"run {run.run_id} has several eps ({', '.join(stored)}); choose one with --eps")
        return stored[0]
    found = find_budget(stored, eps, run.config["norm"])
    if found is None:
        raise UserError(f"run {run.run_id} has no eps {eps} (its eps: {', '.join(stored)})")
    return found


def _run_models(run: StoredRun, records: pd.DataFrame, models: list[str] | None, attack: str, eps: str) -> list[str]:
    """The models to draw: named ones of the run (default every one that has records under the attack)."""
    have = set(records["model"])
    known = [m for m in model_order(run.config["models"]) if m in have]
    for model in models or []:
        if model not in have:
            raise UserError(
                f"run {run.run_id} has no records of model {model!r} under {attack} at eps {eps} "
                f"(its models: {', '.join(known)})"
            )
    chosen = list(dict.fromkeys(models)) if models else known
    if not chosen:
        raise UserError(f"run {run.run_id} has no records under {attack} at eps {eps}")
    return chosen

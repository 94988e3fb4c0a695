"""The record schema: what a run stores per example and per convergence-curve point, in one place (units
and members: docs/store.md, What is stored).  A model of one checkpoint has member 0 only, as every run
stored before members existed reads.  Torch-free and importing nothing of robeval's: the engine, a layer
below the rest of ``robeval.results``, writes in this layout too (tests/test_layout.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

EFFICIENCY_COLUMNS = ["model", "params_M", "gflops_per_image"]  # a model's counts, stored in its run's facts

Unit = tuple[str, str, str, int, int]  # (model, eps as text, attack or condition, batch, member)
Columns = dict[str, list]  # one unit's records, column by column
UnitTimes = Iterable[tuple[Unit, float]]  # finished units, each with the seconds it took

# An audited protocol (``fast``) also stores, per audit stage, a unit named ``audit:<stage>`` (docs/store.md).
AUDIT_PREFIX = "audit:"


def audit_unit(stage: str) -> str:
    """The name of the unit holding the audit's records of ``stage``."""
    return AUDIT_PREFIX + stage


def audited_stage(unit: str) -> str | None:
    """The stage an audit unit holds (None: ``unit`` is no audit unit)."""
    return unit[len(AUDIT_PREFIX) :] if unit.startswith(AUDIT_PREFIX) else None


# column -> its SQLite type; what it holds, in which unit
RECORD_TYPES = {
    "model": "TEXT",  # the model's name in the run (``+adaptive``: its adaptive evaluation)
    "attack": "TEXT",  # the attack, ``clean``, or a shifted condition (``fog@2``)
    "eps": "TEXT",  # the budget as given (``8/255``)
    "eps_value": "REAL",  # the budget in the norm's units on [0,1] pixels (normalized units under nielsen2024)
    "batch": "INTEGER",  # the batch it was evaluated in (its examples and seeds depend only on this index)
    "example": "INTEGER",  # its index in the data set
    "label": "INTEGER",
    "clean_top1": "INTEGER",  # hits (stored 0/1, read back as bool)
    "clean_top5": "INTEGER",
    "adv_top1": "INTEGER",  # under the attack (or condition): robust when true
    "adv_top5": "INTEGER",
    "adv_pred": "INTEGER",  # the class predicted under the attack
    "linf": "REAL",  # the perturbation's size, pixels in [0,1] (NULL: no clean image to measure from)
    "l2": "REAL",
    "forward_passes": "REAL",  # model passes per example the unit spent, the records' own pass included
    "backward_passes": "REAL",
    "min_norm": "REAL",  # a minimum-norm attack's smallest fooling perturbation (0: misclassified clean, inf: none)
    "fp32_top1": "REAL",  # under a reduced --precision, the top-1 hit of the attack crafted again in fp32 (sampled)
    "member": "INTEGER",  # which of the model's checkpoints (0, 1, ...: the order they were given in; 0 for one)
}
RECORD_COLUMNS = list(RECORD_TYPES)
BOOL_COLUMNS = ("clean_top1", "clean_top5", "adv_top1", "adv_top5")
# Columns a record may leave out, with the value it then gets (NaN: not a minimum-norm attack, not re-checked).
RECORD_DEFAULTS: dict[str, Any] = {"min_norm": float("nan"), "fp32_top1": float("nan"), "member": 0}


def unit_columns(**values: Any) -> Columns:
    """One unit's records from ``values`` by column; scalars are repeated for every example."""
    n = len(values["example"])
    given = {column: values[column] if column in values else RECORD_DEFAULTS[column] for column in RECORD_COLUMNS}
    return {column: list(v) if isinstance(v, list) else [v] * n for column, v in given.items()}


@dataclass(frozen=True)
class UnitCurve:
    """A unit's convergence curve (robeval.attacks.convergence): at each of ``positions`` along the
    attack's budget, how many of the unit's ``examples`` no point it evaluated so far had fooled."""

    positions: list[int]
    robust: list[int]
    examples: int


# A curve as stored: one row per unit and point (point 0 = the attack's start, then every 1/20 of its budget)
CURVE_COLUMNS = ["model", "eps", "attack", "batch", "point", "position", "robust", "examples", "member"]
UnitCurves = Iterable[tuple[Unit, UnitCurve]]  # finished units' convergence curves


def curve_rows(unit: Unit, curve: UnitCurve) -> list[tuple]:
    """``curve`` of ``unit`` as rows of :data:`CURVE_COLUMNS`."""
    *where, member = unit
    return [(*where, j, p, r, curve.examples, member) for j, (p, r) in enumerate(zip(curve.positions, curve.robust))]


# A model evaluated again with --adaptive is stored under its name with this suffix: the record's model
# key is the one place the two are one text, and :func:`model_key` / :func:`key_model` its one codec.
ADAPTIVE_SUFFIX = "+adaptive"


def model_key(model: str, adaptive: bool = False) -> str:
    """The records' ``model`` of ``model``'s evaluation (its adaptive one: ``adaptive``)."""
    return model + ADAPTIVE_SUFFIX if adaptive else model


def key_model(key: str) -> tuple[str, bool]:
    """The model a records' ``model`` key names, and whether it is its adaptive evaluation."""
    return (key.removesuffix(ADAPTIVE_SUFFIX), True) if key.endswith(ADAPTIVE_SUFFIX) else (key, False)

"""Units of work and the records they produce: a unit is (model, eps, attack, batch); its records are
one row per example in the layout of :data:`robeval.defaults.RECORD_COLUMNS`.  What a worker learns
besides (skipped files, checks, timings, an error) travels in a :class:`BatchOutcome`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..defaults import RECORD_COLUMNS, RECORD_DEFAULTS

Unit = tuple[str, str, str, int]  # (model, eps, attack, batch)


@dataclass(frozen=True)
class UnitCurve:
    """A unit's convergence curve (robeval.attacks.convergence): at each of ``positions`` along the
    attack's budget, how many of the unit's ``examples`` no point it evaluated so far had fooled."""

    positions: list[int]
    robust: list[int]
    examples: int


# How a curve is stored and kept: one row per unit and point (robeval.results.store's table curves)
CURVE_COLUMNS = ["model", "eps", "attack", "batch", "point", "position", "robust", "examples"]


def curve_rows(unit: Unit, curve: UnitCurve) -> list[tuple]:
    """``curve`` of ``unit`` as rows of :data:`CURVE_COLUMNS`."""
    return [(*unit, j, p, r, curve.examples) for j, (p, r) in enumerate(zip(curve.positions, curve.robust))]


class Deliver(Protocol):
    def __call__(
        self, unit: Unit, seconds: float, columns: dict[str, list], n: int, curve: UnitCurve | None = None
    ) -> None: ...  # (unit, seconds, its records, images, its convergence curve)


class ModelFailure(Exception):
    """A model that cannot be evaluated (NaN/inf logits, a failed attack): it stops, the other models go on."""


def new_columns() -> dict[str, list]:
    return {c: [] for c in RECORD_COLUMNS}


def add_records(columns: dict[str, list], **values: Any) -> None:
    """Append one batch of records; scalars are repeated for every example."""
    n = len(values["example"])
    for column in RECORD_COLUMNS:
        value = values[column] if column in values else RECORD_DEFAULTS[column]
        columns[column].extend(value if isinstance(value, list) else [value] * n)


def add_clean_records(columns: dict[str, list], batch: Any, eps: Any, attack: str, forward_passes: float) -> None:
    """Records of ``batch`` as its clean pass left it (no perturbation), under the name ``attack``."""
    add_records(
        columns,
        **batch.base,
        attack=attack,
        eps=eps.text,
        eps_value=eps.value,
        adv_top1=batch.base["clean_top1"],
        adv_top5=batch.base["clean_top5"],
        adv_pred=batch.clean_logits.argmax(1).tolist(),
        linf=0.0,
        l2=0.0,
        forward_passes=forward_passes,
        backward_passes=0.0,
    )


@dataclass
class BatchOutcome:
    """What one worker learns while evaluating a model, shared with rank 0 in distributed runs."""

    skipped: list[str] = field(default_factory=list)
    checks: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    attacked: dict[str, int] = field(default_factory=dict)  # --cascade: examples each unit attacked
    oom_splits: int = 0
    error: tuple[str, str] | None = None

    def time(self, key: str, seconds: float) -> None:
        self.count(self.timings, key, seconds)

    @staticmethod
    def count(counter: dict, key: str, value: float) -> None:
        counter[key] = counter.get(key, 0) + value

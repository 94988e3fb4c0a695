"""Convergence curves of a run: robust top-1 against an attack's iterations or queries, summed over
the batches from the points each unit stored (:mod:`robeval.attacks.convergence` says what a point
counts), and the noise test behind the "attack converged" flag and checklist indicator
(docs/soundness.md, section "Did the attack converge?"): a curve still falling over the last tenth of
its budget means a longer attack would very likely report a lower number, by more than the sampling
error the table carries.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ..attacks import list_attacks
from ..attacks.registry import ATTACKS, CURVE_POINTS
from ..core.precision import PRECISIONS, curves_omitted
from ..evaluation.config import model_order
from ..store import Store, existing_store
from .findings import MIN_EXAMPLES

LAST_TENTH = CURVE_POINTS * 9 // 10  # the point at nine tenths of the budget
KEYS = ["model", "eps", "attack"]
CURVE_FRAME = [*KEYS, "point", "position", "robust", "examples", "robust_top1", "axis", "setting"]


def curve_attribute(attack: str, name: str) -> str:
    """The attack's registered ``curve_axis`` (``iterations`` or ``queries``) or ``curve_setting`` ("" where
    none, or not registered): registration data, read without importing the attack's class (or torch)."""
    return getattr(ATTACKS.get(attack), name, None) or ""


def setting_of(attack: str) -> str:
    """The setting whose value is the length of the attack's curve (``pgd.steps``, ...)."""
    name = curve_attribute(attack, "curve_setting")
    return f"{attack}.{name}" if name else ""


def summed(points: pd.DataFrame) -> pd.DataFrame:
    """Stored curve points (one row per unit and point) summed over batches: per model, eps, attack
    and point its position, examples robust and examples in all, robust top-1 (%), axis and setting."""
    if points.empty:
        return pd.DataFrame(columns=CURVE_FRAME)
    out = (
        points.groupby([*KEYS, "point"], sort=False)
        .agg(position=("position", "first"), robust=("robust", "sum"), examples=("examples", "sum"))
        .reset_index()
    )
    out["robust_top1"] = 100.0 * out["robust"] / out["examples"]
    out["axis"] = out["attack"].map(lambda attack: curve_attribute(attack, "curve_axis"))
    out["setting"] = out["attack"].map(setting_of)
    return out[CURVE_FRAME]


def in_run_order(frame: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """``frame``'s rows with the models in the run's order (the store returns them sorted by name), so
    the convergence figure gives each model the look it has in every other figure."""
    rank = {m: i for i, m in enumerate(model_order(models))}
    key = frame["model"].map(lambda m: rank.get(m, len(rank)))
    return frame.assign(_rank=key).sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)


def curves(store: Store | str | Path, run_id: str) -> pd.DataFrame:
    """The convergence curves of run ``run_id`` in ``store`` (a :class:`~robeval.store.Store`
    or its path): one row per model, eps, attack and point, columns :data:`CURVE_FRAME`; empty for a
    run without curves, a UserError for a run the store does not have."""
    with existing_store(store) as opened:
        models = opened.run(run_id)["config"].get("models", [])
        return in_run_order(summed(opened.curves(run_id)), models)


def last_tenth(points: pd.DataFrame) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """Per (model, eps, attack): examples robust at nine tenths of the budget, at its end, and in all."""
    frame = summed(points)
    start, end = (frame[frame["point"] == point].set_index(KEYS) for point in (LAST_TENTH, CURVE_POINTS))
    both = start.merge(end, left_index=True, right_index=True, suffixes=("_90", ""))
    return {r.Index: (int(r.robust_90), int(r.robust), int(r.examples)) for r in both.itertuples()}


def standard_error(robust: int, n: int) -> float:
    """Agresti and Coull's standard error (as a share) of a robust accuracy of ``robust`` of ``n``
    examples (two examples added each way: never 0, even at 0% or 100%, where the plain one is)."""
    a = (robust + 2) / (n + 4)
    return math.sqrt(a * (1 - a) / (n + 4))


def still_falling(robust_start: int, robust_end: int, n: int) -> bool:
    """Whether a curve falling from ``robust_start`` to ``robust_end`` of ``n`` examples over the last
    tenth of its budget falls by more than the noise test allows (the module docstring)."""
    fell = robust_start - robust_end
    return fell >= MIN_EXAMPLES and robust_end > 0 and fell / max(n, 1) > standard_error(robust_start, n)


def lengthen(attack: str, settings: str | None) -> str:
    """The option that lengthens ``attack``'s curve: its setting doubled (``--set pgd.steps=40``)."""
    setting = setting_of(attack)
    value = json.loads(settings if isinstance(settings, str) and settings else "{}").get(setting.partition(".")[2])
    return f"--set {setting}={2 * value}" if isinstance(value, int) else f"--set {setting}=..."


def why_no_curves(summary: pd.DataFrame) -> str:
    """Why rows of a run have no curve: its precision, or no attack that draws one."""
    precision = str(summary["precision"].iloc[0]) if "precision" in summary and len(summary) else "fp32"
    if precision in PRECISIONS and (omitted := curves_omitted(PRECISIONS[precision])):
        return omitted
    drawn = ", ".join(s.name for s in list_attacks() if s.curve_axis)
    return f"no attack with a convergence curve ({drawn}) in this run, or a run stored before curves were recorded"

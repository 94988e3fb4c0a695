"""Corruption metrics of the ImageNet-C benchmark from a run's per-condition accuracies.

Per corruption ``c`` with top-1 errors ``E(c, s)`` over severities ``s = 1..5``:

* corruption error ``CE_c = sum_s E(c, s) / sum_s E_AlexNet(c, s)``; the published AlexNet constants
  are averages over the five severities, so ``CE_c = mean_s E(c, s) / ALEXNET_ERRORS[c]``;
* mCE = the mean of ``CE_c`` over the 15 benchmark corruptions (in %);
* relative ``CE_c = sum_s (E(c, s) - E_clean) / sum_s (E_AlexNet(c, s) - E_AlexNet_clean)``, relative
  mCE their mean;
* the unnormalised mean error: the mean of ``E(c, s)`` over every condition evaluated.

mCE needs all 15 corruptions at all five severities and ImageNet images (AlexNet's errors are
ImageNet's): otherwise it is reported as not applicable, with the reason, and the unnormalised mean
error stands in (the digits demo).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .catalog import ALEXNET_CLEAN_ERROR, ALEXNET_ERRORS, COMMON, SEVERITIES, parse_condition


@dataclass
class CorruptionMetrics:
    mean_error: float  # % over every condition evaluated
    mce: float | None  # % (AlexNet-normalised); None when it does not apply
    relative_mce: float | None
    per_corruption: dict[str, float] = field(default_factory=dict)  # mean top-1 over severities, %
    note: str = ""  # why mCE does not apply


def condition_errors(rows: pd.DataFrame) -> pd.DataFrame:
    """``corruption, severity, error`` (fraction) of the summary rows that are shifted conditions."""
    parsed = [(parse_condition(a), top1) for a, top1 in zip(rows["attack"], rows["top1"])]
    data = [(c[0], c[1], 1.0 - top1 / 100.0) for c, top1 in parsed if c is not None]
    return pd.DataFrame(data, columns=["corruption", "severity", "error"])


def corruption_metrics(rows: pd.DataFrame, clean_top1: float | None, imagenet: bool) -> CorruptionMetrics | None:
    """The metrics of one model's conditions (summary rows of one eps); None if it has none."""
    errors = condition_errors(rows)
    if errors.empty:
        return None
    by_corruption = errors.groupby("corruption", sort=False)["error"]
    per_corruption = {c: round(100.0 * (1.0 - e), 2) for c, e in by_corruption.mean().items()}
    metrics = CorruptionMetrics(round(100.0 * errors["error"].mean(), 2), None, None, per_corruption)
    complete = all(set(errors[errors["corruption"] == c]["severity"]) == set(SEVERITIES) for c in COMMON)
    if not imagenet:
        metrics.note = "mCE needs ImageNet images (AlexNet's errors are ImageNet's): the mean error is unnormalised"
        return metrics
    if not complete:
        metrics.note = "mCE needs the 15 corruptions at severities 1-5: the mean error is over the conditions run"
        return metrics
    mean_error = by_corruption.mean()
    metrics.mce = round(100.0 * sum(mean_error[c] / ALEXNET_ERRORS[c] for c in COMMON) / len(COMMON), 2)
    if clean_top1 is not None:
        clean_error = 1.0 - clean_top1 / 100.0
        relative = [(mean_error[c] - clean_error) / (ALEXNET_ERRORS[c] - ALEXNET_CLEAN_ERROR) for c in COMMON]
        metrics.relative_mce = round(100.0 * sum(relative) / len(COMMON), 2)
    return metrics

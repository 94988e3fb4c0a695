"""Corruption metrics of a corruption benchmark from a run's per-condition accuracies.

Per corruption ``c`` with top-1 errors ``E(c, s)`` over severities ``s = 1..5``:

* corruption error ``CE_c = sum_s E(c, s) / sum_s E_AlexNet(c, s)``; the published AlexNet constants
  are averages over the five severities, so ``CE_c = mean_s E(c, s) / alexnet_errors[c]``;
* mCE = the mean of ``CE_c`` over the benchmark's corruptions (ImageNet-C's 15; in %);
* relative ``CE_c = sum_s (E(c, s) - E_clean) / sum_s (E_AlexNet(c, s) - E_AlexNet_clean)``, relative
  mCE their mean;
* the unnormalised mean error: the mean of ``E(c, s)`` over every condition evaluated (100 minus it is
  the mean accuracy RobustBench reports for CIFAR-10-C and ImageNet-3DCC).

mCE needs a set with published AlexNet errors (ImageNet-C's; not ImageNet-3DCC's or -C-bar's), all
of its benchmark corruptions at all five severities, and ImageNet images (AlexNet's errors are
ImageNet's): otherwise it is reported as not applicable, with the reason, and the unnormalised mean
error stands in (the digits demo, CIFAR-10-C).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .catalog import IMAGENET_C, SEVERITIES, CorruptionSet


@dataclass
class CorruptionMetrics:
    mean_error: float  # % over every condition evaluated
    mce: float | None  # % (AlexNet-normalised); None when it does not apply
    relative_mce: float | None
    per_corruption: dict[str, float] = field(default_factory=dict)  # mean top-1 over severities, %
    note: str = ""  # why mCE does not apply

    @property
    def mean_accuracy(self) -> float:
        return round(100.0 - self.mean_error, 2)


def condition_errors(rows: pd.DataFrame) -> pd.DataFrame:
    """``corruption, severity, error`` (fraction) of the summary rows that are shifted conditions (their
    ``corruption`` and ``severity`` columns: robeval.results.summary's)."""
    conditions = rows[rows["corruption"] != ""]
    errors = 1.0 - conditions["top1"].astype(float) / 100.0
    return pd.DataFrame({"corruption": conditions["corruption"], "severity": conditions["severity"], "error": errors})


def why_no_mce(errors: pd.DataFrame, imagenet: bool, corruptions: CorruptionSet) -> str:
    """Why mCE does not apply to these errors, or "" when it does."""
    if not corruptions.alexnet_errors:
        return corruptions.no_mce
    if not imagenet:
        return "mCE needs ImageNet images (AlexNet's errors are ImageNet's): the mean error is unnormalised"
    wanted = corruptions.benchmark
    if not all(set(errors[errors["corruption"] == c]["severity"]) == set(SEVERITIES) for c in wanted):
        return f"mCE needs the {len(wanted)} corruptions at severities 1-5: the mean error is over the conditions run"
    return ""


def corruption_metrics(
    rows: pd.DataFrame, clean_top1: float | None, imagenet: bool, corruptions: CorruptionSet = IMAGENET_C
) -> CorruptionMetrics | None:
    """The metrics of one model's conditions of one set (summary rows of one eps); None if it has none."""
    errors = condition_errors(rows)
    if errors.empty:
        return None
    by_corruption = errors.groupby("corruption", sort=False)["error"]
    per_corruption = {c: round(100.0 * (1.0 - e), 2) for c, e in by_corruption.mean().items()}
    metrics = CorruptionMetrics(round(100.0 * errors["error"].mean(), 2), None, None, per_corruption)
    metrics.note = why_no_mce(errors, imagenet, corruptions)
    if metrics.note:
        return metrics
    mean_error, alexnet, wanted = by_corruption.mean(), corruptions.alexnet_errors, corruptions.benchmark
    metrics.mce = round(100.0 * sum(mean_error[c] / alexnet[c] for c in wanted) / len(wanted), 2)
    if clean_top1 is not None and corruptions.alexnet_clean_error is not None:
        clean_error, alexnet_clean = 1.0 - clean_top1 / 100.0, corruptions.alexnet_clean_error
        relative = [(mean_error[c] - clean_error) / (alexnet[c] - alexnet_clean) for c in wanted]
        metrics.relative_mce = round(100.0 * sum(relative) / len(wanted), 2)
    return metrics

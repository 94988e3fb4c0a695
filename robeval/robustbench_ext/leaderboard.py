"""RobustBench's model-info JSON (``model_info/<dataset>/<threat model>/<name>.json``, what a leaderboard
submission holds) as data: its fields in order, which of them robeval can fill from a run and which the
author fills, and the reading of such a file (one line for anything that is not one).  Accuracies are
strings of percentages with 2 decimals ("53.42")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UserError

# The fields of a Linf / L2 entry, in RobustBench's order.
MODEL_INFO_FIELDS = (
    "link",
    "name",
    "authors",
    "additional_data",
    "number_forward_passes",
    "dataset",
    "venue",
    "architecture",
    "eps",
    "clean_acc",
    "reported",
    "autoattack_acc",
    "external",
    "footnote",
    "unreliable",
)
# A corruption entry's accuracy and mCE fields, by the suffix of its corruption set (3D: ImageNet-3DCC).
CORRUPTION_FIELDS = {"": ("corruptions_acc", "corruptions_mce"), "_3d": ("corruptions_acc_3d", "corruptions_mce_3d")}
# What a run cannot tell: left as empty strings for the author to fill.
AUTHOR_FIELDS = (
    "link",
    "name",
    "authors",
    "additional_data",
    "venue",
    "architecture",
    "reported",
    "external",
    "unreliable",
)
# The accuracies a published entry is compared on: metric -> the fields that may hold it (older files: "AA").
PUBLISHED_ACCURACIES = {
    "clean": ("clean_acc",),
    "autoattack": ("autoattack_acc", "AA"),
    "corruptions": ("corruptions_acc",),
    "corruptions_3d": ("corruptions_acc_3d",),
}
REQUIRED = ("clean_acc",)  # what makes a JSON a model-info file, beside one more accuracy


def percent(fraction_in_percent: float) -> str:
    """An accuracy in percent as RobustBench writes it."""
    return f"{fraction_in_percent:.2f}"


def published_accuracy(info: dict[str, Any], metric: str) -> float | None:
    """The entry's accuracy for ``metric`` (in percent), or None when it has none."""
    for key in PUBLISHED_ACCURACIES[metric]:
        value = info.get(key)
        if value not in (None, ""):
            try:
                return float(value)
            except (TypeError, ValueError):
                raise UserError(f"model-info field {key!r} holds {value!r}, not a percentage") from None
    return None


def read_model_info(path: str | Path) -> dict[str, Any]:
    """A RobustBench model-info file; one line when the file is missing, not JSON or not such a file."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"RobustBench model-info file not found: {p}")
    try:
        info = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{p} is not JSON ({exc}); expected a RobustBench model-info file") from None
    accuracies = [m for m in PUBLISHED_ACCURACIES if m != "clean"]
    if (
        not isinstance(info, dict)
        or any(k not in info for k in REQUIRED)
        or all(published_accuracy(info, m) is None for m in accuracies)
    ):
        raise UserError(
            f"{p} is not a RobustBench model-info file (it needs clean_acc and autoattack_acc or corruptions_acc)"
        )
    published_accuracy(info, "clean")  # a clean_acc that is no number: one line now
    return info


def is_model_info_path(ref: str) -> bool:
    """Whether a ``compare`` argument names a model-info file rather than a stored model."""
    return ref.lower().endswith(".json")

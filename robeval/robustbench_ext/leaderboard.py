"""RobustBench's model-info JSON (``model_info/<dataset>/<threat model>/<name>.json``, what a leaderboard
submission holds) as data: its fields in order, which of them robeval can fill from a run and which the
author fills, and the reading of such a file (one line for anything that is not one).  The values are
typed as RobustBench's own files type them (docs/robustbench.md, section "Leaderboard entries and
published numbers"); ``update_json`` writes null for what it does not know."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.json_input import load_json
from ..core.numbers import decimal_number
from .dataset_facts import BENCHMARK_DATA, THREAT_MODELS

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
# What a run cannot tell: left empty for the author to fill ("" for text, null for a boolean).
AUTHOR_FIELDS = (
    "link",
    "name",
    "authors",
    "additional_data",
    "venue",
    "architecture",
    "reported",
    "external",
)
BOOLEAN_FIELDS = ("additional_data", "unreliable")  # true / false in RobustBench's curated files
# The accuracies a published entry is compared on: metric -> the fields that may hold it (older files: "AA").
PUBLISHED_ACCURACIES = {
    "clean": ("clean_acc",),
    "autoattack": ("autoattack_acc", "AA"),
    "corruptions": ("corruptions_acc",),
    "corruptions_3d": ("corruptions_acc_3d",),
}
REQUIRED = ("clean_acc",)  # what makes a JSON a model-info file, beside one more accuracy
MODEL_INFO_BYTES = 1 << 20  # RobustBench's files are about 1 KB: anything near this is not one


def percent(accuracy_in_percent: float) -> str:
    """An accuracy in percent as RobustBench's ``update_json`` writes it: rounded to 2 decimals, then
    Python's ``str`` ("87.5", not "87.50")."""
    return str(round(float(accuracy_in_percent), 2))


def empty_entry() -> dict[str, Any]:
    """Every field of an entry in RobustBench's order, empty: "" for text, None (null) for a boolean."""
    return {field: None if field in BOOLEAN_FIELDS else "" for field in MODEL_INFO_FIELDS}


def published_accuracy(info: dict[str, Any], metric: str) -> float | None:
    """The entry's accuracy for ``metric`` (in percent), or None when it has none."""
    for key in PUBLISHED_ACCURACIES[metric]:
        value = info.get(key)
        if value not in (None, ""):
            number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            number = decimal_number(value) if isinstance(value, str) else number
            if number is None:
                raise UserError(f"model-info field {key!r} holds {value!r}, not a percentage")
            return float(number)
    return None


def read_model_info(path: str | Path) -> dict[str, Any]:
    """A RobustBench model-info file; one line when the file is missing, not JSON or not such a file."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"RobustBench model-info file not found: {p}")
    if p.stat().st_size > MODEL_INFO_BYTES:
        raise UserError(f"{p} is {p.stat().st_size:,} bytes: not a RobustBench model-info file (~1 KB); refused unread")
    with open(p, "rb") as fh:
        info = load_json(fh.read(MODEL_INFO_BYTES), f"{p} (expected a RobustBench model-info file)", MODEL_INFO_BYTES)
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


def info_benchmark(path: str | Path, info: dict[str, Any]) -> tuple[str | None, str | None]:
    """The data set and threat model a model-info file is for (None where it does not say): its
    ``dataset`` field, else its place in RobustBench's tree ``model_info/<dataset>/<threat model>/``.
    (robeval's entries of before December 2026 named the split, ``cifar10 (test)``: RobustBench's
    data sets are their test splits, so that is ``cifar10``.)"""
    parts = Path(path).parts
    threat = parts[-2] if len(parts) >= 2 and parts[-2] in THREAT_MODELS else None
    folder = parts[-3] if threat is not None and len(parts) >= 3 and parts[-3] in BENCHMARK_DATA else None
    dataset = info.get("dataset") or folder
    return (str(dataset).removesuffix(" (test)") if dataset else None), threat

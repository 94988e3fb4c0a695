"""Robustness to corruptions and distribution shift (ImageNet-C, -A, -R) in the same runs as attacks:
the benchmarks' facts (catalog), the shift kinds (kinds), the shifted datasets and the metrics."""

from .catalog import (
    ALEXNET_CLEAN_ERROR,
    ALEXNET_ERRORS,
    COMMON,
    EXTRA,
    FAMILIES,
    FAMILY_OF,
    SEVERITIES,
    class_set,
    condition_name,
    parse_condition,
    parse_corruptions,
    parse_severities,
)
from .kinds import SHIFT_KINDS, ShiftKind, get_shift, run_conditions

__all__ = [
    "ALEXNET_CLEAN_ERROR",
    "ALEXNET_ERRORS",
    "COMMON",
    "EXTRA",
    "FAMILIES",
    "FAMILY_OF",
    "SEVERITIES",
    "SHIFT_KINDS",
    "ShiftKind",
    "class_set",
    "condition_name",
    "get_shift",
    "parse_condition",
    "parse_corruptions",
    "parse_severities",
    "run_conditions",
]

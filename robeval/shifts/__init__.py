"""Robustness to corruptions and distribution shift (ImageNet-C, -3DCC, -C-bar, -A, -R, -V2, -Sketch;
CIFAR-10-C, CIFAR-100-C, CIFAR-10.1) in the same runs as attacks: the benchmarks' facts (catalog),
the shift kinds (kinds), the shifted images (condition_images: generated or read from image folders;
arrays: .npy files), the folder layouts they are checked against (folder_layouts), ImageNet-A/-R's
200-class view of a model (restricted_logits) and the metrics."""

from .catalog import (
    ALEXNET_CLEAN_ERROR,
    ALEXNET_ERRORS,
    COMMON,
    CORRUPTION_SETS,
    EXTRA,
    FAMILIES,
    FAMILY_OF,
    IMAGENET_C,
    SEVERITIES,
    CorruptionSet,
    class_set,
    condition_name,
    parse_corruptions,
    parse_severities,
)
from .kinds import SHIFT_KINDS, ShiftKind, run_conditions

__all__ = [
    "ALEXNET_CLEAN_ERROR",
    "ALEXNET_ERRORS",
    "COMMON",
    "CORRUPTION_SETS",
    "EXTRA",
    "FAMILIES",
    "FAMILY_OF",
    "IMAGENET_C",
    "SEVERITIES",
    "SHIFT_KINDS",
    "CorruptionSet",
    "ShiftKind",
    "class_set",
    "condition_name",
    "parse_corruptions",
    "parse_severities",
    "run_conditions",
]

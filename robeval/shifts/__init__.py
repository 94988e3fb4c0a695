"""Robustness to corruptions and distribution shift (ImageNet-C, -A, -R) in the same runs as attacks."""

from .catalog import (ALEXNET_CLEAN_ERROR, ALEXNET_ERRORS, COMMON, EXTRA, FAMILIES, FAMILY_OF, SEVERITIES, SHIFT_KINDS,
                      class_set, condition_name, get_shift, parse_condition, parse_corruptions,
                      parse_severities)

__all__ = ["ALEXNET_CLEAN_ERROR", "ALEXNET_ERRORS", "COMMON", "EXTRA", "FAMILIES", "FAMILY_OF", "SEVERITIES",
           "SHIFT_KINDS", "class_set", "condition_name", "get_shift", "parse_condition",
           "parse_corruptions", "parse_severities"]

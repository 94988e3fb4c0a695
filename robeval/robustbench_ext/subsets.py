"""Fixed example lists: RobustBench's 5,000 ImageNet validation images, or any list in a file.

A list names images by their path relative to the data folder (``n01440764/ILSVRC2012_val_00000293.JPEG``),
one per line.  As in RobustBench, ``--n-examples N`` takes a prefix of the list, and the examples
are evaluated in the list's order.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..data.subsets import read_list

ROBUSTBENCH_5000 = "robustbench-5000"
LISTED = "listed"  # a run's examples from a list that is not (a prefix of) RobustBench's
# RobustBench's list of 5,000 ImageNet validation images (its helper_files/imagenet_test_image_ids.txt,
# RobustBench/robustbench@78fcc9e): data, shipped here so the subset needs no robustbench package.
ROBUSTBENCH_LIST = "imagenet_test_image_ids.txt"


def robustbench_list_file() -> Path:
    """RobustBench's ImageNet list as shipped with robeval."""
    return Path(str(resources.files(__package__).joinpath("data", ROBUSTBENCH_LIST)))


def resolve_subset(subset: str | None, subset_file: str | None) -> list[str] | None:
    """The image list a run uses, or None for the class-balanced default."""
    if subset_file is not None:
        return read_list(subset_file)
    if subset is None:
        return None
    if subset != ROBUSTBENCH_5000:
        raise UserError(f"unknown --subset {subset!r}; known: {ROBUSTBENCH_5000} (or --subset-file FILE)")
    return read_list(robustbench_list_file())


@functools.cache
def _robustbench_names() -> tuple[str, ...]:
    return tuple(read_list(robustbench_list_file()))


def example_choice(config: Mapping[str, Any]) -> str:
    """How a stored run chose its examples, in one word: its ``--selection`` (balanced, first),
    ``robustbench-5000`` for RobustBench's ImageNet list or a prefix of it, ``listed`` for another list."""
    subset = config.get("subset")
    if not subset:
        return str(config.get("selection") or "balanced")
    names = _robustbench_names()
    return ROBUSTBENCH_5000 if tuple(subset) == names[: len(subset)] else LISTED

"""The published folder layouts of the shift data sets, checked before a run reads them: ImageNet-C's
tree ``ROOT/<corruption>/<severity>/<class>/``, ImageNet-V2's class-index folders, the wnid folders of
ImageNet-Sketch, and the 200 wnids of an ImageNet-A / -R copy."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UserError
from ..core.numbers import whole_number
from .catalog import Condition, class_set


def check_tree(root: Path, wanted: list[Condition], title: str) -> None:
    """Every requested ``ROOT/<corruption>/<severity>`` exists (one line naming the first missing one)."""
    for c in wanted:
        folder = root / c.corruption / str(c.severity)
        if not folder.is_dir():
            raise UserError(f"{title} folder missing: {folder} (expected ROOT/<corruption>/<severity>/<class>/...)")


def check_class_indices(classes: list[str], data: str) -> None:
    """ImageNet-V2's folders are ImageNet-1k class indices written as plain integers ``0``..``999``."""
    stray = [c for c in classes if not ((n := whole_number(c)) is not None and str(n) == c and 0 <= n < 1000)]
    if stray:
        raise UserError(
            f"data {data}: folder {stray[0]!r} is not a class index 0..999 written as a plain integer "
            f"({len(stray)} such folders); ImageNet-V2's layout is ROOT/<class index>/<image>"
        )


def check_wnids(classes: list[str], data: str, title: str) -> None:
    """Every folder of a wnid-folder copy (ImageNet-Sketch) is one of ImageNet-1k's wnids."""
    from ..data.labels import imagenet_wnids

    known = set(imagenet_wnids() or classes)
    stray = [c for c in classes if c not in known]
    if stray:
        raise UserError(
            f"data {data}: folder {stray[0]!r} is not an ImageNet-1k wnid ({len(stray)} such folders); "
            f"{title}'s layout is ROOT/<wnid>/<image>"
        )


def check_class_set(classes: list[str], shift: str, data: str) -> None:
    """The folders of an ImageNet-A/-R copy must be among that set's 200 wnids."""
    allowed = set(class_set(shift))
    stray = [c for c in classes if c not in allowed]
    if stray:
        raise UserError(
            f"data {data}: folder {stray[0]!r} is not one of {shift}'s 200 classes "
            f"({len(stray)} such folders); is this an {shift} copy?"
        )

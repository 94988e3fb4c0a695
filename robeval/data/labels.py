"""How the class folders of an image folder become class indices (ImageNet wnids, sorted folder
order, or ``--class-map FILE``: docs/datasets.md, section "Image folders"), and the check that they fit
a model: a model is evaluated only on data whose label space has exactly its number of classes (or on
a class map whose indices it has), since otherwise the labels would index classes the model does not
have, or worse, silently mean other classes.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from ..core.json_input import MAX_BYTES, load_json
from ..core.numbers import whole_number


@dataclass(frozen=True)
class LabelSpace:
    """Folder name -> class index, how many classes the indices range over, and how it was chosen."""

    mapping: dict[str, int]
    num_classes: int | None  # None for a class map: it fits any model with more classes than its largest index
    description: str

    def fits(self, model_classes: int) -> bool:
        if self.num_classes is None:
            return max(self.mapping.values()) < model_classes
        return self.num_classes == model_classes


@functools.cache
def imagenet_wnids() -> tuple[str, ...] | None:
    """The 1000 ImageNet-1k class folders (wnids) in their standard order (timm's list); read once: timm
    parses its class files on every call (tens of milliseconds)."""
    try:
        from timm.data import ImageNetInfo

        return tuple(ImageNetInfo("imagenet-1k").label_names())
    except Exception:  # older timm without the class list
        return None


def read_class_map(path: str | Path) -> dict[str, int]:
    """``FOLDER INDEX`` lines, ``FOLDER,INDEX`` lines, or a JSON object; one-line errors otherwise."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"class map file not found: {p}")
    if not p.is_file():
        raise UserError(f"class map {p} is not a file")
    if p.stat().st_size > MAX_BYTES:
        raise UserError(f"class map {p} is {p.stat().st_size:,} bytes: not a class map; refused unread")
    text = p.read_text(errors="replace")
    try:
        if text.lstrip().startswith("{"):
            raw = load_json(text, f"class map {p}")
            if not isinstance(raw, dict):
                raise ValueError("a JSON class map is an object {FOLDER: INDEX}")
            return {str(k): _index(v, p, k) for k, v in raw.items()}
        pairs = [
            line.replace(",", " ").split() for line in text.splitlines() if line.strip() and not line.startswith("#")
        ]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError("each line must be FOLDER INDEX")
        return {folder: _index(index, p, folder) for folder, index in pairs}
    except UserError:
        raise  # _index's own line (a UserError is a ValueError)
    except (ValueError, json.JSONDecodeError) as exc:
        raise UserError(
            f"class map {p} is not FOLDER INDEX lines or a JSON object ({str(exc).splitlines()[0][:100]})"
        ) from None


def _index(value: object, path: Path, folder: object) -> int:
    index = value if isinstance(value, int) and not isinstance(value, bool) else whole_number(str(value).strip())
    if index is None:
        raise UserError(f"class map {path}: the index of {folder!r} is not a whole number ({value!r})")
    if index < 0:
        raise UserError(f"class map {path}: the index of {folder!r} is negative ({index})")
    return index


def folder_label_space(classes: list[str], class_map: str | None = None) -> LabelSpace:
    """The label space of an image folder whose class folders are ``classes``."""
    if class_map is not None:
        mapping = read_class_map(class_map)
        missing = [c for c in classes if c not in mapping]
        if missing:
            raise UserError(
                f"class map {class_map} does not name folder {missing[0]!r} "
                f"({len(missing)} of {len(classes)} folders unnamed)"
            )
        return LabelSpace({c: mapping[c] for c in classes}, None, f"class map {class_map}")
    wnids = imagenet_wnids()
    if wnids is not None and classes and all(c in wnids for c in classes):
        position = {w: i for i, w in enumerate(wnids)}
        return LabelSpace({c: position[c] for c in classes}, 1000, "ImageNet-1k wnid folders (1000 classes)")
    return LabelSpace(
        {c: i for i, c in enumerate(classes)}, len(classes), f"sorted folder order ({len(classes)} classes)"
    )


def check_classes(space: LabelSpace, data: str, model: str, model_classes: int) -> None:
    """A one-line error, before any work, when the data's labels do not index the model's classes."""
    if space.fits(model_classes):
        return
    if space.num_classes is None:
        raise UserError(
            f"{space.description} names class {max(space.mapping.values())} but model {model} has "
            f"{model_classes} classes (0..{model_classes - 1})"
        )
    what = f"{space.num_classes} classes"
    raise UserError(
        f"data {data} has labels of {what} ({space.description}) but model {model} has "
        f"{model_classes} classes; pass --class-map FILE (lines FOLDER INDEX) to say which model "
        f"class each folder is"
    )

"""The data a run names: ``digits`` (embedded) or an image folder."""

from __future__ import annotations

from ..errors import UserError
from .digits import DIGITS, load_digits_data
from .examples import EvalData, ImageSpec
from .folders import load_folder_data


def load_data(
    data: str, meta: ImageSpec, n_examples: int | None, subset: list[str] | None = None, class_map: str | None = None
) -> EvalData:
    if data == DIGITS:
        if subset is not None or class_map is not None:
            raise UserError("--subset / --subset-file / --class-map apply to an image folder, not to the digits data")
        return load_digits_data(n_examples)
    return load_folder_data(data, meta, n_examples, subset, class_map)

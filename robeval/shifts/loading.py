"""The data of a shift run: which examples, and how each condition's images are made or found."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import UserError
from ..robustbench_ext.data import EvalData, load_data, load_folder_data
from .catalog import get_shift
from .datasets import Condition, CorruptedImages, TreeImages, check_class_set, check_tree, config_conditions


def load_shift_data(config, meta) -> EvalData:
    """The run's examples for ``config.shift``: the clean data (corruptions, ImageNet-A/-R), or the
    first condition folder of an ImageNet-C tree (its file names are every condition's)."""
    kind = get_shift(config.shift)
    if not kind.tree:
        data = load_data(config.data, meta, config.n_examples, config.subset, config.class_map)
        if kind.classes:
            check_class_set(list(data.dataset.classes), kind.classes, config.data)
        return data
    root = Path(config.data)
    if not root.is_dir():
        raise UserError(f"ImageNet-C folder not found: {root}")
    wanted = config_conditions(config)
    check_tree(root, wanted)
    first = root / wanted[0].corruption / str(wanted[0].severity)
    # ImageNet-C images are the 224 x 224 centre crops already: resize to the model's size, no further crop
    data = load_folder_data(first, replace(meta, crop_pct=1.0), config.n_examples, config.subset, config.class_map)
    return replace(data, name=f"{root.resolve()} (ImageNet-C)", crop_pct=1.0)


def condition_dataset(data: EvalData, condition: Condition, config):
    """The dataset of ``condition`` over ``data``'s examples (``data`` already read for the model)."""
    if get_shift(config.shift).tree:
        return TreeImages(data.dataset, data.dataset.folder.root, config.data, condition)
    return CorruptedImages(data.dataset, condition, config.seed)
